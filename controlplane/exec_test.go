package controlplane

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/outposthq/outpost/controlplane/client"
	"github.com/outposthq/outpost/wire"
)

func TestExec(t *testing.T) {
	s := startServer(t, testConfig(t))
	ctx := context.Background()
	admin := adminClient(s)
	if _, err := admin.CreateWorkspace(ctx, "ws1"); err != nil {
		t.Fatal(err)
	}
	ta := enrollAgent(t, s, "ws1", "e1")

	var mu sync.Mutex
	var got []*wire.ExecRequest
	raw := []byte("ok \xff\xfe end\n")
	m, _ := serveMock(t, ta)
	m.Handle(wire.OpExec, func(req *wire.Request) (any, error) {
		r := new(wire.ExecRequest)
		if err := req.DecodeBody(r); err != nil {
			return nil, err
		}
		mu.Lock()
		got = append(got, r)
		mu.Unlock()
		if len(r.Argv) > 0 {
			switch r.Argv[0] {
			case "missing":
				return nil, wire.Errorf(wire.CodeNotFound, wire.ReasonExecutableNotFound, "executable %q not found", r.Argv[0])
			case "false":
				return &wire.ExecResult{ExitCode: 1, Stderr: []byte("boom"), DurationMs: 3}, nil
			}
		}
		return &wire.ExecResult{ExitCode: 0, Stdout: raw, Stderr: r.Stdin, Truncated: true, DurationMs: 7}, nil
	})
	last := func() *wire.ExecRequest {
		mu.Lock()
		defer mu.Unlock()
		return got[len(got)-1]
	}
	tgt := admin.Agent("ws1", "e1")

	t.Run("text", func(t *testing.T) {
		res, err := tgt.Exec(ctx, client.ExecRequest{Argv: []string{"echo", "x"}, Stdin: "in", Cwd: "sub", Env: map[string]string{"A": "1"}})
		if err != nil {
			t.Fatal(err)
		}
		want := client.ExecResult{ExitCode: 0, Stdout: "ok \uFFFD end\n", Stderr: "in", Truncated: true, DurationMs: 7}
		if *res != want {
			t.Fatalf("result %+v, want %+v", *res, want)
		}
		r := last()
		if r.TimeoutMs != wire.DefaultExecTimeoutMs || r.OutputCap != wire.DefaultOutputCap || r.Cwd != "sub" || r.Env["A"] != "1" || string(r.Stdin) != "in" {
			t.Fatalf("request reached the agent as %+v", r)
		}
	})

	t.Run("base64 exact bytes", func(t *testing.T) {
		stdin := []byte{0, 1, 0xff}
		out, err := tgt.ExecBytes(ctx, client.ExecRequest{Command: "cat", StdinBase64: base64.StdEncoding.EncodeToString(stdin), TimeoutMs: 5000, OutputCap: 10})
		if err != nil {
			t.Fatal(err)
		}
		if string(out.Stdout) != string(raw) || string(out.Stderr) != string(stdin) {
			t.Fatalf("bytes: %q %q", out.Stdout, out.Stderr)
		}
		if r := last(); r.Command != "cat" || r.TimeoutMs != 5000 || r.OutputCap != 10 {
			t.Fatalf("request reached the agent as %+v", r)
		}
		status, body := call(t, s, "POST", "/v1/workspaces/ws1/agents/e1/exec?encoding=base64", s.AdminToken(), `{"argv":["x"]}`)
		var m map[string]any
		if err := json.Unmarshal(body, &m); status != 200 || err != nil {
			t.Fatalf("%d %s", status, body)
		}
		for _, f := range []string{"exitCode", "stdout", "stderr", "timedOut", "truncated", "durationMs"} {
			if _, ok := m[f]; !ok {
				t.Errorf("field %q missing: %s", f, body)
			}
		}
	})

	t.Run("outputCap over what a reply carries is 400", func(t *testing.T) {
		maxCap := (8<<20 - payloadReserve) / 2 // the embedded server's max payload, two streams
		if got := s.maxOutputCap(); got != maxCap {
			t.Fatalf("maxOutputCap = %d, want %d", got, maxCap)
		}
		for _, c := range []int{400 << 20, maxCap + 1} {
			status, body := call(t, s, "POST", "/v1/workspaces/ws1/agents/e1/exec", s.AdminToken(), client.ExecRequest{Argv: []string{"true"}, OutputCap: c})
			var eb client.ErrorBody
			if err := json.Unmarshal(body, &eb); status != 400 || err != nil || eb.Error == nil {
				t.Fatalf("outputCap %d: %d %s, want 400", c, status, body)
			}
			if eb.Error.Code != wire.CodeInvalidArgument || !strings.Contains(eb.Error.Message, "outputCap") || !strings.Contains(eb.Error.Message, strconv.Itoa(maxCap)) {
				t.Fatalf("outputCap %d: error %+v, want invalid_argument naming outputCap and %d", c, eb.Error, maxCap)
			}
		}
		if _, err := tgt.Exec(ctx, client.ExecRequest{Argv: []string{"true"}, OutputCap: maxCap}); err != nil {
			t.Fatalf("outputCap at the maximum: %v", err)
		}
		if r := last(); r.OutputCap != maxCap {
			t.Fatalf("request reached the agent with cap %d, want %d", r.OutputCap, maxCap)
		}
	})

	t.Run("non-zero exit is 200", func(t *testing.T) {
		res, err := tgt.Exec(ctx, client.ExecRequest{Argv: []string{"false"}})
		if err != nil {
			t.Fatal(err)
		}
		if res.ExitCode != 1 || res.Stderr != "boom" {
			t.Fatalf("%+v", res)
		}
	})

	t.Run("executable not found", func(t *testing.T) {
		_, err := tgt.Exec(ctx, client.ExecRequest{Argv: []string{"missing"}})
		if !errors.Is(err, &wire.Error{Code: wire.CodeNotFound, Reason: wire.ReasonExecutableNotFound}) {
			t.Fatalf("err = %v, want not_found/executable_not_found", err)
		}
	})

	t.Run("unknown agent", func(t *testing.T) {
		_, err := admin.Agent("ws1", "nobody").Exec(ctx, client.ExecRequest{Argv: []string{"true"}})
		if !errors.Is(err, wire.ErrNotFound) {
			t.Fatalf("err = %v, want not_found", err)
		}
	})

	t.Run("offline agent is 503 at once", func(t *testing.T) {
		enrollAgent(t, s, "ws1", "off") // enrolled, never connected
		start := time.Now()
		_, err := admin.Agent("ws1", "off").Exec(ctx, client.ExecRequest{Argv: []string{"true"}})
		var we *wire.Error
		if !errors.As(err, &we) || we.Code != wire.CodeUnavailable || !we.Retryable {
			t.Fatalf("err = %v, want unavailable (never not_found)", err)
		}
		if we.Reason != wire.ReasonAgentOffline && we.Reason != wire.ReasonAgentReconnecting {
			t.Fatalf("reason %q", we.Reason)
		}
		if d := time.Since(start); d > time.Second {
			t.Fatalf("offline took %s to report", d)
		}
	})
}
