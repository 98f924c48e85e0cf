package enroll

import (
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/outposthq/outpost/internal/secretfile"
)

// TestPrepareConfig: missing directories are made 0700 and the config lands
// 0600; a path that cannot hold a config fails in PrepareConfig, before an
// enrollment would send its token, and leaves nothing behind.
func TestPrepareConfig(t *testing.T) {
	base := t.TempDir()
	file := filepath.Join(base, "regular")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		path    string
		newDirs bool   // its directories are made here
		wantErr string // "" when it works
	}{
		{"existing directory", filepath.Join(base, "agent.json"), false, ""},
		{"missing directories", filepath.Join(base, "new", "deeper", "agent.json"), true, ""},
		{"under a regular file", filepath.Join(file, "agent.json"), false, "cannot make its directory"},
		{"deep under a regular file", filepath.Join(file, "sub", "agent.json"), false, "cannot make its directory"},
		{"a directory", base, false, "is a directory"},
		{"empty", "", false, "no path"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := PrepareConfig(tt.path)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("PrepareConfig(%q) = %v, want an error saying %q", tt.path, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("PrepareConfig(%q): %v", tt.path, err)
			}
			c := testConfig(t)
			if err := p.Save(c); err != nil {
				t.Fatalf("Save: %v", err)
			}
			p.Discard() // a no-op after Save
			got, err := LoadConfig(tt.path)
			if err != nil || !reflect.DeepEqual(got, c) {
				t.Fatalf("LoadConfig = %v, %v; want %v", got, err, c)
			}
			if tt.newDirs && runtime.GOOS != "windows" {
				for _, d := range []string{filepath.Dir(tt.path), filepath.Dir(filepath.Dir(tt.path))} {
					if fi, err := os.Stat(d); err != nil || fi.Mode().Perm() != secretfile.DirMode {
						t.Errorf("directory %s: %v, %v; want mode %v", d, fi.Mode(), err, secretfile.DirMode)
					}
				}
			}
		})
	}
	if leftovers := tempLeftovers(t, base); len(leftovers) > 0 {
		t.Fatalf("temporary files left: %v", leftovers)
	}
}

// TestPendingConfigDiscard: a discarded config leaves no file.
func TestPendingConfigDiscard(t *testing.T) {
	dir := t.TempDir()
	p, err := PrepareConfig(filepath.Join(dir, "agent.json"))
	if err != nil {
		t.Fatal(err)
	}
	p.Discard()
	p.Discard()
	if err := p.Save(testConfig(t)); err == nil {
		t.Fatal("Save after Discard worked")
	}
	if es, _ := os.ReadDir(dir); len(es) != 0 {
		t.Fatalf("files left after Discard: %v", es)
	}
}

// tempLeftovers lists temporary config files under dir.
func tempLeftovers(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.Contains(d.Name(), ".tmp-") {
			out = append(out, p)
		}
		return nil
	})
	return out
}
