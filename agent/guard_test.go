package agent_test

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/outposthq/outpost/agent"
	"github.com/outposthq/outpost/agent/policy"
	"github.com/outposthq/outpost/rpc"
	"github.com/outposthq/outpost/wire"
)

// openPolicy writes text to a policy file and opens it.
func openPolicy(t *testing.T, text string) *policy.File {
	t.Helper()
	name := filepath.Join(t.TempDir(), "policy.json")
	if err := os.WriteFile(name, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	pf, err := policy.Open(name, nil)
	if err != nil {
		t.Fatal(err)
	}
	return pf
}

// A body the policy's decoding refuses is refused, not handed to a handler
// that would decode what it needs and skip the rest unchecked (here a
// "paths" of the wrong type beside a denied "path").
func TestPolicyRefusesABodyItCannotCheck(t *testing.T) {
	w := newWorld(t)
	os.MkdirAll(filepath.Join(w.root, "secret"), 0o700)
	os.WriteFile(filepath.Join(w.root, "secret", "key"), []byte("k"), 0o600)
	r := w.start(t, agent.Config{Policy: openPolicy(t, `{"denyPaths": ["secret"]}`)})
	w.waitOnline(t, r.a.Instance())
	for _, op := range []string{wire.OpFsStat, wire.OpFsRead} {
		var res wire.FileEntry
		err := w.calls.Call(tctx(t), laptop, op, map[string]any{"path": "secret/key", "paths": 5}, &res, rpc.CallOptions{})
		if we := wire.AsError(err); we == nil || we.Code != wire.CodeInvalidArgument {
			t.Errorf("%s of a denied path with an undecodable field: %v %+v, want invalid_argument", op, err, res)
		}
	}
	// The same path in a well-formed body is the policy's denial.
	err := w.calls.Call(tctx(t), laptop, wire.OpFsStat, map[string]any{"path": "secret/key"}, nil, rpc.CallOptions{})
	if we := wire.AsError(err); we == nil || we.Reason != wire.ReasonPolicy {
		t.Fatalf("stat of a denied path: %v", err)
	}
}

// A link swapped between the policy's check and the open (an archive or a
// restore can write links) does not get a denied file read: the open file
// itself is checked where the system says which file it is (Linux).
func TestPolicyOpenedFileIsChecked(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the opened file's path comes from /proc")
	}
	w := newWorld(t)
	os.MkdirAll(filepath.Join(w.root, "secret"), 0o700)
	os.MkdirAll(filepath.Join(w.root, "public"), 0o755)
	os.WriteFile(filepath.Join(w.root, "secret", "key"), []byte("SECRET"), 0o600)
	os.WriteFile(filepath.Join(w.root, "public", "key"), []byte("public"), 0o644)
	link := filepath.Join(w.root, "dir")
	os.Symlink("public", link)
	a, err := agent.New(agent.Config{Identity: w.ident, Root: w.root, Policy: openPolicy(t, `{"denyPaths": ["secret"]}`)})
	if err != nil {
		t.Fatal(err)
	}
	read := map[string]any{"path": "dir/key", "len": 1024}
	if err := a.CheckThenHandle(wire.OpFsOpen, read, func() {}); err != nil {
		t.Fatalf("read through a link to an allowed directory: %v", err)
	}
	swap := func() {
		os.Remove(link)
		os.Symlink("secret", link)
	}
	err = a.CheckThenHandle(wire.OpFsOpen, read, swap)
	if we := wire.AsError(err); we == nil || we.Reason != wire.ReasonPolicy || !strings.Contains(we.Message, `"denyPaths"`) {
		t.Fatalf("read after the link was swapped to the denied directory: %v, want policy naming denyPaths", err)
	}
}
