package agent

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nkeys"
	"github.com/outposthq/outpost/agent/audit"
	"github.com/outposthq/outpost/agent/policy"
	"github.com/outposthq/outpost/enroll"
	"github.com/outposthq/outpost/wire"
)

// benchIdentity is a valid identity that never connects.
func benchIdentity(b *testing.B) *enroll.Config {
	b.Helper()
	user, _ := nkeys.CreateUser()
	seed, _ := user.Seed()
	pub, _ := user.PublicKey()
	acct, _ := nkeys.CreateAccount()
	tok, err := jwt.NewUserClaims(pub).Encode(acct)
	if err != nil {
		b.Fatal(err)
	}
	return &enroll.Config{URL: "http://127.0.0.1:1", Workspace: "ws", Agent: "bench", NATSURLs: []string{"nats://127.0.0.1:1"}, JWT: tok, Seed: string(seed)}
}

// BenchmarkDispatchStat is one fs.stat through the agent's dispatch, bare
// and under a policy with denyPaths and an audit log: the cost of the
// owner's controls per call (the ratio of the two).
func BenchmarkDispatchStat(b *testing.B) {
	root := b.TempDir()
	os.MkdirAll(filepath.Join(root, "src", "pkg"), 0o755)
	os.WriteFile(filepath.Join(root, "src", "pkg", "main.go"), []byte("package main\n"), 0o644)
	polFile := filepath.Join(b.TempDir(), "policy.json")
	os.WriteFile(polFile, []byte(`{"fs": "read-only", "commands": ["git"], "denyPaths": [".ssh", ".env", "**/*.pem"]}`), 0o600)
	for _, tc := range []struct {
		name     string
		controls bool
	}{{"bare", false}, {"policy+audit", true}} {
		b.Run(tc.name, func(b *testing.B) {
			cfg := Config{Identity: benchIdentity(b), Root: root}
			if tc.controls {
				pf, err := policy.Open(polFile, nil)
				if err != nil {
					b.Fatal(err)
				}
				al, err := audit.Open(filepath.Join(b.TempDir(), "audit.jsonl"), 0)
				if err != nil {
					b.Fatal(err)
				}
				defer al.Close()
				cfg.Policy, cfg.Audit = pf, al
			}
			a, err := New(cfg)
			if err != nil {
				b.Fatal(err)
			}
			defer a.procs.Close()
			defer a.files.close()
			req, err := wire.NewRequest(wire.OpFsStat, nil, time.Now().Add(time.Hour))
			if err != nil {
				b.Fatal(err)
			}
			data, err := wire.EncodeRequest(req, &wire.FsPathRequest{Path: "src/pkg/main.go"})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				reply, _ := a.handle(context.Background(), data)
				if resp, err := wire.DecodeResponse(reply); err != nil || resp.Error != nil {
					b.Fatalf("stat: %v %v", err, resp.Error)
				}
			}
		})
	}
}
