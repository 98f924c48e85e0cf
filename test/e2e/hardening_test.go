package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/outposthq/outpost/controlplane/client"
	"github.com/outposthq/outpost/internal/tmpfs"
	"github.com/outposthq/outpost/wire"
)

// tempFilesUnder lists the agent's temporary files anywhere under dir.
func tempFilesUnder(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(d.Name(), ".outpost-tmp-") {
			out = append(out, p)
		}
		return nil
	})
	return out
}

// newAgentEnvWith is newAgentEnv with env added to the agent's environment.
func newAgentEnvWith(t *testing.T, env []string) *agentEnv {
	t.Helper()
	cp := startControlPlane(t)
	e := &agentEnv{cp: cp, ws: cp.workspace("w1"), id: "a1", root: t.TempDir()}
	cfg := cp.enroll(e.ws, e.id, "")
	e.agent = &agentProc{proc: startProc(t, env, "agent", "run", "--config", cfg, "--root", e.root), config: cfg, root: e.root}
	cp.waitStatus(e.ws, e.id, "online")
	e.target = cp.cl.Agent(e.ws, e.id)
	return e
}

// call sends one request to the agent's HTTP API prefix and returns the
// status and the error of the response (zero when there is none).
func (e *agentEnv) call(t *testing.T, method, path string, body io.Reader) (int, wire.Error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx(t), method, e.cp.url+"/v1/workspaces/"+e.ws+"/agents/"+e.id+path, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+adminToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var eb struct {
		Error wire.Error `json:"error"`
	}
	b, _ := io.ReadAll(resp.Body)
	json.Unmarshal(b, &eb)
	return resp.StatusCode, eb.Error
}

// putRaw uploads body to path through the HTTP API and returns the status
// and the error code of the response.
func (e *agentEnv) putRaw(t *testing.T, path string, body []byte) (int, string) {
	t.Helper()
	status, we := e.call(t, http.MethodPut, "/fs/file?"+url.Values{"path": {path}, "overwrite": {"true"}}.Encode(), bytes.NewReader(body))
	return status, string(we.Code)
}

// jsonBody encodes v.
func jsonBody(t *testing.T, v any) io.Reader {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.NewReader(b)
}

// TestUnstartableCommandIs400: NUL bytes in argv, command, cwd or env, and
// an argument list over the system's limit, are 400 invalid_argument from
// exec and from starting a process, never 500, and the message shows
// neither the agent's PATH nor its environment.
func TestUnstartableCommandIs400(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "agent-secret-bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "myprog"), []byte("#!/bin/sh\necho \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	agentPath := bin + string(os.PathListSeparator) + os.Getenv("PATH")
	e := newAgentEnvWith(t, []string{"PATH=" + agentPath, "AGENT_SECRET=s3cr3t-value"})
	if res, err := e.target.Exec(ctx(t), client.ExecRequest{Argv: []string{"myprog", "ok"}}); err != nil || res.Stdout != "ok\n" {
		t.Fatalf("myprog from the agent's PATH: %+v, %v", res, err)
	}
	huge := strings.Repeat("a", 256<<10)
	tests := []struct {
		name      string
		processes bool // also through POST /processes (64 KiB body limit)
		req       client.ExecRequest
	}{
		{"NUL in argv", true, client.ExecRequest{Argv: []string{"myprog", "a\x00b"}}},
		{"NUL in argv0", true, client.ExecRequest{Argv: []string{"my\x00prog"}}},
		{"NUL in command", true, client.ExecRequest{Command: "echo a\x00b"}},
		{"NUL in cwd", true, client.ExecRequest{Argv: []string{"myprog"}, Cwd: "a\x00b"}},
		{"NUL in env", true, client.ExecRequest{Argv: []string{"myprog"}, Env: map[string]string{"K": "a\x00b"}}},
		{"one argument too long", false, client.ExecRequest{Argv: []string{"myprog", huge}}},
		{"argument list too long", false, client.ExecRequest{Argv: append([]string{"myprog"}, slices.Repeat([]string{strings.Repeat("b", 1<<10)}, 4096)...)}},
		{"command too long", false, client.ExecRequest{Command: "echo " + huge}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			check := func(via string, status int, we wire.Error) {
				t.Helper()
				if status != http.StatusBadRequest || we.Code != wire.CodeInvalidArgument {
					t.Fatalf("%s: %d %+v, want 400 invalid_argument", via, status, we)
				}
				for _, leak := range []string{"agent-secret-bin", "s3cr3t-value", agentPath} {
					if strings.Contains(we.Message, leak) {
						t.Fatalf("%s: message %.300q shows %.60q", via, we.Message, leak)
					}
				}
			}
			status, we := e.call(t, http.MethodPost, "/exec", jsonBody(t, tt.req))
			check("exec", status, we)
			if tt.processes {
				status, we = e.call(t, http.MethodPost, "/processes", jsonBody(t, client.StartProcessRequest{
					Argv: tt.req.Argv, Command: tt.req.Command, Cwd: tt.req.Cwd, Env: tt.req.Env,
				}))
				check("processes", status, we)
			}
		})
	}
}

// TestDiskFullIs507 fills a 1 MiB disk under the agent's root through the
// HTTP API, with one write (1.5 MiB) and with a chunked upload (3 MiB):
// each is 507 insufficient_storage, the old file keeps its content, no
// temporary file stays, and the disk takes a small file afterwards.
func TestDiskFullIs507(t *testing.T) {
	e := newAgentEnv(t)
	full := filepath.Join(e.root, "full")
	if err := os.Mkdir(full, 0o755); err != nil {
		t.Fatal(err)
	}
	tmpfs.Mount(t, full, 1<<20)
	if err := os.WriteFile(filepath.Join(full, "f.txt"), []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, size := range []int{3 << 19, 3 << 20} {
		status, code := e.putRaw(t, "full/f.txt", bytes.Repeat([]byte("x"), size))
		if status != http.StatusInsufficientStorage || code != "insufficient_storage" {
			t.Fatalf("put of %d bytes: %d %q, want 507 insufficient_storage", size, status, code)
		}
		if b, err := os.ReadFile(filepath.Join(full, "f.txt")); err != nil || string(b) != "old" {
			t.Fatalf("after put of %d bytes the file holds %.20q (%v), want the old content", size, b, err)
		}
		if tmp := tempFilesUnder(t, e.root); len(tmp) > 0 {
			t.Fatalf("after put of %d bytes temporary files are left: %v", size, tmp)
		}
	}
	if status, code := e.putRaw(t, "full/small.txt", []byte("fits")); status != http.StatusOK {
		t.Fatalf("small put after the full ones: %d %q", status, code)
	}
}

// TestCrashMidUploadLeavesNoTempFile kills the agent (SIGKILL) while an
// upload is half sent, so its temporary file stays; the restarted agent
// removes it, and the old file keeps its content.
func TestCrashMidUploadLeavesNoTempFile(t *testing.T) {
	e := newAgentEnv(t)
	if err := os.WriteFile(filepath.Join(e.root, "f.bin"), []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	pr, pw := io.Pipe()
	putCtx, cancel := context.WithCancel(ctx(t))
	defer cancel()
	putDone := make(chan error, 1)
	go func() {
		_, err := e.target.Put(putCtx, "f.bin", pr, 8<<20, client.PutOptions{})
		putDone <- err
	}()
	// More than one chunk, so the upload is begun and a chunk written; the
	// rest never comes.
	go pw.Write(bytes.Repeat([]byte("y"), 5<<20))
	waitFor(t, statusTimeout, "a temporary file with content", func() error {
		for _, p := range tempFilesUnder(t, e.root) {
			if fi, err := os.Stat(p); err == nil && fi.Size() > 0 {
				return nil
			}
		}
		return errors.New("none yet")
	})
	e.agent.kill()
	if tmp := tempFilesUnder(t, e.root); len(tmp) == 0 {
		t.Fatal("the killed agent left no temporary file: the test proves nothing")
	}
	cancel()
	pw.CloseWithError(errors.New("client gone"))
	<-putDone

	e.agent = startAgent(t, e.agent.config, e.root)
	// The killed instance's lease can still say "online": wait for an
	// answer, which only the new instance gives, after its sweep.
	waitFor(t, statusTimeout, "the restarted agent serving", func() error {
		_, err := e.target.List(ctx(t), "", true)
		return err
	})
	if tmp := tempFilesUnder(t, e.root); len(tmp) > 0 {
		t.Fatalf("temporary files after the restart: %v", tmp)
	}
	if b, err := os.ReadFile(filepath.Join(e.root, "f.bin")); err != nil || string(b) != "old" {
		t.Fatalf("f.bin = %.20q, %v; want the old content", b, err)
	}
	es, err := e.target.List(ctx(t), "", true)
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 1 || es[0].Path != "f.bin" {
		t.Fatalf("list after the restart = %+v, want only f.bin", es)
	}
}

// processOutput reads process id's stdout until it closes.
func processOutput(t *testing.T, target *client.Target, id string) string {
	t.Helper()
	var out strings.Builder
	err := target.Events(ctx(t), id, 0, func(ev client.ProcessEvent) error {
		if ev.Kind == client.EventOutput && ev.Chunk.Stream == "stdout" {
			out.Write(ev.Chunk.Data)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("events of %s: %v", id, err)
	}
	return out.String()
}

// TestCommandsDoNotSeeAgentSecrets: an agent started with OUTPOST_TOKEN and
// OUTPOST_ADMIN_TOKEN in its environment runs `env` through exec and as a
// process; neither shows them, while HOME, PATH and a variable the request
// sets pass.
func TestCommandsDoNotSeeAgentSecrets(t *testing.T) {
	e := newAgentEnvWith(t, []string{"OUTPOST_TOKEN=secret-token", "OUTPOST_ADMIN_TOKEN=secret-admin", "HOME=/home/e2e-agent"})
	env := map[string]string{"ASKED": "yes"}
	res, err := e.target.Exec(ctx(t), client.ExecRequest{Argv: []string{"env"}, Env: env})
	if err != nil {
		t.Fatal(err)
	}
	started, err := e.target.StartProcess(ctx(t), client.StartProcessRequest{Argv: []string{"env"}, Env: env})
	if err != nil {
		t.Fatal(err)
	}
	for via, out := range map[string]string{"exec": res.Stdout, "process": processOutput(t, e.target, started.ID)} {
		for _, bad := range []string{"OUTPOST_TOKEN", "secret-token", "OUTPOST_ADMIN_TOKEN", "secret-admin"} {
			if strings.Contains(out, bad) {
				t.Errorf("%s: the command's environment holds %q:\n%s", via, bad, out)
			}
		}
		for _, good := range []string{"\nHOME=/home/e2e-agent\n", "\nPATH=", "\nASKED=yes\n"} {
			if !strings.Contains("\n"+out, good) {
				t.Errorf("%s: the command's environment lacks %q:\n%s", via, good, out)
			}
		}
	}
}

// TestEnrollKeepsTokenWhenConfigCannotBeWritten: `outpost agent enroll` to
// a config path it cannot write (under a regular file; a directory) fails
// with a clear error and does not spend the single-use token: the same
// token then enrolls with a path whose directories do not exist yet, which
// are made 0700.
func TestEnrollKeepsTokenWhenConfigCannotBeWritten(t *testing.T) {
	cp := startControlPlane(t)
	ws := cp.workspace("w1")
	tok, err := cp.cl.CreateEnrollmentToken(ctx(t), ws, client.EnrollmentTokenRequest{Agent: "a1"})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	regular := filepath.Join(dir, "regular")
	if err := os.WriteFile(regular, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	enroll := func(config string) (string, error) {
		out, err := exec.Command(outpostBin, "agent", "enroll", "--url", cp.url, "--token", tok.Token, "--config", config).CombinedOutput()
		return string(out), err
	}
	for _, bad := range []string{filepath.Join(regular, "sub", "agent.json"), dir} {
		out, err := enroll(bad)
		if err == nil {
			t.Fatalf("enroll to %s worked:\n%s", bad, out)
		}
		if !strings.Contains(out, "token is still unused") {
			t.Errorf("enroll to %s: %v\n%s\nwant an error saying the token is unused", bad, err, out)
		}
	}
	good := filepath.Join(dir, "new", "agent.json")
	if out, err := enroll(good); err != nil {
		t.Fatalf("enroll with the same token to %s: %v\n%s", good, err, out)
	}
	if fi, err := os.Stat(filepath.Dir(good)); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("config directory: %v, %v; want mode 0700", fi, err)
	}
	if fi, err := os.Stat(good); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("config: %v, %v; want mode 0600", fi, err)
	}
	a := startAgent(t, good, t.TempDir())
	cp.waitStatus(ws, "a1", "online")
	a.stop()
}
