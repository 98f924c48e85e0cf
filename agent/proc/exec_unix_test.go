//go:build unix

package proc

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/outposthq/outpost/wire"
)

func writeFile(t testing.TB, path, data string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), mode); err != nil {
		t.Fatal(err)
	}
}

func mkdir(t testing.TB, path string) {
	t.Helper()
	if err := os.MkdirAll(path, 0o755); err != nil {
		t.Fatal(err)
	}
}

func TestExec(t *testing.T) {
	m, root := newTestManager(t)
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		t.Fatal(err)
	}
	mkdir(t, filepath.Join(root, "sub", "deep"))
	if err := os.Symlink("sub/deep", filepath.Join(root, "inlink")); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(root, "bin")
	mkdir(t, bin)
	writeFile(t, filepath.Join(bin, "myprog"), "#!/bin/sh\necho myprog \"$@\"\n", 0o755)
	writeFile(t, filepath.Join(root, "sub", "script.sh"), "#!/bin/sh\necho script\n", 0o755)
	bigIn := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB

	tests := []struct {
		name       string
		req        ExecRequest
		wantCode   int
		wantOut    string
		wantErr    string
		wantTrunc  bool
		wantTimout bool
	}{
		{name: "echo argv", req: ExecRequest{Argv: []string{"echo", "hello", "a b"}}, wantOut: "hello a b\n"},
		{name: "shell command", req: ExecRequest{Command: "echo out; echo err >&2"}, wantOut: "out\n", wantErr: "err\n"},
		{name: "exit code", req: ExecRequest{Command: "exit 3"}, wantCode: 3},
		{name: "shell missing command", req: ExecRequest{Command: "outpost-no-such-program 2>/dev/null"}, wantCode: 127},
		{name: "killed by TERM", req: ExecRequest{Command: "kill -TERM $$"}, wantCode: 128 + 15},
		{name: "killed by KILL", req: ExecRequest{Command: "kill -KILL $$"}, wantCode: 128 + 9},
		{name: "stdin", req: ExecRequest{Argv: []string{"cat"}, Stdin: []byte("abc\x00def")}, wantOut: "abc\x00def"},
		{name: "no stdin is empty", req: ExecRequest{Command: "wc -c | tr -d ' '"}, wantOut: "0\n"},
		{name: "big stdin", req: ExecRequest{Argv: []string{"cat"}, Stdin: bigIn, OutputCap: 2 << 20}, wantOut: string(bigIn)},
		{name: "stdin not read", req: ExecRequest{Argv: []string{"true"}, Stdin: bigIn}},
		{name: "env", req: ExecRequest{Command: `printf %s "$OUTPOST_T"`, Env: map[string]string{"OUTPOST_T": "v a"}}, wantOut: "v a"},
		{name: "env keeps agent env", req: ExecRequest{Command: `printf %s "$HOME"`}, wantOut: os.Getenv("HOME")},
		{name: "env PATH used for lookup", req: ExecRequest{Argv: []string{"myprog", "x"}, Env: map[string]string{"PATH": bin + ":/usr/bin:/bin"}}, wantOut: "myprog x\n"},
		{name: "cwd root", req: ExecRequest{Argv: []string{"pwd", "-P"}}, wantOut: realRoot + "\n"},
		{name: "cwd relative", req: ExecRequest{Argv: []string{"pwd", "-P"}, Cwd: "sub/deep"}, wantOut: filepath.Join(realRoot, "sub", "deep") + "\n"},
		{name: "cwd absolute inside", req: ExecRequest{Argv: []string{"pwd", "-P"}, Cwd: filepath.Join(root, "sub")}, wantOut: filepath.Join(realRoot, "sub") + "\n"},
		{name: "cwd symlink inside", req: ExecRequest{Argv: []string{"pwd", "-P"}, Cwd: "inlink"}, wantOut: filepath.Join(realRoot, "sub", "deep") + "\n"},
		{name: "cwd sets PWD", req: ExecRequest{Command: `printf %s "$PWD"`, Cwd: "sub"}, wantOut: filepath.Join(realRoot, "sub")},
		{name: "relative executable", req: ExecRequest{Argv: []string{"./script.sh"}, Cwd: "sub"}, wantOut: "script\n"},
		{name: "binary output", req: ExecRequest{Command: `printf '\000\001\377\n\200'`}, wantOut: "\x00\x01\xff\n\x80"},
		{name: "cap truncates", req: ExecRequest{Command: "printf 0123456789abc", OutputCap: 10}, wantOut: "0123456789", wantTrunc: true},
		{name: "cap exact", req: ExecRequest{Command: "printf 0123456789", OutputCap: 10}, wantOut: "0123456789"},
		{name: "cap stderr", req: ExecRequest{Command: "printf 0123456789abc >&2", OutputCap: 10}, wantErr: "0123456789", wantTrunc: true},
		{name: "cap drains the rest", req: ExecRequest{Command: "head -c 5000000 /dev/zero", OutputCap: 3}, wantOut: "\x00\x00\x00", wantTrunc: true},
		{name: "late output", req: ExecRequest{Command: "(sleep 0.1; echo late) & echo early"}, wantOut: "early\nlate\n"},
		{name: "timeout", req: ExecRequest{Argv: []string{"sleep", "30"}, Timeout: 200 * time.Millisecond}, wantCode: 124, wantTimout: true},
		{name: "timeout keeps output", req: ExecRequest{Command: "echo before; sleep 30", Timeout: 200 * time.Millisecond}, wantCode: 124, wantOut: "before\n", wantTimout: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res, err := m.Exec(context.Background(), tt.req)
			if err != nil {
				t.Fatalf("Exec: %v", err)
			}
			if res.ExitCode != tt.wantCode || string(res.Stdout) != tt.wantOut || string(res.Stderr) != tt.wantErr {
				t.Errorf("got exit %d stdout %q stderr %q, want exit %d stdout %q stderr %q",
					res.ExitCode, trim(res.Stdout), trim(res.Stderr), tt.wantCode, trim([]byte(tt.wantOut)), tt.wantErr)
			}
			if res.Truncated != tt.wantTrunc || res.TimedOut != tt.wantTimout {
				t.Errorf("got truncated=%v timedOut=%v, want %v %v", res.Truncated, res.TimedOut, tt.wantTrunc, tt.wantTimout)
			}
			if res.Duration <= 0 || res.Duration > generous {
				t.Errorf("duration %v out of range", res.Duration)
			}
		})
	}
}

// trim shortens big outputs in failure messages.
func trim(b []byte) string {
	if len(b) > 200 {
		return string(b[:200]) + "..."
	}
	return string(b)
}

func TestExecRejectsUnix(t *testing.T) {
	m, root := newTestManager(t)
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(root, "out")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../..", filepath.Join(root, "up")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(root, "file"), "", 0o644)
	writeFile(t, filepath.Join(root, "noexec.sh"), "#!/bin/sh\n", 0o644)
	tests := []struct {
		name   string
		req    ExecRequest
		code   wire.Code
		reason string
	}{
		{"cwd absolute outside", ExecRequest{Argv: []string{"true"}, Cwd: "/etc"}, wire.CodePermissionDenied, wire.ReasonOutsideRoot},
		{"cwd symlink outside", ExecRequest{Argv: []string{"true"}, Cwd: "out"}, wire.CodePermissionDenied, wire.ReasonOutsideRoot},
		{"cwd below symlink outside", ExecRequest{Argv: []string{"true"}, Cwd: "up/x/.."}, wire.CodePermissionDenied, wire.ReasonOutsideRoot},
		{"cwd through symlink outside", ExecRequest{Argv: []string{"true"}, Cwd: "up"}, wire.CodePermissionDenied, wire.ReasonOutsideRoot},
		{"cwd is a file", ExecRequest{Argv: []string{"true"}, Cwd: "file"}, wire.CodeInvalidArgument, ""},
		{"not executable", ExecRequest{Argv: []string{"./noexec.sh"}}, wire.CodePermissionDenied, ""},
		{"directory", ExecRequest{Argv: []string{"/"}}, wire.CodePermissionDenied, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := m.Exec(context.Background(), tt.req)
			wantError(t, err, tt.code, tt.reason)
		})
	}
}

func TestExecSymlinkedRoot(t *testing.T) {
	real := t.TempDir()
	mkdir(t, filepath.Join(real, "sub"))
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	m, err := NewManager(Config{Root: link})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	realReal, _ := filepath.EvalSymlinks(real)
	for _, cwd := range []string{"sub", filepath.Join(link, "sub"), filepath.Join(realReal, "sub")} {
		res, err := m.Exec(context.Background(), ExecRequest{Argv: []string{"pwd", "-P"}, Cwd: cwd})
		if err != nil {
			t.Fatalf("cwd %q: %v", cwd, err)
		}
		if want := filepath.Join(realReal, "sub") + "\n"; string(res.Stdout) != want {
			t.Errorf("cwd %q: got %q, want %q", cwd, res.Stdout, want)
		}
	}
}
