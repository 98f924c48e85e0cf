package policy

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// parseSeeds are the table's policies, valid and not; FuzzParse starts from them.
var parseSeeds = []struct {
	name, in, wantErr string
}{
	{name: "empty object", in: `{}`},
	{name: "contract example", in: `{"exec": true, "processes": true, "tty": true, "fs": "read-write", "git": "read-write",
		"commands": ["git", "npm", "go"], "denyPaths": [".ssh", ".env", "**/*.pem"], "ports": [3000, 5173],
		"limits": {"memoryBytes": 0, "cpuPercent": 0, "processes": 0}}`},
	{name: "read-only", in: `{"fs": "read-only", "git": "none"}`},
	{name: "unknown field", in: `{"exce": false}`, wantErr: `unknown field "exce"`},
	{name: "unknown limit", in: `{"limits": {"memory": 5}}`, wantErr: `unknown field "memory"`},
	{name: "bad access", in: `{"fs": "write"}`, wantErr: `fs: "write"`},
	{name: "command path", in: `{"commands": ["/bin/sh"]}`, wantErr: "commands:"},
	{name: "empty command", in: `{"commands": [""]}`, wantErr: "commands:"},
	{name: "absolute deny", in: `{"denyPaths": ["/etc"]}`, wantErr: "denyPaths:"},
	{name: "dotdot deny", in: `{"denyPaths": ["a/../b"]}`, wantErr: "denyPaths:"},
	{name: "bad glob", in: `{"denyPaths": ["[a"]}`, wantErr: "denyPaths:"},
	{name: "too many stars", in: `{"denyPaths": ["**/a/**/b/**/c/**/d/**/e"]}`, wantErr: "more than 4"},
	{name: "bad port", in: `{"ports": [0]}`, wantErr: "ports: 0"},
	{name: "negative limit", in: `{"limits": {"processes": -1}}`, wantErr: "limits:"},
	{name: "wrong type", in: `{"exec": "yes"}`, wantErr: "cannot unmarshal"},
	{name: "trailing data", in: `{} {}`, wantErr: "after the JSON"},
	{name: "not an object", in: `[]`, wantErr: "cannot unmarshal"},
}

func TestParse(t *testing.T) {
	for _, tc := range parseSeeds {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.in))
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("Parse: %v, want ok", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("Parse: %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
}

func mustParse(t testing.TB, s string) *Policy {
	t.Helper()
	p, err := Parse([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// rule is the rule a Denial names, "" for nil; it fails on other errors.
func rule(t *testing.T, err error) string {
	t.Helper()
	if err == nil {
		return ""
	}
	var d *Denial
	if !errors.As(err, &d) {
		t.Fatalf("error %v is not a *Denial", err)
	}
	return d.Rule
}

func TestHidden(t *testing.T) {
	p := mustParse(t, `{"denyPaths": [".ssh", ".env", "**/*.pem", "secrets/**/key", "build/"]}`)
	for _, tc := range []struct {
		path string
		want bool
	}{
		{".", false}, {".ssh", true}, {".ssh/id_rsa", true}, {".sshx", false}, {"a/.ssh", false},
		{".env", true}, {"sub/.env", false}, {"cert.pem", true}, {"a/b/c.pem", true}, {"a/b.pem/inner", true},
		{"pem", false}, {"secrets/key", true}, {"secrets/a/b/key", true}, {"secrets/a/keys", false},
		{"build", true}, {"build/x", true}, {"src/main.go", false},
	} {
		if got := p.Hidden(tc.path); got != tc.want {
			t.Errorf("Hidden(%q) = %v, want %v", tc.path, got, tc.want)
		}
		if got := rule(t, p.Path(tc.path)) == "denyPaths"; got != tc.want {
			t.Errorf("Path(%q) denied = %v, want %v", tc.path, got, tc.want)
		}
	}
}

func TestOp(t *testing.T) {
	for _, tc := range []struct {
		name, policy, op string
		mutates          bool
		want             string
	}{
		{"all allowed", `{}`, "exec", true, ""},
		{"exec off", `{"exec": false}`, "exec", true, "exec"},
		{"exec off leaves procs", `{"exec": false}`, "proc.start", true, ""},
		{"procs off", `{"processes": false}`, "proc.list", false, "processes"},
		{"fs read-only read", `{"fs": "read-only"}`, "fs.list", false, ""},
		{"fs read-only write", `{"fs": "read-only"}`, "fs.write", true, "fs"},
		{"fs none read", `{"fs": "none"}`, "fs.stat", false, "fs"},
		{"fs read-only snapshot", `{"fs": "read-only"}`, "fs.snap.scan", false, ""},
		{"fs read-only restore", `{"fs": "read-only"}`, "fs.snap.restore.begin", true, "fs"},
		{"fs none snapshot", `{"fs": "none"}`, "fs.snap.scan", false, "fs"},
		{"fs none leaves git", `{"fs": "none"}`, "git.status", false, ""},
		{"git read-only commit", `{"git": "read-only"}`, "git.commit", true, "git"},
		{"git none diff", `{"git": "none"}`, "git.diff", false, "git"},
		{"ping always", `{"exec": false, "fs": "none", "git": "none", "processes": false}`, "ping", false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := rule(t, mustParse(t, tc.policy).Op(tc.op, tc.mutates)); got != tc.want {
				t.Fatalf("Op(%s) denied by %q, want %q", tc.op, got, tc.want)
			}
		})
	}
}

func TestCommand(t *testing.T) {
	p := mustParse(t, `{"commands": ["git", "go"]}`)
	withSh := mustParse(t, `{"commands": ["git", "sh"]}`)
	for _, tc := range []struct {
		name  string
		p     *Policy
		argv  []string
		shell string
		env   map[string]string
		want  string
	}{
		{name: "allowed", p: p, argv: []string{"git", "status"}},
		{name: "not listed", p: p, argv: []string{"curl", "x"}, want: "commands"},
		{name: "path to allowed name", p: p, argv: []string{"./git"}, want: "commands"},
		{name: "absolute path", p: p, argv: []string{"/usr/bin/git"}, want: "commands"},
		{name: "shell text without sh", p: p, shell: "git status", want: "commands"},
		{name: "sh -c argv", p: p, argv: []string{"sh", "-c", "curl x"}, want: "commands"},
		{name: "bash -c", p: withSh, argv: []string{"bash", "-c", "curl x"}, want: "commands"},
		{name: "/bin/sh -c", p: withSh, argv: []string{"/bin/sh", "-c", "curl x"}, want: "commands"},
		{name: "env wrapper", p: p, argv: []string{"env", "curl"}, want: "commands"},
		{name: "PATH override", p: p, argv: []string{"git"}, env: map[string]string{"PATH": "/tmp"}, want: "commands"},
		{name: "LD_PRELOAD", p: p, argv: []string{"git"}, env: map[string]string{"LD_PRELOAD": "x.so"}, want: "commands"},
		{name: "other env", p: p, argv: []string{"git"}, env: map[string]string{"GOFLAGS": "-v"}},
		{name: "shell text with sh", p: withSh, shell: "git status | head"},
		{name: "no list", p: mustParse(t, `{}`), argv: []string{"anything"}, env: map[string]string{"PATH": "/x"}},
		{name: "empty list", p: mustParse(t, `{"commands": []}`), argv: []string{"git"}, want: "commands"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := rule(t, tc.p.Command(tc.argv, tc.shell, tc.env)); got != tc.want {
				t.Fatalf("Command(%q, %q) denied by %q, want %q", tc.argv, tc.shell, got, tc.want)
			}
		})
	}
}

func TestPortsAndSummary(t *testing.T) {
	p := mustParse(t, `{"ports": [3000], "commands": ["git"], "denyPaths": [".ssh", ".env"], "limits": {"processes": 50}, "tty": false}`)
	if err := p.AllowPort(3000); err != nil {
		t.Errorf("AllowPort(3000): %v", err)
	}
	if got := rule(t, p.AllowPort(22)); got != "ports" {
		t.Errorf("AllowPort(22) denied by %q, want ports", got)
	}
	if err := mustParse(t, `{}`).AllowPort(22); err != nil {
		t.Errorf("no ports list: AllowPort(22): %v", err)
	}
	s := p.Summary("rlimit")
	if s.TTY || !s.Exec || s.FS != "read-write" || s.DenyPaths != 2 || s.LimitsBy != "rlimit" || s.Limits.Processes != 50 || len(s.Ports) != 1 {
		t.Errorf("Summary = %+v", s)
	}
}

func TestReadRefusesUnsafeFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "policy.json")
	if err := os.WriteFile(path, []byte(`{"exec": false}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(path); err != nil {
		t.Fatalf("Read of a 0600 file: %v", err)
	}
	for _, mode := range []os.FileMode{0o620, 0o602, 0o666} {
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
		if _, err := Read(path); !errors.Is(err, ErrUnsafeFile) {
			t.Errorf("Read of a %#o file: %v, want ErrUnsafeFile", mode, err)
		}
	}
}

func TestFileReloadKeepsLastGood(t *testing.T) {
	path := filepath.Join(t.TempDir(), "policy.json")
	write := func(s string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"exec": false}`)
	f, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	var applied []*Policy
	f.OnApply(func(p *Policy) { applied = append(applied, p) })
	write(`{"exec": true, "fs": "none"}`)
	if err := f.Reload(); err != nil {
		t.Fatal(err)
	}
	if got := rule(t, f.Current().Op("fs.stat", false)); got != "fs" {
		t.Fatalf("after reload fs.stat denied by %q, want fs", got)
	}
	write(`{"bogus": 1}`)
	if err := f.Reload(); err == nil {
		t.Fatal("reload of an invalid file succeeded")
	}
	if got := rule(t, f.Current().Op("fs.stat", false)); got != "fs" {
		t.Fatalf("after a failed reload fs.stat denied by %q, want the last good policy's fs", got)
	}
	if len(applied) != 2 {
		t.Fatalf("OnApply saw %d policies, want 2 (initial, reload)", len(applied))
	}
}

func TestWatchReloadsOnSignalAndChange(t *testing.T) {
	path := filepath.Join(t.TempDir(), "policy.json")
	if err := os.WriteFile(path, []byte(`{}`), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	applied := make(chan *Policy, 10)
	f.OnApply(func(p *Policy) { applied <- p })
	<-applied
	ctx, cancel := context.WithCancel(context.Background())
	sig := make(chan os.Signal, 1)
	done := make(chan struct{})
	go func() { defer close(done); f.Watch(ctx, 50*time.Millisecond, sig) }()
	defer func() { cancel(); <-done }()

	// A change of content, noticed by the check.
	if err := os.WriteFile(path, []byte(`{"exec": false, "fs": "none"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	select {
	case p := <-applied:
		if rule(t, p.Op("exec", true)) != "exec" {
			t.Fatal("the changed policy is not in force")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a changed file was not reloaded")
	}
	// A signal reloads even when size and time look the same.
	sig <- syscall.SIGHUP
	select {
	case <-applied:
	case <-time.After(10 * time.Second):
		t.Fatal("SIGHUP did not reload")
	}
}

func TestProgramsRestricted(t *testing.T) {
	for _, tc := range []struct{ text, want string }{
		{`{}`, ""},
		{`{"exec": false}`, ""},      // processes still start anything
		{`{"processes": false}`, ""}, // exec still runs anything
		{`{"exec": false, "processes": false}`, "exec"},
		{`{"commands": []}`, "commands"},
		{`{"commands": ["git"], "exec": false, "processes": false}`, "commands"},
	} {
		p, err := Parse([]byte(tc.text))
		if err != nil {
			t.Fatal(err)
		}
		if got := p.ProgramsRestricted(); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.text, got, tc.want)
		}
	}
	if (*Policy)(nil).ProgramsRestricted() != "" {
		t.Error("no policy restricts programs")
	}
}
