//go:build unix

package proc

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/outposthq/outpost/wire"
)

// generousWait bounds waits for a process in these tests.
const generousWait = 60 * time.Second

// transcript is everything a reader saw of one process.
type transcript struct {
	streams  map[string]*bytes.Buffer
	exitSeq  uint64
	exitCode int
	closed   uint64
	lastSeq  uint64
	dropped  int64
	reads    int
}

func (tr *transcript) text(s string) string {
	if b := tr.streams[s]; b != nil {
		return b.String()
	}
	return ""
}

// readToClose reads process id from cursor after until closed, checking the
// invariants every reader relies on: seqs grow, exit and closed come once,
// nothing follows closed.
func readToClose(t testing.TB, m *Manager, id string, after uint64, maxBytes int) *transcript {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), generousWait)
	defer cancel()
	tr := &transcript{streams: map[string]*bytes.Buffer{}, lastSeq: after}
	for ctx.Err() == nil {
		res, err := m.Read(ctx, id, tr.lastSeq, maxBytes, 5*time.Second)
		if err != nil {
			t.Fatalf("read %s after %d: %v", id, tr.lastSeq, err)
		}
		tr.reads++
		tr.dropped += res.Dropped
		for _, c := range res.Chunks {
			if c.Seq <= tr.lastSeq {
				t.Fatalf("chunk seq %d after cursor %d", c.Seq, tr.lastSeq)
			}
			if tr.closed != 0 {
				t.Fatalf("chunk %d after closed %d", c.Seq, tr.closed)
			}
			if tr.streams[c.Stream] == nil {
				tr.streams[c.Stream] = &bytes.Buffer{}
			}
			tr.streams[c.Stream].Write(c.Data)
			tr.lastSeq = c.Seq
		}
		if res.ExitSeq != 0 {
			tr.exitSeq, tr.exitCode = res.ExitSeq, res.ExitCode
		}
		if res.NextSeq < tr.lastSeq {
			t.Fatalf("nextSeq %d behind last chunk %d", res.NextSeq, tr.lastSeq)
		}
		tr.lastSeq = res.NextSeq
		if res.ClosedSeq != 0 {
			tr.closed = res.ClosedSeq
			if res.ClosedSeq != res.NextSeq {
				t.Fatalf("closed seq %d is not the last (%d)", res.ClosedSeq, res.NextSeq)
			}
			if tr.exitSeq == 0 || tr.exitSeq >= tr.closed {
				t.Fatalf("exit seq %d, closed seq %d: exit must come before closed", tr.exitSeq, tr.closed)
			}
			return tr
		}
	}
	t.Fatalf("process %s did not close", id)
	return nil
}

func TestProcessOutputExitClosed(t *testing.T) {
	tests := []struct {
		name       string
		req        StartRequest
		wantStream map[string]string
		wantExit   int
	}{
		{"pipes", StartRequest{Command: "echo out; echo err >&2; exit 3"},
			map[string]string{"stdout": "out\n", "stderr": "err\n"}, 3},
		{"tty", StartRequest{Command: "echo out; echo err >&2; exit 4", TTY: true},
			map[string]string{"pty": "out\r\nerr\r\n"}, 4},
		{"argv", StartRequest{Argv: []string{"printf", "%s", "a b"}},
			map[string]string{"stdout": "a b"}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, _ := newTestManager(t)
			id := start(t, m, tt.req)
			tr := readToClose(t, m, id, 0, 0)
			for s, want := range tt.wantStream {
				if got := tr.text(s); got != want {
					t.Errorf("%s = %q, want %q", s, got, want)
				}
			}
			if tr.exitCode != tt.wantExit {
				t.Errorf("exit code %d, want %d", tr.exitCode, tt.wantExit)
			}
			info, err := m.Get(id)
			if err != nil {
				t.Fatal(err)
			}
			if info.Running || info.ExitCode == nil || *info.ExitCode != tt.wantExit || !info.Closed {
				t.Errorf("info = %+v, want exited %d and closed", info, tt.wantExit)
			}
			// The exit code stays readable for a reader that missed it.
			res, err := m.Read(context.Background(), id, tr.closed, 0, 0)
			if err != nil || res.ExitSeq != tr.exitSeq || res.ExitCode != tt.wantExit || len(res.Chunks) != 0 {
				t.Errorf("read after closed = %+v, %v", res, err)
			}
		})
	}
}

func TestProcessSameIDOneWins(t *testing.T) {
	m, _ := newTestManager(t)
	const n = 8
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _, errs[i] = m.Start(StartRequest{ID: "same", Argv: []string{"true"}})
		}()
	}
	wg.Wait()
	wins := 0
	for _, err := range errs {
		switch {
		case err == nil:
			wins++
		default:
			wantError(t, err, wire.CodeConflict, wire.ReasonAlreadyExists)
		}
	}
	if wins != 1 {
		t.Fatalf("%d starts won, want exactly 1", wins)
	}
	readToClose(t, m, "same", 0, 0)
}

func TestProcessLateOutputBeforeClosed(t *testing.T) {
	m, _ := newTestManager(t)
	// The leader exits at once; its child keeps the pipe and writes later.
	id := start(t, m, StartRequest{Command: "(sleep 0.2; echo late) & echo early"})
	tr := readToClose(t, m, id, 0, 0)
	if got := tr.text("stdout"); got != "early\nlate\n" {
		t.Fatalf("stdout = %q, want early and late", got)
	}
}

func TestProcessStdin(t *testing.T) {
	for _, tty := range []bool{false, true} {
		t.Run(fmt.Sprintf("tty=%v", tty), func(t *testing.T) {
			m, _ := newTestManager(t)
			req := StartRequest{Argv: []string{"cat"}, Stdin: true, TTY: tty}
			if tty {
				// No echo, so the output is what cat wrote.
				req = StartRequest{Command: "stty -echo; echo ready; exec cat", TTY: true}
			}
			id := start(t, m, req)
			ctx := context.Background()
			if tty {
				waitOutput(t, m, id, "ready")
			}
			if err := m.Write(ctx, id, "w1", []byte("one\n"), false); err != nil {
				t.Fatal(err)
			}
			if err := m.Write(ctx, id, "w1", []byte("one\n"), false); err != nil {
				t.Fatalf("repeated write id: %v", err)
			}
			if err := m.Write(ctx, id, "w2", []byte("two\n"), true); err != nil {
				t.Fatal(err)
			}
			tr := readToClose(t, m, id, 0, 0)
			got := tr.text("stdout")
			if tty {
				got = strings.TrimPrefix(strings.ReplaceAll(tr.text("pty"), "\r\n", "\n"), "ready\n")
			}
			if got != "one\ntwo\n" {
				t.Fatalf("output = %q, want one and two once each", got)
			}
			if tr.exitCode != 0 {
				t.Fatalf("cat exit %d: eof did not end it", tr.exitCode)
			}
			wantError(t, m.Write(ctx, id, "w3", []byte("x"), false), wire.CodeConflict, wire.ReasonNotRunning)
		})
	}
}

// waitOutput reads process id until its output contains want.
func waitOutput(t testing.TB, m *Manager, id, want string) {
	t.Helper()
	deadline := time.Now().Add(generousWait)
	var seen bytes.Buffer
	var after uint64
	for time.Now().Before(deadline) {
		res, err := m.Read(context.Background(), id, after, 0, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range res.Chunks {
			seen.Write(c.Data)
		}
		after = res.NextSeq
		if strings.Contains(seen.String(), want) {
			return
		}
		if res.ClosedSeq != 0 {
			break
		}
	}
	t.Fatalf("output %q does not contain %q", seen.String(), want)
}

func TestProcessTTYAndResize(t *testing.T) {
	m, _ := newTestManager(t)
	id := start(t, m, StartRequest{Command: "stty -echo; tty; stty size; read x; stty size", TTY: true, Cols: 100, Rows: 30})
	waitOutput(t, m, id, "30 100")
	if err := m.Resize(id, 132, 50); err != nil {
		t.Fatal(err)
	}
	if err := m.Write(context.Background(), id, "", []byte("go\n"), false); err != nil {
		t.Fatal(err)
	}
	tr := readToClose(t, m, id, 0, 0)
	out := tr.text("pty")
	if !strings.Contains(out, "/dev/pts/") && !strings.Contains(out, "/dev/tty") {
		t.Errorf("tty printed %q, want a terminal device", out)
	}
	if !strings.Contains(out, "50 132") {
		t.Errorf("output %q lacks the new size 50 132", out)
	}
	wantError(t, m.Resize(id, 80, 24), wire.CodeConflict, wire.ReasonNotRunning)

	pipe := start(t, m, StartRequest{Argv: []string{"true"}})
	wantError(t, m.Resize(pipe, 80, 24), wire.CodeConflict, wire.ReasonNotATTY)
	readToClose(t, m, pipe, 0, 0)
}

func TestProcessSignals(t *testing.T) {
	m, dir := newTestManager(t)
	pidFile := filepath.Join(dir, "child.pid")
	id := start(t, m, StartRequest{Command: "sleep 600 & echo $! > child.pid; wait"})
	child := readPid(t, pidFile)
	for _, sig := range []string{"STOP", "CONT", "SEGV", ""} {
		wantError(t, m.Signal(id, sig), wire.CodeInvalidArgument, "")
	}
	if err := m.Signal(id, "USR1"); err != nil { // kills sh and sleep (default action)
		t.Fatal(err)
	}
	tr := readToClose(t, m, id, 0, 0)
	if tr.exitCode != 128+10 {
		t.Errorf("exit code %d, want 138 (USR1)", tr.exitCode)
	}
	wantDead(t, child)
	wantError(t, m.Signal(id, "TERM"), wire.CodeConflict, wire.ReasonNotRunning)
	if was, err := m.Terminate(id); was || err != nil {
		t.Errorf("terminate after exit = %v, %v; want false, nil", was, err)
	}
	wantError(t, m.Signal("nope", "TERM"), wire.CodeNotFound, "")
}

func TestProcessTerminateAndTimeoutKillGroup(t *testing.T) {
	tests := []struct {
		name     string
		req      StartRequest
		term     bool
		wantExit int
	}{
		// The leader ignores TERM: KILL after the grace ends it.
		{"terminate", StartRequest{Command: "trap '' TERM; sleep 600 & echo $! > child.pid; wait; wait"}, true, 128 + 9},
		{"timeout", StartRequest{Command: "sleep 600 & echo $! > child.pid; wait", Timeout: 300 * time.Millisecond}, false, TimeoutExitCode},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			m, err := NewManager(Config{Root: root, TermGrace: 300 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { m.Close() })
			id := start(t, m, tt.req)
			child := readPid(t, filepath.Join(root, "child.pid"))
			if tt.term {
				if was, err := m.Terminate(id); !was || err != nil {
					t.Fatalf("terminate = %v, %v", was, err)
				}
			}
			tr := readToClose(t, m, id, 0, 0)
			if tr.exitCode != tt.wantExit {
				t.Errorf("exit %d, want %d", tr.exitCode, tt.wantExit)
			}
			wantDead(t, child)
		})
	}
}

func TestProcessAttachedReaderGetsEveryByte(t *testing.T) {
	m, _ := newTestManager(t)
	want := sha256.New()
	cmd := exec.Command("seq", "1", "2000000")
	cmd.Stdout = want
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	id := start(t, m, StartRequest{Argv: []string{"seq", "1", "2000000"}})
	got := sha256.New()
	ctx := context.Background()
	var after uint64
	for {
		res, err := m.Read(ctx, id, after, 256<<10, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if res.Dropped != 0 {
			t.Fatalf("attached reader saw %d bytes dropped", res.Dropped)
		}
		for _, c := range res.Chunks {
			got.Write(c.Data)
		}
		after = res.NextSeq
		if res.ClosedSeq != 0 {
			break
		}
		// A slow reader: the producer must wait, not lose output.
		time.Sleep(time.Millisecond)
	}
	if !bytes.Equal(got.Sum(nil), want.Sum(nil)) {
		t.Fatal("sha256 of the output differs from seq's")
	}
}

func TestProcessUnreadOutputIsBoundedAndGapReported(t *testing.T) {
	root := t.TempDir()
	m, err := NewManager(Config{Root: root, BufferBytes: 1 << 20, ReaderGrace: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	for _, detached := range []bool{true, false} {
		t.Run(fmt.Sprintf("detached=%v", detached), func(t *testing.T) {
			// 8 MiB with nobody reading: the process must not block.
			id := start(t, m, StartRequest{Command: "head -c 8388608 /dev/zero; echo done >&2", Detached: detached})
			ctx, cancel := context.WithTimeout(context.Background(), generousWait)
			defer cancel()
			info, err := m.Wait(ctx, id)
			if err != nil || *info.ExitCode != 0 {
				t.Fatalf("wait = %+v, %v", info, err)
			}
			tr := readToClose(t, m, id, 0, 0)
			kept := int64(len(tr.text("stdout")))
			if kept > 1<<20 || kept == 0 {
				t.Errorf("kept %d bytes, want 1..%d", kept, 1<<20)
			}
			if tr.dropped+kept != 8<<20 {
				t.Errorf("dropped %d + kept %d != %d", tr.dropped, kept, 8<<20)
			}
			if tr.text("stderr") != "done\n" {
				t.Errorf("stderr %q", tr.text("stderr"))
			}
		})
	}
}

func TestProcessReadWaitsAndWakes(t *testing.T) {
	m, _ := newTestManager(t)
	id := start(t, m, StartRequest{Argv: []string{"cat"}, Stdin: true})
	ctx := context.Background()
	got := make(chan ReadResult, 1)
	go func() {
		res, err := m.Read(ctx, id, 0, 0, 50*time.Second)
		if err != nil {
			res.Dropped = -1
		}
		got <- res
	}()
	if err := m.Write(ctx, id, "a", []byte("x"), false); err != nil {
		t.Fatal(err)
	}
	select {
	case res := <-got:
		if len(res.Chunks) != 1 || string(res.Chunks[0].Data) != "x" {
			t.Fatalf("read = %+v", res)
		}
	case <-time.After(generousWait):
		t.Fatal("read did not return for new output")
	}
	if _, err := m.Read(ctx, id, 99, 0, 0); err == nil {
		t.Fatal("read beyond the last event succeeded")
	}
	if err := m.Write(ctx, id, "b", nil, true); err != nil {
		t.Fatal(err)
	}
	readToClose(t, m, id, 0, 0)
}

func TestProcessEvictedAfterClose(t *testing.T) {
	root := t.TempDir()
	m, err := NewManager(Config{Root: root, Retain: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	// Exit at once, but keep the pipe open for a while: eviction counts
	// from closed, not from exit.
	id := start(t, m, StartRequest{Command: "(sleep 0.2; echo late) &"})
	tr := readToClose(t, m, id, 0, 0)
	if tr.text("stdout") != "late\n" {
		t.Fatalf("stdout %q", tr.text("stdout"))
	}
	if _, err := m.Get(id); err != nil {
		t.Fatalf("get right after close: %v", err)
	}
	deadline := time.Now().Add(generousWait)
	for {
		_, err := m.Get(id)
		if err != nil {
			wantError(t, err, wire.CodeNotFound, "")
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("not evicted")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if len(m.List()) != 0 {
		t.Fatalf("list after eviction: %+v", m.List())
	}
}

func TestProcessCloseKillsAll(t *testing.T) {
	root := t.TempDir()
	m, err := NewManager(Config{Root: root})
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for i := range 3 {
		f := "c" + strconv.Itoa(i) + ".pid"
		start(t, m, StartRequest{Command: "sleep 600 & echo $! > " + f + "; wait", TTY: i == 2})
		pids = append(pids, readPid(t, filepath.Join(root, f)))
	}
	if len(m.List()) != 3 {
		t.Fatalf("list: %d processes", len(m.List()))
	}
	m.Close()
	for _, pid := range pids {
		wantDead(t, pid)
	}
	if _, _, err := m.Start(StartRequest{Argv: []string{"true"}}); err == nil {
		t.Fatal("start after close succeeded")
	}
	_ = os.Remove
}

func TestProcessBlockedStdinDoesNotDelayTerminate(t *testing.T) {
	root := t.TempDir()
	m, err := NewManager(Config{Root: root, TermGrace: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	// sleep never reads stdin: a write larger than the pipe blocks.
	id := start(t, m, StartRequest{Argv: []string{"sleep", "600"}, Stdin: true})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	err = m.Write(ctx, id, "big", make([]byte, 1<<20), false)
	wantError(t, err, wire.CodeDeadlineExceeded, "")
	if err := m.Resize(id, 10, 10); err == nil {
		t.Fatal("resize of a pipe process succeeded")
	}
	if was, err := m.Terminate(id); !was || err != nil {
		t.Fatalf("terminate = %v, %v", was, err)
	}
	tr := readToClose(t, m, id, 0, 0)
	if tr.exitCode != 128+15 {
		t.Fatalf("exit %d, want 143 (TERM)", tr.exitCode)
	}
	// The queued write failed with the process; its id answers the same.
	wantError(t, m.Write(context.Background(), id, "big", nil, false), wire.CodeConflict, wire.ReasonNotRunning)
}
