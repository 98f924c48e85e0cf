package e2e

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/creack/pty"
	"github.com/outposthq/outpost/controlplane/client"
	"github.com/outposthq/outpost/wire"
)

// cli runs a client command of the outpost binary against e's control plane
// and returns stdout; a failure ends the test.
func (e *agentEnv) cli(t *testing.T, stdin io.Reader, args ...string) string {
	t.Helper()
	out, errOut, err := e.cliErr(stdin, args...)
	if err != nil {
		t.Fatalf("outpost %v: %v\nstderr: %s", args, err, errOut)
	}
	return out
}

func (e *agentEnv) cliErr(stdin io.Reader, args ...string) (string, string, error) {
	cmd := exec.Command(outpostBin, args...)
	cmd.Env = append(os.Environ(), "OUTPOST_URL="+e.cp.url, "OUTPOST_TOKEN="+adminToken, "OUTPOST_WORKSPACE="+e.ws, "OUTPOST_AGENT="+e.id)
	cmd.Stdin = stdin
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return stdout.String(), stderr.String(), err
}

// TestFilesAndGitCLI drives `outpost fs` and `outpost git` against a real
// agent's root.
func TestFilesAndGitCLI(t *testing.T) {
	e := newAgentEnv(t)
	local := filepath.Join(t.TempDir(), "hello.txt")
	if err := os.WriteFile(local, []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := e.cli(t, nil, "fs", "put", "--mode", "0600", local, "docs/hello.txt")
	if !strings.Contains(out, "docs/hello.txt") || !strings.Contains(out, sha256Hex([]byte("hello\n"))) {
		t.Fatalf("put printed %q", out)
	}
	if fi, err := os.Stat(filepath.Join(e.root, "docs", "hello.txt")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("on the agent: %v %v", fi, err)
	}
	e.cli(t, strings.NewReader("from stdin"), "fs", "put", "-", "docs/in.txt")
	if out := e.cli(t, nil, "fs", "get", "docs/in.txt", "-"); out != "from stdin" {
		t.Fatalf("get - printed %q", out)
	}
	got := filepath.Join(t.TempDir(), "got.txt")
	e.cli(t, nil, "fs", "get", "docs/hello.txt", got)
	if b, _ := os.ReadFile(got); string(b) != "hello\n" {
		t.Fatalf("got %q", b)
	}
	ls := e.cli(t, nil, "fs", "ls", "-r")
	for _, want := range []string{"docs/", "docs/hello.txt", "docs/in.txt", "0600"} {
		if !strings.Contains(ls, want) {
			t.Errorf("ls lacks %q:\n%s", want, ls)
		}
	}
	if _, errOut, err := e.cliErr(nil, "fs", "rm", "docs"); err == nil || !strings.Contains(errOut, "not empty") {
		t.Fatalf("rm of a non-empty dir: %v %s", err, errOut)
	}
	e.cli(t, nil, "fs", "rm", "-r", "docs")
	if _, err := os.Stat(filepath.Join(e.root, "docs")); !os.IsNotExist(err) {
		t.Fatalf("docs still there: %v", err)
	}
	if _, errOut, err := e.cliErr(nil, "fs", "get", "../etc/passwd", "-"); err == nil || !strings.Contains(errOut, "outside") {
		t.Fatalf("escape: %v %s", err, errOut)
	}

	repo := filepath.Join(e.root, "repo")
	gitIn(t, e.root, "init", "-q", "repo")
	writeRepoFile(t, repo, "a.txt", "one\n")
	gitIn(t, repo, "add", ".")
	gitIn(t, repo, "commit", "-qm", "one")
	gitIn(t, repo, "mv", "a.txt", "b.txt")
	writeRepoFile(t, repo, "u.txt", "untracked\n")
	st := e.cli(t, nil, "git", "status", "repo")
	for _, want := range []string{"## main", "R  a.txt -> b.txt", "?? u.txt"} {
		if !strings.Contains(st, want) {
			t.Errorf("git status lacks %q:\n%s", want, st)
		}
	}
	diff := e.cli(t, nil, "git", "diff", "--staged", "repo")
	if !strings.Contains(diff, "rename from a.txt") || !strings.Contains(diff, "rename to b.txt") {
		t.Fatalf("git diff --staged:\n%s", diff)
	}
	if _, errOut, err := e.cliErr(nil, "git", "status", "docs-gone"); err == nil || errOut == "" {
		t.Fatalf("status of a missing dir: %v %q", err, errOut)
	}
}

func writeRepoFile(t *testing.T, repo, name, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(repo, name), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// gitIn runs git with a fixed identity.
func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "init.defaultBranch=main"}, args...)...)
	cmd.Dir = dir
	home := t.TempDir()
	cmd.Env = append(os.Environ(), "HOME="+home, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+filepath.Join(home, "gc"),
		"GIT_AUTHOR_NAME=E2E", "GIT_AUTHOR_EMAIL=e2e@example.com", "GIT_COMMITTER_NAME=E2E", "GIT_COMMITTER_EMAIL=e2e@example.com")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// writeRandom writes n reproducible pseudo-random bytes to name and returns
// their hex SHA-256.
func writeRandom(t *testing.T, name string, n int) string {
	t.Helper()
	data := make([]byte, n)
	r := rand.New(rand.NewPCG(uint64(n), 2))
	for i := 0; i+8 <= n; i += 8 {
		v := r.Uint64()
		for j := range 8 {
			data[i+j] = byte(v >> (8 * j))
		}
	}
	if err := os.WriteFile(name, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return sha256Hex(data)
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// peakRSS is a process's peak resident set (VmHWM) in bytes.
func peakRSS(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatalf("read status of %d: %v", pid, err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmHWM")
	return 0
}

// TestLargeFileThroughBinary puts and gets 128 MiB through the real
// binaries with `outpost fs`, compares SHA-256 on every side, and checks
// that the control plane's memory does not grow with the file: after a
// 32 MiB put and get have taken its peak RSS to what one transfer's window
// needs, the 128 MiB ones add less than a quarter of the file to it
// (holding the file would add at least 96 MiB).
func TestLargeFileThroughBinary(t *testing.T) {
	e := newAgentEnv(t)
	const size = 128 << 20
	dir := t.TempDir()
	src := filepath.Join(dir, "big.bin")
	want := writeRandom(t, src, size)
	small := filepath.Join(dir, "small.bin")
	writeRandom(t, small, size/4)
	e.cli(t, nil, "fs", "put", small, "small.bin")
	e.cli(t, nil, "fs", "get", "small.bin", filepath.Join(dir, "small-back.bin"))
	cpPID := e.cp.proc.cmd.Process.Pid
	before := peakRSS(t, cpPID)

	out := e.cli(t, nil, "fs", "put", src, "big/big.bin")
	if !strings.Contains(out, want) {
		t.Fatalf("put printed %q, want sha256 %s", out, want)
	}
	b, err := os.ReadFile(filepath.Join(e.root, "big", "big.bin"))
	if err != nil || sha256Hex(b) != want {
		t.Fatalf("agent's copy differs (%d bytes, %v)", len(b), err)
	}
	b = nil
	dst := filepath.Join(dir, "back.bin")
	e.cli(t, nil, "fs", "get", "big/big.bin", dst)
	b, err = os.ReadFile(dst)
	if err != nil || sha256Hex(b) != want {
		t.Fatalf("downloaded copy differs (%d bytes, %v)", len(b), err)
	}
	grew := peakRSS(t, cpPID) - before
	t.Logf("control plane peak RSS: %.1f MiB after 32 MiB, +%.1f MiB after 128 MiB", float64(before)/(1<<20), float64(grew)/(1<<20))
	if grew > size/4 {
		t.Fatalf("control plane peak RSS grew by %d bytes: the file was held in memory", grew)
	}
	var tmp []string
	filepath.WalkDir(e.root, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(d.Name(), ".outpost-tmp-") {
			tmp = append(tmp, p)
		}
		return nil
	})
	if len(tmp) > 0 {
		t.Fatalf("temporary files left: %v", tmp)
	}
}

// TestFilesAPIOverBinary calls every Files call of API.md once through the
// real binaries, statuses included.
func TestFilesAPIOverBinary(t *testing.T) {
	e := newAgentEnv(t)
	c := ctx(t)
	if _, err := e.target.Mkdir(c, "d/e", true); err != nil {
		t.Fatal(err)
	}
	if _, err := e.target.Put(c, "d/e/f.txt", strings.NewReader("0123456789"), 10, client.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	st, err := e.target.Stat(c, "d/e/f.txt")
	if err != nil || st.Size != 10 || st.Type != "file" || st.Mode != "0644" {
		t.Fatalf("stat = %+v, %v", st, err)
	}
	es, err := e.target.List(c, "d", true)
	if err != nil || len(es) != 2 || es[0].Path != "d/e" || es[1].Path != "d/e/f.txt" {
		t.Fatalf("list = %+v, %v", es, err)
	}
	f, err := e.target.GetRange(c, "d/e/f.txt", 3, 4)
	if err != nil {
		t.Fatal(err)
	}
	part, _ := io.ReadAll(f.Body)
	f.Body.Close()
	if string(part) != "3456" || f.Total != 10 {
		t.Fatalf("range = %q of %d", part, f.Total)
	}
	if _, err := e.target.Move(c, "d/e/f.txt", "d/g.txt", false); err != nil {
		t.Fatal(err)
	}
	if _, err := e.target.Put(c, "d/g.txt", strings.NewReader("x"), 1, client.PutOptions{NoOverwrite: true}); !isCode(err, wire.CodeConflict) {
		t.Fatalf("put without overwrite: %v", err)
	}
	if err := e.target.Remove(c, "d", false); !isCode(err, wire.CodeConflict) {
		t.Fatalf("remove non-empty: %v", err)
	}
	if err := e.target.Remove(c, "d", true); err != nil {
		t.Fatal(err)
	}
	if _, err := e.target.Stat(c, "d"); !isCode(err, wire.CodeNotFound) {
		t.Fatalf("stat removed: %v", err)
	}
	if _, err := e.target.Stat(c, "../x"); !isCode(err, wire.CodePermissionDenied) {
		t.Fatalf("stat outside: %v", err)
	}
	// Git through the binary: an unborn repository, committed.
	gitIn(t, e.root, "init", "-q", "r")
	writeRepoFile(t, filepath.Join(e.root, "r"), "x.bin", "\x00\x01bin")
	gs, err := e.target.GitStatus(c, "r")
	if err != nil || !gs.IsRepo || !gs.Branch.Unborn || len(gs.Entries) != 1 || gs.Entries[0].Kind != "untracked" {
		t.Fatalf("status = %+v, %v", gs, err)
	}
	gitIn(t, filepath.Join(e.root, "r"), "add", "x.bin")
	d, err := e.target.GitDiff(c, client.GitDiffOptions{Path: "r", Staged: true})
	if err != nil || len(d.Files) != 1 || !d.Files[0].Binary {
		t.Fatalf("diff = %+v, %v", d, err)
	}
	cm, err := e.target.GitCommit(c, client.GitCommitRequest{Path: "r", Message: "bin", AuthorName: "A", AuthorEmail: "a@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	log, err := e.target.GitLog(c, "r", 10)
	if err != nil || len(log) != 1 || log[0].OID != cm.OID {
		t.Fatalf("log = %+v, %v", log, err)
	}
	if _, err := e.target.GitApply(c, client.GitApplyRequest{Path: "r", Patch: "diff --git a/nope b/nope\n--- a/nope\n+++ b/nope\n@@ -1 +1 @@\n-a\n+b\n"}); !isCode(err, wire.CodeConflict) {
		t.Fatalf("apply of a patch that does not apply: %v", err)
	}
}

func isCode(err error, code wire.Code) bool {
	return wire.AsError(err) != nil && wire.AsError(err).Code == code
}

// TestPutShowsProgressOnATerminal runs `outpost fs put` with stderr on a
// pseudo-terminal: a large transfer draws a progress bar there, and with
// stderr on a pipe it draws nothing.
func TestPutShowsProgressOnATerminal(t *testing.T) {
	e := newAgentEnv(t)
	src := filepath.Join(t.TempDir(), "p.bin")
	writeRandom(t, src, 8<<20)
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer ptmx.Close()
	cmd := exec.Command(outpostBin, "fs", "put", src, "p.bin")
	cmd.Env = append(os.Environ(), "OUTPOST_URL="+e.cp.url, "OUTPOST_TOKEN="+adminToken, "OUTPOST_WORKSPACE="+e.ws, "OUTPOST_AGENT="+e.id)
	cmd.Stderr = tty
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tty.Close()
	screen := make(chan string, 1)
	go func() {
		b, _ := io.ReadAll(ptmx) // ends with EIO once the command exits
		screen <- string(b)
	}()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("put: %v", err)
	}
	got := <-screen
	if !strings.Contains(got, "100.0%") || !strings.Contains(got, "8.0 MiB / 8.0 MiB") {
		t.Fatalf("terminal showed %q", got)
	}
	if !strings.Contains(stdout.String(), "p.bin") {
		t.Fatalf("stdout %q", stdout.String())
	}
	_, errOut, err := e.cliErr(nil, "fs", "put", src, "p2.bin")
	if err != nil || errOut != "" {
		t.Fatalf("put with stderr on a pipe: %v, stderr %q", err, errOut)
	}
}
