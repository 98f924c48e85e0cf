package controlplane

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/outposthq/outpost/agent"
	"github.com/outposthq/outpost/controlplane/client"
	"github.com/outposthq/outpost/enroll"
	"github.com/outposthq/outpost/wire"
)

// runRealAgent enrolls and runs a real agent serving a temp root; it stops
// with the test.
func runRealAgent(t testing.TB, s *Server, ws, id string) (root string) {
	t.Helper()
	ctx := context.Background()
	tok, err := adminClient(s).CreateEnrollmentToken(ctx, ws, client.EnrollmentTokenRequest{Agent: id})
	if err != nil {
		t.Fatal(err)
	}
	ident, err := enroll.Enroll(ctx, s.URL(), tok.Token, "")
	if err != nil {
		t.Fatal(err)
	}
	root = t.TempDir()
	a, err := agent.New(agent.Config{Identity: ident, Root: root, Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	actx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(actx) }()
	t.Cleanup(func() { cancel(); <-done })
	waitFor(t, waitLong, "agent online", func() bool {
		ag, err := adminClient(s).GetAgent(ctx, ws, id)
		return err == nil && ag.Status == client.StatusOnline
	})
	return root
}

// collected is what an events stream delivered.
type collected struct {
	out       bytes.Buffer
	kinds     []string
	last      uint64
	exitCode  int
	dropped   int64
	sawClosed bool
}

// collectEvents reads the events stream of id from after until closed,
// checking that seqs only grow and closed comes last.
func collectEvents(t testing.TB, tgt *client.Target, id string, after uint64) *collected {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := &collected{last: after}
	err := tgt.Events(ctx, id, after, func(ev client.ProcessEvent) error {
		if ev.Seq <= c.last {
			return fmt.Errorf("event %s seq %d after %d", ev.Kind, ev.Seq, c.last)
		}
		if c.sawClosed {
			return fmt.Errorf("event %s after closed", ev.Kind)
		}
		c.last = ev.Seq
		c.kinds = append(c.kinds, ev.Kind)
		switch ev.Kind {
		case client.EventOutput:
			c.out.Write(ev.Chunk.Data)
			c.dropped += ev.Chunk.Dropped
		case client.EventExit:
			c.exitCode = ev.Exit.ExitCode
		case client.EventClosed:
			c.sawClosed = true
		}
		return nil
	})
	if err != nil {
		t.Fatalf("events of %s: %v", id, err)
	}
	return c
}

func wantCode(t testing.TB, err error, code wire.Code, reason string) {
	t.Helper()
	var we *wire.Error
	if !errors.As(err, &we) || we.Code != code || (reason != "" && we.Reason != reason) {
		t.Fatalf("err = %v, want %s/%s", err, code, reason)
	}
}

func TestProcessesOverHTTP(t *testing.T) {
	s := startServer(t, testConfig(t))
	ctx := context.Background()
	admin := adminClient(s)
	if _, err := admin.CreateWorkspace(ctx, "ws1"); err != nil {
		t.Fatal(err)
	}
	root := runRealAgent(t, s, "ws1", "a1")
	tgt := admin.Agent("ws1", "a1")

	for _, tty := range []bool{false, true} {
		t.Run(fmt.Sprintf("tty=%v", tty), func(t *testing.T) {
			id := fmt.Sprintf("cat-%v", tty)
			req := client.StartProcessRequest{ID: id, Argv: []string{"cat"}, Stdin: true}
			if tty {
				req = client.StartProcessRequest{ID: id, Command: "stty -echo; echo ready; exec cat", TTY: true, Cols: 90, Rows: 20}
			}
			started, err := tgt.StartProcess(ctx, req)
			if err != nil || started.ID != id || started.PID <= 0 {
				t.Fatalf("start = %+v, %v", started, err)
			}
			_, err = tgt.StartProcess(ctx, req)
			wantCode(t, err, wire.CodeConflict, wire.ReasonAlreadyExists)

			p, err := tgt.GetProcess(ctx, id)
			if err != nil || !p.Running || p.TTY != tty || p.ExitCode != nil || p.PID != started.PID {
				t.Fatalf("get = %+v, %v", p, err)
			}
			list, err := tgt.ListProcesses(ctx)
			if err != nil || !hasProcess(list, id) {
				t.Fatalf("list = %+v, %v", list, err)
			}
			if tty {
				waitHTTPOutput(t, tgt, id, "ready")
				if err := tgt.Resize(ctx, id, 100, 40); err != nil {
					t.Fatal(err)
				}
			} else {
				wantCode(t, tgt.Resize(ctx, id, 100, 40), wire.CodeConflict, wire.ReasonNotATTY)
			}
			for _, w := range []client.StdinRequest{
				{WriteID: "w1", Text: "hello\n"},
				{WriteID: "w1", Text: "hello\n"}, // a repeat writes nothing
				{WriteID: "w2", Data: []byte("bytes\n"), EOF: true},
			} {
				if err := tgt.WriteStdin(ctx, id, w); err != nil {
					t.Fatalf("stdin %+v: %v", w, err)
				}
			}
			c := collectEvents(t, tgt, id, 0)
			got := strings.ReplaceAll(c.out.String(), "\r\n", "\n")
			if got != map[bool]string{false: "hello\nbytes\n", true: "ready\nhello\nbytes\n"}[tty] {
				t.Fatalf("events output %q", got)
			}
			// Output may follow exit (cat's last write races its exit),
			// never closed; exit comes once.
			if c.exitCode != 0 || c.kinds[len(c.kinds)-1] != client.EventClosed || strings.Count(strings.Join(c.kinds, ","), client.EventExit) != 1 {
				t.Fatalf("events %v exit %d", c.kinds, c.exitCode)
			}
			// Resume: Last-Event-ID just before closed gives closed only.
			again := collectEvents(t, tgt, id, c.last-1)
			if strings.Join(again.kinds, ",") != "closed" {
				t.Fatalf("resume after exit: %v", again.kinds)
			}
			out, err := tgt.ReadOutput(ctx, id, 0, 0, 0)
			if err != nil || !out.Exited || out.ExitCode == nil || *out.ExitCode != 0 || !out.Closed || out.NextSeq != c.last {
				t.Fatalf("output = %+v, %v", out, err)
			}
			wantCode(t, tgt.Signal(ctx, id, "TERM"), wire.CodeConflict, wire.ReasonNotRunning)
			wantCode(t, tgt.WriteStdin(ctx, id, client.StdinRequest{WriteID: "w9", Text: "x"}), wire.CodeConflict, wire.ReasonNotRunning)
			if tty {
				wantCode(t, tgt.Resize(ctx, id, 80, 24), wire.CodeConflict, wire.ReasonNotRunning)
			}
			if was, err := tgt.Terminate(ctx, id); was || err != nil {
				t.Fatalf("terminate after exit = %v, %v", was, err)
			}
		})
	}

	t.Run("terminate and signal", func(t *testing.T) {
		for _, tty := range []bool{false, true} {
			for _, how := range []string{"signal", "terminate"} {
				id := fmt.Sprintf("sleep-%s-%v", how, tty)
				if _, err := tgt.StartProcess(ctx, client.StartProcessRequest{ID: id, Command: "echo up; sleep 600", TTY: tty}); err != nil {
					t.Fatal(err)
				}
				waitHTTPOutput(t, tgt, id, "up")
				wantCode(t, tgt.Signal(ctx, id, "STOP"), wire.CodeInvalidArgument, "")
				want := 128 + 15
				if how == "signal" {
					want = 128 + 1
					if err := tgt.Signal(ctx, id, "HUP"); err != nil {
						t.Fatal(err)
					}
				} else if was, err := tgt.Terminate(ctx, id); !was || err != nil {
					t.Fatalf("terminate = %v, %v", was, err)
				}
				if c := collectEvents(t, tgt, id, 0); c.exitCode != want {
					t.Fatalf("%s tty=%v: exit %d, want %d", how, tty, c.exitCode, want)
				}
			}
		}
	})

	t.Run("errors", func(t *testing.T) {
		_, err := tgt.GetProcess(ctx, "nope")
		wantCode(t, err, wire.CodeNotFound, "")
		_, err = tgt.GetProcess(ctx, "Bad.ID")
		wantCode(t, err, wire.CodeInvalidArgument, "")
		_, err = tgt.StartProcess(ctx, client.StartProcessRequest{Argv: []string{"no-such-program-xyz"}})
		wantCode(t, err, wire.CodeNotFound, wire.ReasonExecutableNotFound)
		_, err = tgt.StartProcess(ctx, client.StartProcessRequest{Argv: []string{"true"}, Cwd: "../.."})
		wantCode(t, err, wire.CodePermissionDenied, wire.ReasonOutsideRoot)
		_, err = tgt.StartProcess(ctx, client.StartProcessRequest{Argv: []string{"true"}, Cols: 10})
		wantCode(t, err, wire.CodeInvalidArgument, "")
		err = tgt.Events(ctx, "nope", 0, func(client.ProcessEvent) error { return nil })
		wantCode(t, err, wire.CodeNotFound, "")
		status, body := call(t, s, "GET", "/v1/workspaces/ws1/agents/a1/processes/nope/output?after=x", s.AdminToken(), nil)
		if code, _ := errorCode(t, body); status != http.StatusBadRequest || code != wire.CodeInvalidArgument {
			t.Fatalf("bad after: %d %s", status, body)
		}
	})

	t.Run("timeout and cwd", func(t *testing.T) {
		if err := os.Mkdir(filepath.Join(root, "sub"), 0o755); err != nil {
			t.Fatal(err)
		}
		st, err := tgt.StartProcess(ctx, client.StartProcessRequest{Command: "pwd; sleep 600", Cwd: "sub", TimeoutMs: 300})
		if err != nil {
			t.Fatal(err)
		}
		c := collectEvents(t, tgt, st.ID, 0)
		if c.exitCode != 124 || !strings.HasSuffix(strings.TrimSpace(c.out.String()), "/sub") {
			t.Fatalf("exit %d output %q", c.exitCode, c.out.String())
		}
	})
}

func hasProcess(ps []client.Process, id string) bool {
	for _, p := range ps {
		if p.ID == id {
			return true
		}
	}
	return false
}

// waitHTTPOutput long-polls output until it contains want.
func waitHTTPOutput(t testing.TB, tgt *client.Target, id, want string) {
	t.Helper()
	var seen bytes.Buffer
	var after uint64
	deadline := time.Now().Add(waitLong)
	for time.Now().Before(deadline) {
		out, err := tgt.ReadOutput(context.Background(), id, after, 0, 2*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range out.Chunks {
			seen.Write(c.Data)
		}
		after = out.NextSeq
		if strings.Contains(seen.String(), want) || out.Closed {
			break
		}
	}
	if !strings.Contains(seen.String(), want) {
		t.Fatalf("output %q lacks %q", seen.String(), want)
	}
}

func TestProcessesThroughSession(t *testing.T) {
	s := startServer(t, testConfig(t))
	ctx := context.Background()
	admin := adminClient(s)
	if _, err := admin.CreateWorkspace(ctx, "ws1"); err != nil {
		t.Fatal(err)
	}
	runRealAgent(t, s, "ws1", "a1")
	if _, err := admin.CreateSession(ctx, "ws1", client.CreateSessionRequest{
		ID: "s1", Active: "laptop", Backends: map[string]client.SessionBackend{"laptop": {Kind: client.KindAgent, Agent: "a1"}},
	}); err != nil {
		t.Fatal(err)
	}
	tgt := admin.Session("ws1", "s1")
	var route client.Route
	st, err := tgt.StartProcess(client.WithRoute(ctx, &route), client.StartProcessRequest{ID: "p1", Command: "echo routed"})
	if err != nil || route.Backend != "laptop" || route.Epoch != 1 {
		t.Fatalf("start through the session = %+v, %v; route %+v", st, err, route)
	}
	route = client.Route{}
	var out bytes.Buffer
	err = tgt.Events(client.WithRoute(ctx, &route), "p1", 0, func(ev client.ProcessEvent) error {
		if ev.Chunk != nil {
			out.Write(ev.Chunk.Data)
		}
		return nil
	})
	if err != nil || out.String() != "routed\n" || route.Backend != "laptop" {
		t.Fatalf("events through the session: %q, %v; route %+v", out.String(), err, route)
	}
}
