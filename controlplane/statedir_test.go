package controlplane

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestStartRefusesWeakSecrets: a state dir others may enter, an admin
// token file others may read, and an admin token shorter than 32
// characters each stop Start with what to do.
func TestStartRefusesWeakSecrets(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("modes do not guard files on Windows")
	}
	const goodToken = "opadm_0123456789abcdefghijklmnopqrstuv"
	tests := []struct {
		name string
		// prepare readies the state dir and may change the config.
		prepare func(t *testing.T, cfg *Config)
		want    string
	}{
		{"state dir readable by the group", func(t *testing.T, cfg *Config) { chmod(t, cfg.StateDir, 0o750) }, "chmod 700 " + "STATE"},
		{"state dir open to others", func(t *testing.T, cfg *Config) { chmod(t, cfg.StateDir, 0o701) }, "chmod 700 " + "STATE"},
		{"token file readable by others", func(t *testing.T, cfg *Config) {
			writeToken(t, cfg.StateDir, goodToken, 0o644)
		}, "chmod 600 " + "STATE/" + adminTokenFile},
		{"token file writable by the group", func(t *testing.T, cfg *Config) {
			writeToken(t, cfg.StateDir, goodToken, 0o620)
		}, "chmod 600"},
		{"short token in the file", func(t *testing.T, cfg *Config) {
			writeToken(t, cfg.StateDir, "opadm_short", 0o600)
		}, "at least 32"},
		{"short configured token", func(t *testing.T, cfg *Config) { cfg.AdminToken = goodToken[:31] }, "at least 32"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig(t)
			tt.prepare(t, &cfg)
			s, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			err = s.Start(context.Background())
			if err == nil {
				s.Close()
				t.Fatal("started")
			}
			if want := strings.ReplaceAll(tt.want, "STATE", cfg.StateDir); !strings.Contains(err.Error(), want) {
				t.Fatalf("error %q does not say %q", err, want)
			}
		})
	}

	// The same secrets, owner-only and long enough, start.
	cfg := testConfig(t)
	writeToken(t, cfg.StateDir, goodToken, 0o600)
	if s := startServer(t, cfg); s.AdminToken() != goodToken || s.AdminTokenGenerated() {
		t.Fatalf("token %q (generated %v), want the file's", s.AdminToken(), s.AdminTokenGenerated())
	}
	cfg = testConfig(t)
	cfg.AdminToken = goodToken[:32]
	if s := startServer(t, cfg); s.AdminToken() != goodToken[:32] || s.AdminTokenGenerated() {
		t.Fatalf("token %q (generated %v), want the configured one", s.AdminToken(), s.AdminTokenGenerated())
	}
}

// TestAdminTokenGeneratedOnce: a fresh state dir (made owner-only) gets a
// generated token, and Start says so once; a restart reuses it and does
// not say so.
func TestAdminTokenGeneratedOnce(t *testing.T) {
	cfg := testConfig(t)
	cfg.StateDir = filepath.Join(cfg.StateDir, "new", "state")
	s1 := startServer(t, cfg)
	if !s1.AdminTokenGenerated() || len(s1.AdminToken()) < minAdminTokenLen || s1.AdminTokenFile() != filepath.Join(cfg.StateDir, adminTokenFile) {
		t.Fatalf("first start: token %q, generated %v, file %s", s1.AdminToken(), s1.AdminTokenGenerated(), s1.AdminTokenFile())
	}
	if fi, err := os.Stat(cfg.StateDir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("new state dir: %v %v, want mode 0700", fi, err)
	}
	tok := s1.AdminToken()
	if err := s1.Close(); err != nil {
		t.Fatal(err)
	}
	s2 := startServer(t, cfg)
	if s2.AdminTokenGenerated() || s2.AdminToken() != tok {
		t.Fatalf("restart: token %q (generated %v), want %q again, not generated", s2.AdminToken(), s2.AdminTokenGenerated(), tok)
	}
}

func chmod(t *testing.T, path string, mode os.FileMode) {
	t.Helper()
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

func writeToken(t *testing.T, dir, tok string, mode os.FileMode) {
	t.Helper()
	path := filepath.Join(dir, adminTokenFile)
	if err := os.WriteFile(path, []byte(tok+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	chmod(t, path, mode)
}
