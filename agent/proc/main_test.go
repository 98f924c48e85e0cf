package proc

import (
	"context"
	"errors"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/outposthq/outpost/internal/leaktest"
	"github.com/outposthq/outpost/wire"
)

// TestMain fails the run if any goroutine of this package outlives the
// tests. Started with helperEnv set, the test binary is a helper process
// instead (see runHelper).
func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(runHelper(mode))
	}
	leaktest.Main(m, "outpost/agent/proc.(*")
}

// generous bounds a run that should end at once, on a slow machine under -race.
const generous = 10 * time.Second

// readPid waits for a pid file written by a test command.
func readPid(t testing.TB, path string) int {
	t.Helper()
	deadline := time.Now().Add(generous)
	for {
		if pid, ok := tryReadPid(path); ok {
			return pid
		}
		if time.Now().After(deadline) {
			t.Fatalf("pid file %s not written", path)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// tryReadPid reads a complete pid file.
func tryReadPid(path string) (int, bool) {
	b, err := os.ReadFile(path)
	if err != nil || !strings.HasSuffix(string(b), "\n") {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid, err == nil
}

// wantDead fails unless pid is gone (or a zombie) within a generous bound:
// SIGKILL has been sent when Exec returns, dying takes the kernel a moment.
func wantDead(t testing.TB, pid int) {
	t.Helper()
	deadline := time.Now().Add(generous)
	for alive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("process %d still alive", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// start starts a process and fails the test if it does not.
func start(t testing.TB, m *Manager, req StartRequest) string {
	t.Helper()
	id, pid, err := m.Start(req)
	if err != nil {
		t.Fatalf("start %v: %v", req.Argv, err)
	}
	if pid <= 0 {
		t.Fatalf("pid %d", pid)
	}
	return id
}

// waitClosed waits until process id closed.
func waitClosed(t testing.TB, m *Manager, id string) Info {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), generous)
	defer cancel()
	info, err := m.Wait(ctx, id)
	if err != nil {
		t.Fatalf("wait for %s: %v", id, err)
	}
	return info
}

// newTestManager serves a fresh temporary root and is closed with the test.
func newTestManager(t testing.TB) (*Manager, string) {
	t.Helper()
	root := t.TempDir()
	m, err := NewManager(Config{Root: root})
	if err != nil {
		t.Fatalf("NewManager: %v", err)
	}
	t.Cleanup(func() { _ = m.Close() })
	return m, root
}

// confineWith makes m apply its limits by c, letting go of the confiner it
// had (the process's directories of boxes count their users).
func confineWith(m *Manager, c confiner) {
	if old, ok := m.confine.(interface{ close() }); ok {
		old.close()
	}
	m.confine = c
}

// wantError checks that err is a *wire.Error with code and reason.
func wantError(t testing.TB, err error, code wire.Code, reason string) {
	t.Helper()
	var we *wire.Error
	if !errors.As(err, &we) {
		t.Fatalf("err = %v (%T), want %s/%s", err, err, code, reason)
	}
	if we.Code != code || we.Reason != reason {
		t.Fatalf("err = %v, want %s/%s", err, code, reason)
	}
}

func TestNewManagerValidatesRoot(t *testing.T) {
	dir := t.TempDir()
	file := dir + string(os.PathSeparator) + "file"
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		root string
	}{
		{"empty", ""},
		{"relative", "some/dir"},
		{"missing", dir + string(os.PathSeparator) + "missing"},
		{"file", file},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := NewManager(Config{Root: tt.root}); err == nil {
				t.Fatalf("NewManager(%q) succeeded, want error", tt.root)
			}
		})
	}
}

func TestExecRejects(t *testing.T) {
	m, _ := newTestManager(t)
	tests := []struct {
		name   string
		req    ExecRequest
		code   wire.Code
		reason string
	}{
		{"neither", ExecRequest{}, wire.CodeInvalidArgument, ""},
		{"both", ExecRequest{Argv: []string{"x"}, Command: "x"}, wire.CodeInvalidArgument, ""},
		{"empty argv0", ExecRequest{Argv: []string{""}}, wire.CodeInvalidArgument, ""},
		{"negative timeout", ExecRequest{Argv: []string{"x"}, Timeout: -1}, wire.CodeInvalidArgument, ""},
		{"negative cap", ExecRequest{Argv: []string{"x"}, OutputCap: -1}, wire.CodeInvalidArgument, ""},
		{"bad env key", ExecRequest{Argv: []string{"x"}, Env: map[string]string{"A=B": "c"}}, wire.CodeInvalidArgument, ""},
		{"parent cwd", ExecRequest{Argv: []string{"x"}, Cwd: ".."}, wire.CodePermissionDenied, wire.ReasonOutsideRoot},
		{"dotdot cwd", ExecRequest{Argv: []string{"x"}, Cwd: "a/../../b"}, wire.CodePermissionDenied, wire.ReasonOutsideRoot},
		{"missing cwd", ExecRequest{Argv: []string{"x"}, Cwd: "missing"}, wire.CodeNotFound, ""},
		{"missing executable", ExecRequest{Argv: []string{"outpost-no-such-program"}}, wire.CodeNotFound, wire.ReasonExecutableNotFound},
		{"missing executable path", ExecRequest{Argv: []string{"./outpost-no-such-program"}}, wire.CodeNotFound, wire.ReasonExecutableNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := m.Exec(context.Background(), tt.req)
			wantError(t, err, tt.code, tt.reason)
		})
	}
}

func TestExecAfterClose(t *testing.T) {
	m, _ := newTestManager(t)
	if err := m.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := m.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	_, err := m.Exec(context.Background(), ExecRequest{Argv: []string{"x"}})
	wantError(t, err, wire.CodeUnavailable, "")
}

func TestCapBuffer(t *testing.T) {
	tests := []struct {
		name      string
		limit     int
		writes    []string
		want      string
		truncated bool
	}{
		{"under", 5, []string{"ab", "c"}, "abc", false},
		{"exact", 5, []string{"abc", "de"}, "abcde", false},
		{"over in one", 5, []string{"abcdef"}, "abcde", true},
		{"over across", 5, []string{"abc", "def"}, "abcde", true},
		{"after full", 5, []string{"abcde", "f"}, "abcde", true},
		{"empty write at limit", 5, []string{"abcde", ""}, "abcde", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := capBuffer{limit: tt.limit}
			for _, w := range tt.writes {
				b.write([]byte(w))
			}
			if string(b.buf) != tt.want || b.truncated != tt.truncated {
				t.Fatalf("got %q truncated=%v, want %q truncated=%v", b.buf, b.truncated, tt.want, tt.truncated)
			}
		})
	}
}

// TestCapBufferGrowsWithOutput: the buffer's memory follows what it keeps,
// never the limit, and never goes past the limit.
func TestCapBufferGrowsWithOutput(t *testing.T) {
	tests := []struct {
		name    string
		limit   int
		write   int // bytes per write
		writes  int
		maxCap  int
		wantLen int
	}{
		{"huge limit, tiny output", 400 << 20, 2, 1, minGrowth, 2},
		{"huge limit, some output", 400 << 20, 32 << 10, 4, 256 << 10, 128 << 10},
		{"odd limit filled", 100_000, 32 << 10, 10, 100_000, 100_000},
		{"limit filled in one write", 3 << 20, 4 << 20, 1, 3 << 20, 3 << 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := capBuffer{limit: tt.limit}
			p := make([]byte, tt.write)
			for range tt.writes {
				b.write(p)
			}
			if len(b.buf) != tt.wantLen || cap(b.buf) > tt.maxCap {
				t.Fatalf("len %d cap %d, want len %d cap at most %d", len(b.buf), cap(b.buf), tt.wantLen, tt.maxCap)
			}
		})
	}
}

func TestMergeEnv(t *testing.T) {
	env, err := mergeEnv([]string{"A=1", "B=2"}, "/dir", map[string]string{"B": "3", "C": "4"})
	if err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]string{"A": "1", "B": "3", "C": "4", "PWD": "/dir"} {
		if got := lookupEnv(env, key); got != want {
			t.Errorf("%s = %q, want %q (env %q)", key, got, want, env)
		}
	}
}

func TestInheritedEnv(t *testing.T) {
	tests := []struct {
		name string
		in   []string
		want []string
	}{
		{"keeps the rest", []string{"HOME=/h", "PATH=/bin", "OUTPOSTX=1", "MY_OUTPOST_TOKEN=2"}, []string{"HOME=/h", "PATH=/bin", "OUTPOSTX=1", "MY_OUTPOST_TOKEN=2"}},
		{"drops the agent's", []string{"OUTPOST_TOKEN=secret", "HOME=/h", "OUTPOST_ADMIN_TOKEN=admin", "OUTPOST_=x"}, []string{"HOME=/h"}},
		{"empty", nil, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := inheritedEnv(tt.in); !slices.Equal(got, tt.want) {
				t.Fatalf("inheritedEnv(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}
