//go:build unix

package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/outposthq/outpost/controlplane/client"
)

// errDisconnect makes a reader drop its events stream on purpose.
var errDisconnect = errors.New("reader disconnects")

// streamReader reads a process's events into a hash, resuming after every
// broken stream from the last event it saw.
type streamReader struct {
	t        *testing.T
	target   *client.Target
	id       string
	sum      hash.Hash
	n        int64
	last     uint64
	exitCode int
	dropped  int64
	closed   bool
}

func newStreamReader(t *testing.T, target *client.Target, id string) *streamReader {
	return &streamReader{t: t, target: target, id: id, sum: sha256.New()}
}

// read follows the stream until closed, or until stopAt bytes were read
// (then it disconnects); stream errors are returned.
func (r *streamReader) read(ctx context.Context, stopAt int64) error {
	return r.target.Events(ctx, r.id, r.last, func(ev client.ProcessEvent) error {
		if ev.Seq <= r.last {
			return fmt.Errorf("event %d again (last %d)", ev.Seq, r.last)
		}
		r.last = ev.Seq
		switch ev.Kind {
		case client.EventOutput:
			r.sum.Write(ev.Chunk.Data)
			r.n += int64(len(ev.Chunk.Data))
			r.dropped += ev.Chunk.Dropped
		case client.EventExit:
			r.exitCode = ev.Exit.ExitCode
		case client.EventClosed:
			r.closed = true
		}
		if stopAt > 0 && r.n >= stopAt && !r.closed {
			return errDisconnect
		}
		return nil
	})
}

// toClose reads until closed, resuming through broken streams.
func (r *streamReader) toClose(ctx context.Context) {
	r.t.Helper()
	for !r.closed {
		err := r.read(ctx, 0)
		if err != nil && ctx.Err() != nil {
			r.t.Fatalf("events of %s: %v (read %d bytes)", r.id, err, r.n)
		}
	}
}

// localSum is the sha256 and size of what argv prints here.
func localSum(t *testing.T, dir string, argv ...string) ([]byte, int64) {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v: %v", argv, err)
	}
	sum := sha256.Sum256(out)
	return sum[:], int64(len(out))
}

func TestProcessFastProducerEveryByte(t *testing.T) {
	e := newAgentEnv(t)
	big := make([]byte, 96<<20)
	if _, err := rand.Read(big); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.root, "big"), big, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, argv := range [][]string{{"seq", "1", "5000000"}, {"cat", "big"}} {
		t.Run(argv[0], func(t *testing.T) {
			want, size := localSum(t, e.root, argv...)
			st, err := e.target.StartProcess(ctx(t), client.StartProcessRequest{Argv: argv})
			if err != nil {
				t.Fatal(err)
			}
			r := newStreamReader(t, e.target, st.ID)
			r.toClose(ctx(t))
			if r.n != size || !bytes.Equal(r.sum.Sum(nil), want) || r.dropped != 0 || r.exitCode != 0 {
				t.Fatalf("got %d bytes (dropped %d, exit %d), sha256 match %v; want %d bytes", r.n, r.dropped, r.exitCode, bytes.Equal(r.sum.Sum(nil), want), size)
			}
		})
	}
}

func TestProcessResumeAfterDisconnect(t *testing.T) {
	e := newAgentEnv(t)
	argv := []string{"seq", "1", "3000000"}
	want, size := localSum(t, e.root, argv...)
	st, err := e.target.StartProcess(ctx(t), client.StartProcessRequest{Argv: argv})
	if err != nil {
		t.Fatal(err)
	}
	r := newStreamReader(t, e.target, st.ID)
	// Drop the stream three times mid-way, each time resuming from the
	// last seq seen.
	for i, stop := range []int64{1 << 20, 5 << 20, 12 << 20} {
		if err := r.read(ctx(t), stop); !errors.Is(err, errDisconnect) {
			t.Fatalf("read %d: %v", i, err)
		}
	}
	r.toClose(ctx(t))
	if r.n != size || !bytes.Equal(r.sum.Sum(nil), want) || r.dropped != 0 {
		t.Fatalf("got %d bytes (dropped %d), sha256 match %v; want %d bytes once each", r.n, r.dropped, bytes.Equal(r.sum.Sum(nil), want), size)
	}
}

func TestProcessSurvivesNATSRestart(t *testing.T) {
	e := newAgentEnv(t)
	// About 33 MB: more than the agent's flow window, so the process is
	// still running (waiting for its reader) while NATS is down.
	argv := []string{"seq", "1", "4500000"}
	want, size := localSum(t, e.root, argv...)
	st, err := e.target.StartProcess(ctx(t), client.StartProcessRequest{Argv: argv})
	if err != nil {
		t.Fatal(err)
	}
	r := newStreamReader(t, e.target, st.ID)
	if err := r.read(ctx(t), 2<<20); !errors.Is(err, errDisconnect) {
		t.Fatalf("first read: %v", err)
	}
	// The control plane embeds the NATS server: restarting it restarts NATS.
	e.cp.restart()
	e.cp.waitStatus(e.ws, e.id, "online")
	p, err := e.target.GetProcess(ctx(t), st.ID)
	if err != nil || p.PID != st.PID {
		t.Fatalf("process after the restart: %+v, %v", p, err)
	}
	r.toClose(ctx(t))
	if r.n != size || !bytes.Equal(r.sum.Sum(nil), want) || r.dropped != 0 {
		t.Fatalf("got %d bytes (dropped %d), sha256 match %v; want %d bytes once each", r.n, r.dropped, bytes.Equal(r.sum.Sum(nil), want), size)
	}
}

func TestProcessWithoutReaderKeepsRunning(t *testing.T) {
	e := newAgentEnv(t)
	// 96 MiB, three times the agent's buffer, and nobody reads: a detached
	// process never waits for a reader. (An attached one waits for the
	// reader's grace, 30 s; agent/proc tests it with a short grace.)
	const total = 96 << 20
	st, err := e.target.StartProcess(ctx(t), client.StartProcessRequest{
		Command: fmt.Sprintf("head -c %d /dev/zero; echo done >&2", total), Detached: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 90*time.Second, "process closed", func() error {
		p, err := e.target.GetProcess(ctx(t), st.ID)
		if err != nil {
			return errStop{err}
		}
		if !p.Closed {
			return fmt.Errorf("still running")
		}
		return nil
	})
	out, err := e.target.ReadOutput(ctx(t), st.ID, 0, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if out.Dropped == 0 || out.Dropped >= total || len(out.Chunks) == 0 || out.Chunks[0].Seq < 2 {
		t.Fatalf("dropped %d, %d chunks: want a reported gap before the first kept chunk", out.Dropped, len(out.Chunks))
	}
	r := newStreamReader(t, e.target, st.ID)
	r.last = out.Chunks[0].Seq - 1
	r.toClose(ctx(t))
	if r.n+out.Dropped != total+int64(len("done\n")) || r.dropped != 0 {
		t.Fatalf("kept %d + dropped %d (then %d) != %d", r.n, out.Dropped, r.dropped, total+5)
	}
}

func TestProcessGroupEnds(t *testing.T) {
	e := newAgentEnv(t)
	tests := []struct {
		name string
		req  client.StartProcessRequest
		end  func(id string)
	}{
		{"terminate", client.StartProcessRequest{ID: "term", Command: "sleep 600 & echo $! > term.pid; wait"}, func(id string) {
			if was, err := e.target.Terminate(ctx(t), id); !was || err != nil {
				t.Fatalf("terminate: %v %v", was, err)
			}
		}},
		{"timeout", client.StartProcessRequest{ID: "tmo", Command: "sleep 600 & echo $! > tmo.pid; wait", TimeoutMs: 500, TTY: true}, func(string) {}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := e.target.StartProcess(ctx(t), tt.req); err != nil {
				t.Fatal(err)
			}
			child := readPidFile(t, filepath.Join(e.root, tt.req.ID+".pid"))
			tt.end(tt.req.ID)
			r := newStreamReader(t, e.target, tt.req.ID)
			r.toClose(ctx(t))
			waitGone(t, child)
		})
	}
	t.Run("agent shutdown", func(t *testing.T) {
		if _, err := e.target.StartProcess(ctx(t), client.StartProcessRequest{ID: "bye", Command: "sleep 600 & echo $! > bye.pid; wait", Detached: true}); err != nil {
			t.Fatal(err)
		}
		child := readPidFile(t, filepath.Join(e.root, "bye.pid"))
		e.agent.stop()
		waitGone(t, child)
	})
}

func readPidFile(t *testing.T, path string) int {
	t.Helper()
	var pid int
	waitFor(t, statusTimeout, "pid file "+path, func() error {
		b, err := os.ReadFile(path)
		if err != nil || !bytes.HasSuffix(b, []byte("\n")) {
			return fmt.Errorf("not yet")
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err
	})
	return pid
}

// waitGone waits until pid no longer exists (or is a zombie).
func waitGone(t *testing.T, pid int) {
	t.Helper()
	waitFor(t, statusTimeout, "process "+strconv.Itoa(pid)+" gone", func() error {
		if err := syscall.Kill(pid, 0); err != nil {
			return nil
		}
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if f := strings.Fields(string(b)); len(f) > 2 && f[2] == "Z" {
			return nil
		}
		return fmt.Errorf("alive")
	})
}

// cliEnv is the environment the outpost CLI needs to reach e.
func (e *agentEnv) cliEnv() []string {
	return append(os.Environ(), "OUTPOST_URL="+e.cp.url, "OUTPOST_TOKEN="+adminToken,
		"OUTPOST_WORKSPACE="+e.ws, "OUTPOST_AGENT="+e.id)
}

func TestExecCLIStreams(t *testing.T) {
	e := newAgentEnv(t)
	tests := []struct {
		name             string
		args             []string
		stdin            string
		wantOut, wantErr string
		wantExit         int
	}{
		{"streams and exit status", []string{"--", "sh", "-c", "echo out; echo err >&2; exit 5"}, "", "out\n", "err\n", 5},
		{"stdin forwarded", []string{"--", "cat"}, "from local stdin\n", "from local stdin\n", "", 0},
		{"timeout", []string{"--timeout", "300", "--", "sleep", "30"}, "", "", "outpost exec: timed out\n", 124},
		{"buffered", []string{"--buffered", "--", "sh", "-c", "echo out; exit 2"}, "", "out\n", "", 2},
		{"-t without terminal", []string{"-t", "--", "sh", "-c", "tty; exit 7"}, "", "not a tty", "Pseudo-terminal will not be allocated because stdin is not a terminal.\n", 7},
		{"-tt forces a terminal", []string{"-tt", "--", "sh", "-c", "tty; exit 7"}, "", "/dev/pts/", "", 7},
		{"-t -t forces a terminal", []string{"-t", "-t", "--", "sh", "-c", "tty; exit 7"}, "", "/dev/pts/", "", 7},
		{"-e sets the environment", []string{"-e", "A=1", "-e", "B=x y", "--", "sh", "-c", `echo "$A|$B"`}, "", "1|x y\n", "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := exec.Command(outpostBin, append([]string{"exec"}, tt.args...)...)
			cmd.Env = e.cliEnv()
			cmd.Stdin = strings.NewReader(tt.stdin)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			code := 0
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tt.wantExit || !strings.HasPrefix(stdout.String(), tt.wantOut) || stderr.String() != tt.wantErr {
				t.Fatalf("exit %d stdout %q stderr %q; want %d %q %q", code, stdout.String(), stderr.String(), tt.wantExit, tt.wantOut, tt.wantErr)
			}
		})
	}
}

// TestExecAttachOwnFailures: Outpost's own failures in exec and attach
// exit 255 with the reason on stderr, as ssh's do; the remote status is
// never 255 by accident of ours.
func TestExecAttachOwnFailures(t *testing.T) {
	e := newAgentEnv(t)
	tests := []struct {
		name    string
		args    []string
		env     []string
		wantErr string
	}{
		{"unknown agent", []string{"exec", "--agent", "nosuch", "--", "true"}, nil, "outpost exec: "},
		{"bad token", []string{"exec", "--", "true"}, []string{"OUTPOST_TOKEN=opk_wrong-token-0123456789abcdef0123"}, "outpost exec: "},
		{"attach to an unknown process", []string{"attach", "nosuch"}, nil, "outpost attach: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := exec.Command(outpostBin, tt.args...)
			cmd.Env = append(e.cliEnv(), tt.env...)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 255 || !strings.HasPrefix(stderr.String(), tt.wantErr) {
				t.Fatalf("%v: %v, stderr %q; want exit 255 and %q...", tt.args, err, stderr.String(), tt.wantErr)
			}
		})
	}
}

func TestExecCLIInteractiveTTY(t *testing.T) {
	e := newAgentEnv(t)
	cmd := exec.Command(outpostBin, "exec", "-t", "--", "sh")
	cmd.Env = append(e.cliEnv(), "PS1=$ ")
	local, err := pty.StartWithSize(cmd, &pty.Winsize{Cols: 91, Rows: 31})
	if err != nil {
		t.Fatal(err)
	}
	defer local.Close()
	out := &syncBuffer{}
	go func() { _, _ = io.Copy(out, local) }() // ends when local closes
	expect := func(want string) {
		t.Helper()
		waitFor(t, statusTimeout, "terminal shows "+strconv.Quote(want), func() error {
			if !strings.Contains(out.String(), want) {
				return fmt.Errorf("terminal so far: %q", out.String())
			}
			return nil
		})
	}
	type1 := func(s string) {
		t.Helper()
		if _, err := local.Write([]byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	type1("stty size; echo size-$((6*7))\r")
	expect("31 91")
	expect("size-42")
	// A resize of the local terminal reaches the remote one.
	if err := pty.Setsize(local, &pty.Winsize{Cols: 120, Rows: 40}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, statusTimeout, "the remote terminal resized", func() error {
		type1("stty size\r")
		deadline := time.Now().Add(time.Second)
		for time.Now().Before(deadline) {
			if strings.Contains(out.String(), "40 120") {
				return nil
			}
			time.Sleep(pollEvery)
		}
		return fmt.Errorf("terminal so far: %q", out.String())
	})
	// Ctrl-C interrupts the remote foreground command, not the session.
	type1("sh -c 'echo sleep-$((1+1)); exec sleep 600'\r")
	expect("sleep-2")
	type1("\x03")
	waitFor(t, statusTimeout, "the remote command interrupted", func() error {
		// A line typed while the interrupt is still being handled may be
		// flushed with it: type it again until it ran.
		type1("echo after-$?\r")
		deadline := time.Now().Add(time.Second)
		for time.Now().Before(deadline) {
			if strings.Contains(out.String(), "after-130") {
				return nil
			}
			time.Sleep(pollEvery)
		}
		return fmt.Errorf("terminal so far: %q", out.String())
	})
	type1("exit 3\r")
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Fatalf("outpost exec -t: %v, want exit status 3; terminal:\n%s", err, out.String())
	}
}

// syncBuffer is a bytes.Buffer safe for one writer and many readers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
