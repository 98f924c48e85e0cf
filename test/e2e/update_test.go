package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/outposthq/outpost/controlplane/client"
)

// Self-update with real builds: agents built with -ldflags -X for their
// version and the release key, a releases directory published with
// `outpost release publish`, the control plane serving it.

var (
	buildsMu  sync.Mutex
	buildsDir string                // removed by runMain
	builds    = map[string]string{} // "version key" → binary
	sharedKey [2]string             // the release key file and public key most tests build with
)

// buildDir is the directory builds and the shared release key live in, made
// once per test binary run. Call with buildsMu held.
func buildDir(t *testing.T) string {
	t.Helper()
	if buildsDir == "" {
		d, err := os.MkdirTemp("", "outpost-e2e-builds")
		if err != nil {
			t.Fatal(err)
		}
		buildsDir = d
	}
	return buildsDir
}

// sharedReleaseKey is one release key pair for the whole run, so that the
// builds with it (agentBuild) are made once and reused by every test.
func sharedReleaseKey(t *testing.T) (string, string) {
	t.Helper()
	buildsMu.Lock()
	defer buildsMu.Unlock()
	if sharedKey[0] == "" {
		key := filepath.Join(buildDir(t), "release.key")
		sharedKey = [2]string{key, keygen(t, key)}
	}
	return sharedKey[0], sharedKey[1]
}

// agentBuild is `go build -tags agent` of the agent at version with
// releaseKey built in, made once per test binary run.
func agentBuild(t *testing.T, version, releaseKey string) string {
	t.Helper()
	buildsMu.Lock()
	defer buildsMu.Unlock()
	if b, ok := builds[version+" "+releaseKey]; ok {
		return b
	}
	out := filepath.Join(buildDir(t), fmt.Sprintf("outpost-%s-%d", version, len(builds)))
	cmd := exec.Command("go", "build", "-tags", "agent", "-o", out,
		"-ldflags", "-X main.version="+version+" -X main.releaseKey="+releaseKey, "../../cmd/outpost")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build %s: %v\n%s", version, err, b)
	}
	builds[version+" "+releaseKey] = out
	return out
}

// releaseKey makes a release key pair with `outpost release keygen` and
// returns the key file and the public key.
func releaseKey(t *testing.T) (string, string) {
	t.Helper()
	key := filepath.Join(privateDir(t), "release.key")
	return key, keygen(t, key)
}

// keygen makes a release key pair in file key and returns its public key.
func keygen(t *testing.T, key string) string {
	t.Helper()
	out := mustRunWithEnv(t, nil, "release", "keygen", "--key", key)
	_, pub, _ := strings.Cut(out, "public key: ")
	pub, _, _ = strings.Cut(pub, "\n")
	if pub == "" {
		t.Fatalf("no public key in:\n%s", out)
	}
	return pub
}

// updateEnv is a control plane serving a releases directory, and an agent
// of version 1.0.0 installed in a directory of its own, checking often.
type updateEnv struct {
	cp                *controlPlane
	releases, key     string
	pub               string
	exe, config, root string
	agent             *proc
	v1, v2            []byte // the two builds' bytes
	v2Path            string
}

func newUpdateEnv(t *testing.T, extra ...string) *updateEnv {
	t.Helper()
	e := &updateEnv{releases: t.TempDir()}
	e.key, e.pub = sharedReleaseKey(t)
	v1 := agentBuild(t, "1.0.0", e.pub)
	e.v2Path = agentBuild(t, "1.1.0", e.pub)
	e.v1, e.v2 = readFile(t, v1), readFile(t, e.v2Path)
	e.cp = startControlPlaneWith(t, cpConfig{releases: e.releases})
	e.cp.workspace("default")
	e.config = e.cp.enroll("default", "laptop", "")
	e.exe = filepath.Join(t.TempDir(), "bin", "outpost")
	if err := os.MkdirAll(filepath.Dir(e.exe), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(e.exe, e.v1, 0o755); err != nil {
		t.Fatal(err)
	}
	e.root = t.TempDir()
	args := append([]string{"agent", "run", "--config", e.config, "--root", e.root, "--update-check", "300ms", "--update-window", "20s"}, extra...)
	e.agent = startCommand(t, nil, exec.Command(e.exe, args...))
	e.waitVersion(t, "1.0.0")
	return e
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// publish publishes binary as version for this platform, signed with key.
func (e *updateEnv) publish(t *testing.T, key, version, binary string) {
	t.Helper()
	mustRunWithEnv(t, nil, "release", "publish", "--key", key, "--dir", e.releases, "--version", version, goPlatform(t)+"="+binary)
}

func goPlatform(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOOS", "GOARCH").Output()
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(out))
	return f[0] + "/" + f[1]
}

// waitVersion waits for the agent to be online with version v.
func (e *updateEnv) waitVersion(t *testing.T, v string) {
	t.Helper()
	waitFor(t, statusTimeout*2, "agent online at "+v, func() error {
		a, err := e.cp.cl.GetAgent(ctx(t), "default", "laptop")
		if err != nil {
			return err
		}
		if a.Status != "online" || a.Version != v {
			return fmt.Errorf("%s at %s", a.Status, a.Version)
		}
		return nil
	})
}

// waitUpdated waits for the update's handoff to end (the trial, running
// the staged binary, serves at the new version for a moment before) and
// the agent to be online at version v.
func (e *updateEnv) waitUpdated(t *testing.T, v string) {
	t.Helper()
	e.waitLog(t, "updated; restarting as the new version")
	e.waitVersion(t, v)
}

// waitLog waits for the agent's log to say s.
func (e *updateEnv) waitLog(t *testing.T, s string) {
	t.Helper()
	waitFor(t, statusTimeout*2, "the agent to log "+s, func() error {
		if !strings.Contains(e.agent.output(), s) {
			return errStatus("not yet")
		}
		return nil
	})
}

func (e *updateEnv) binaryIs(t *testing.T, want []byte, what string) {
	t.Helper()
	if !bytes.Equal(readFile(t, e.exe), want) {
		t.Fatalf("the installed binary is not %s", what)
	}
}

func TestSelfUpdate(t *testing.T) {
	e := newUpdateEnv(t)
	pid := e.agent.cmd.Process.Pid
	e.publish(t, e.key, "1.1.0", e.v2Path)
	e.waitUpdated(t, "1.1.0")
	e.binaryIs(t, e.v2, "the new build")
	if !bytes.Equal(readFile(t, e.exe+".previous"), e.v1) {
		t.Fatal("the previous build was not kept")
	}
	select {
	case <-e.agent.done:
		t.Fatal("the agent process ended: a service manager would have seen it stop")
	default:
	}
	if e.agent.cmd.Process.Pid != pid {
		t.Fatal("pid changed")
	}
	env := []string{"OUTPOST_URL=" + e.cp.url, "OUTPOST_TOKEN=" + adminToken}
	if out := mustRunWithEnv(t, env, "exec", "--agent", "laptop", "--", "echo", "updated"); strings.TrimSpace(out) != "updated" {
		t.Fatalf("exec after the update: %q", out)
	}
}

func TestSelfUpdateRefusesABadSignature(t *testing.T) {
	e := newUpdateEnv(t)
	otherKey, _ := releaseKey(t)
	e.publish(t, otherKey, "1.1.0", e.v2Path)
	e.waitLog(t, "signature does not verify")
	e.binaryIs(t, e.v1, "the old build")
	e.waitVersion(t, "1.0.0")
	if strings.Contains(e.agent.output(), "downloading update") {
		t.Fatal("the agent downloaded a release whose manifest it could not verify")
	}
}

func TestSelfUpdateRefusesABadHash(t *testing.T) {
	e := newUpdateEnv(t)
	// Publish elsewhere, swap the binary after signing (the manifest's
	// hash no longer matches what is served), then move the release in,
	// the manifest last.
	staging := t.TempDir()
	mustRunWithEnv(t, nil, "release", "publish", "--key", e.key, "--dir", staging, "--version", "1.1.0", goPlatform(t)+"="+e.v2Path)
	name := "outpost-1.1.0-" + strings.ReplaceAll(goPlatform(t), "/", "-")
	if err := os.WriteFile(filepath.Join(staging, name), append(append([]byte{}, e.v2...), 0), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{name, "manifest.json.sig", "manifest.json"} {
		if err := os.Rename(filepath.Join(staging, f), filepath.Join(e.releases, f)); err != nil {
			t.Fatal(err)
		}
	}
	e.waitLog(t, "sha256 does not match")
	e.binaryIs(t, e.v1, "the old build")
	e.waitVersion(t, "1.0.0")
	left, _ := filepath.Glob(filepath.Join(filepath.Dir(e.exe), ".outpost-update-*"))
	if len(left) != 0 {
		t.Fatalf("a refused download was left behind: %v", left)
	}
}

// A new binary that exits at start (/bin/false) is rolled back: the old one
// serves again, and that version is not tried again.
func TestSelfUpdateRollsBackABinaryThatExitsAtStart(t *testing.T) {
	e := newUpdateEnv(t)
	e.publish(t, e.key, "1.1.0", "/bin/false")
	e.waitLog(t, "did not come online; rolled back")
	e.binaryIs(t, e.v1, "the old build, kept")
	e.waitVersion(t, "1.0.0")
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(e.exe), ".outpost-update-*")); len(left) != 0 {
		t.Fatalf("the rolled-back download was left behind: %v", left)
	}
	if got := strings.TrimSpace(string(readFile(t, e.config+".update-failed"))); got != "1.1.0" {
		t.Fatalf("failed version recorded: %q", got)
	}
	// Later checks skip 1.1.0: it is downloaded once.
	e.waitLog(t, "agent serving")
	if n := strings.Count(e.agent.output(), "downloading update"); n != 1 {
		t.Fatalf("the failed version was downloaded %d times", n)
	}
	// A fixed release of a newer version goes through.
	e.publish(t, e.key, "1.1.1", e.v2Path)
	e.waitUpdated(t, "1.1.0") // the build says 1.1.0; it is what runs now
	e.binaryIs(t, e.v2, "the new build")
}

// While a process runs the update waits; once it ends the agent updates.
func TestSelfUpdateWaitsForARunningProcess(t *testing.T) {
	e := newUpdateEnv(t)
	target := e.cp.cl.Agent("default", "laptop")
	p, err := target.StartProcess(ctx(t), client.StartProcessRequest{Argv: []string{"sleep", "300"}})
	if err != nil {
		t.Fatal(err)
	}
	e.publish(t, e.key, "1.1.0", e.v2Path)
	e.waitLog(t, "update deferred until live work ends")
	e.waitVersion(t, "1.0.0")
	e.binaryIs(t, e.v1, "the old build, while the process runs")
	if _, err := target.Terminate(ctx(t), p.ID); err != nil {
		t.Fatal(err)
	}
	e.waitUpdated(t, "1.1.0")
	e.binaryIs(t, e.v2, "the new build")
}

// --no-update and the workspace's setting keep an agent where it is.
func TestSelfUpdateTurnedOff(t *testing.T) {
	t.Run("no-update flag", func(t *testing.T) {
		e := newUpdateEnv(t, "--no-update")
		e.publish(t, e.key, "1.1.0", e.v2Path)
		e.checkStays(t)
	})
	t.Run("workspace setting", func(t *testing.T) {
		e := newUpdateEnv(t)
		env := []string{"OUTPOST_URL=" + e.cp.url, "OUTPOST_TOKEN=" + adminToken}
		if out := mustRunWithEnv(t, env, "workspace"); !strings.Contains(out, "workspace default\n") || !strings.Contains(out, "agent updates:  on\n") {
			t.Fatalf("outpost workspace:\n%s", out)
		}
		if out := mustRunWithEnv(t, env, "workspace", "set", "--agent-updates", "off"); !strings.Contains(out, "agent updates:  off\n") {
			t.Fatalf("outpost workspace set --agent-updates off:\n%s", out)
		}
		if w, err := e.cp.cl.GetWorkspace(ctx(t), "default"); err != nil || w.AgentUpdates {
			t.Fatalf("after set --agent-updates off the API says %+v, %v", w, err)
		}
		e.publish(t, e.key, "1.1.0", e.v2Path)
		e.checkStays(t)
		var w client.Workspace
		if err := json.Unmarshal([]byte(mustRunWithEnv(t, env, "workspace", "set", "--agent-updates", "on", "--json")), &w); err != nil || w.ID != "default" || !w.AgentUpdates {
			t.Fatalf("outpost workspace set --agent-updates on --json: %+v, %v", w, err)
		}
		e.waitVersion(t, "1.1.0")
	})
}

// checkStays watches the agent through many of its checks (every 300 ms)
// and sees it neither download nor change.
func (e *updateEnv) checkStays(t *testing.T) {
	t.Helper()
	time.Sleep(quietPeriod * 15) // a window watched, not a synchronisation
	if strings.Contains(e.agent.output(), "downloading update") {
		t.Fatalf("the agent downloaded an update with updates off:\n%s", e.agent.output())
	}
	e.binaryIs(t, e.v1, "the old build")
	e.waitVersion(t, "1.0.0")
}
