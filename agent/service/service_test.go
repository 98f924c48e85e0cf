package service

import (
	"bytes"
	"encoding/xml"
	"errors"
	"flag"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// goldenSpec has what quoting must survive: spaces, a quote, % and $ (which
// systemd expands), XML's special characters.
func goldenSpec() *Spec {
	return &Spec{
		Name:        "outpost-agent-default-laptop",
		Description: "Outpost agent default/laptop serving /home/ann/My Work & 100% $HOME",
		Executable:  "/home/ann/.local/bin/outpost",
		Args:        []string{"agent", "run", "--config", "/home/ann/.outpost/agent.json", "--root", "/home/ann/My Work & \"100%\" $HOME", "--policy", "/home/ann/.outpost/policy.json"},
		Env:         map[string]string{"HTTPS_PROXY": "http://proxy.corp:3128", "NO_PROXY": "localhost,.corp"},
		LogDir:      "/Users/ann/Library/Logs/outpost",
		Account:     `CORP\ann`,
	}
}

func TestDefinitionsMatchGoldenFiles(t *testing.T) {
	for _, tc := range []struct{ goos, file string }{
		{"linux", "outpost-agent.service"},
		{"darwin", "outpost-agent.plist"},
		{"windows", "outpost-agent-windows.txt"},
	} {
		t.Run(tc.goos, func(t *testing.T) {
			got, err := Definition(tc.goos, goldenSpec())
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("testdata", tc.file)
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want) {
				t.Fatalf("%s definition differs from %s (go test -update to accept):\n%s", tc.goos, path, got)
			}
		})
	}
}

func TestSpecValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec Spec
		ok   bool
	}{
		{"good", Spec{Name: "outpost-agent-a-b", Executable: "/usr/bin/outpost"}, true},
		{"windows path", Spec{Name: "a", Executable: `C:\Program Files\outpost.exe`}, true},
		{"relative executable", Spec{Name: "a", Executable: "outpost"}, false},
		{"name with a dot", Spec{Name: "a.b", Executable: "/x"}, false},
		{"name with a slash", Spec{Name: "a/b", Executable: "/x"}, false},
		{"empty name", Spec{Executable: "/x"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.spec.Validate(); (err == nil) != tc.ok {
				t.Fatalf("Validate() = %v, want ok %v", err, tc.ok)
			}
		})
	}
	quoted := goldenSpec()
	quoted.Executable = `/home/ann/"bin"/outpost`
	if _, err := Definition("linux", quoted); err == nil {
		t.Fatal("linux: an executable path with quotes was accepted")
	}
	if _, err := Definition("plan9", goldenSpec()); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("plan9: %v", err)
	}
}

// systemd's own checker accepts the unit: every key known, the command
// executable. The unit's paths hold a space, a quote, % and $.
func TestSystemdAnalyzeVerifiesTheUnit(t *testing.T) {
	if _, err := exec.LookPath("systemd-analyze"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("systemd-analyze is missing; CI installs systemd")
		}
		t.Skip("no systemd-analyze here")
	}
	// systemd refuses quotes, backslashes and $ in the executable's path
	// (Definition does too), not spaces or %.
	dir := filepath.Join(t.TempDir(), `a dir with spaces 100%`)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(dir, "outpost")
	copyFile(t, "/bin/true", exe)
	s := goldenSpec()
	s.Executable = exe
	unit := filepath.Join(t.TempDir(), s.Name+".service")
	if err := writeFile(unit, []byte(SystemdUnit(s))); err != nil {
		t.Fatal(err)
	}
	run := t.TempDir() // a user manager's runtime directory, owner-only
	cmd := exec.Command("systemd-analyze", "verify", "--user", unit)
	cmd.Env = append(os.Environ(), "XDG_RUNTIME_DIR="+run)
	out, err := cmd.CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) != 0 {
		t.Fatalf("systemd-analyze verify --user: %v\n%s\nunit:\n%s", err, out, SystemdUnit(s))
	}
	// The checker does fail: an executable that is not there.
	s.Executable = filepath.Join(dir, "missing")
	if err := writeFile(unit, []byte(SystemdUnit(s))); err != nil {
		t.Fatal(err)
	}
	cmd = exec.Command("systemd-analyze", "verify", "--user", unit)
	cmd.Env = append(os.Environ(), "XDG_RUNTIME_DIR="+run)
	if out, err := cmd.CombinedOutput(); err == nil {
		t.Fatalf("systemd-analyze accepted a missing executable:\n%s", out)
	}
}

// The plist is well-formed XML of the plist shape, and its program
// arguments decode back to the spec's, characters XML escapes included.
func TestLaunchdPlistDecodes(t *testing.T) {
	s := goldenSpec()
	dec := xml.NewDecoder(strings.NewReader(LaunchdPlist(s)))
	var args []string
	inArray := false
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("plist is not well-formed: %v", err)
		}
		switch el := tok.(type) {
		case xml.StartElement:
			if el.Name.Local == "array" {
				inArray = true
			}
			if inArray && el.Name.Local == "string" {
				var v string
				if err := dec.DecodeElement(&v, &el); err != nil {
					t.Fatal(err)
				}
				args = append(args, v)
			}
		case xml.EndElement:
			if el.Name.Local == "array" {
				inArray = false
			}
		}
	}
	want := append([]string{s.Executable}, s.Args...)
	if strings.Join(args, "\x00") != strings.Join(want, "\x00") {
		t.Fatalf("ProgramArguments = %q, want %q", args, want)
	}
	if _, err := exec.LookPath("plutil"); err == nil {
		path := filepath.Join(t.TempDir(), "a.plist")
		if err := os.WriteFile(path, []byte(LaunchdPlist(s)), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command("plutil", "-lint", path).CombinedOutput(); err != nil {
			t.Fatalf("plutil -lint: %v\n%s", err, out)
		}
	}
}

// Windows command lines quote as CreateProcess parses them (the cases of
// syscall.EscapeArg's tests).
func TestWindowsQuote(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", `""`},
		{"a", "a"},
		{"a b", `"a b"`},
		{`C:\Program Files\outpost.exe`, `"C:\Program Files\outpost.exe"`},
		{`a"b`, `"a\"b"`},
		{`a\"b`, `"a\\\"b"`},
		{`dir with slash\`, `"dir with slash\\"`},
		{`\\server\share`, `\\server\share`},
	} {
		if got := windowsQuote(tc.in); got != tc.want {
			t.Errorf("windowsQuote(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, data, 0o755); err != nil {
		t.Fatal(err)
	}
}
