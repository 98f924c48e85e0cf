package agent_test

import (
	"os"
	"path/filepath"
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
