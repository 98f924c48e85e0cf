package release

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/outposthq/outpost/agent/update"
)

// What Publish writes verifies with the key's public half, and names the
// binaries with their hashes; another key's public half refuses it.
func TestPublishVerifies(t *testing.T) {
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "release.key")
	pubB64, err := WriteKey(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(keyFile); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v", fi, err)
	}
	if _, err := WriteKey(keyFile); err == nil {
		t.Fatal("WriteKey overwrote a key")
	}
	key, err := LoadKey(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "outpost")
	if err := os.WriteFile(bin, []byte("a build"), 0o755); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "releases")
	if _, err := Publish(out, "1.2.3", key, []Binary{{Platform: "linux/amd64", Path: bin}, {Platform: "windows/amd64", Path: bin}}, false); err != nil {
		t.Fatal(err)
	}
	manifest, _ := os.ReadFile(filepath.Join(out, "manifest.json"))
	sig, _ := os.ReadFile(filepath.Join(out, "manifest.json.sig"))
	l := &update.Latest{Updates: true, Manifest: base64.StdEncoding.EncodeToString(manifest), Signature: strings.TrimSpace(string(sig))}
	pub, err := update.ParsePublicKey(pubB64)
	if err != nil {
		t.Fatal(err)
	}
	m, err := l.Verify(pub)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte("a build"))
	if f := m.Files["windows/amd64"]; f.Name != "outpost-1.2.3-windows-amd64.exe" || f.Size != 7 || f.SHA256 != hex.EncodeToString(sum[:]) {
		t.Fatalf("windows file: %+v", f)
	}
	if got, _ := os.ReadFile(filepath.Join(out, m.Files["linux/amd64"].Name)); string(got) != "a build" {
		t.Fatalf("published binary: %q", got)
	}
	_, otherPub, _ := NewKey()
	op, _ := update.ParsePublicKey(otherPub)
	if _, err := l.Verify(op); err == nil {
		t.Fatal("another key verified the manifest")
	}
	for _, bad := range []struct {
		version string
		bins    []Binary
	}{
		{"dev", []Binary{{Platform: "linux/amd64", Path: bin}}},
		{"1.0.0", nil},
		{"1.0.0", []Binary{{Platform: "linux", Path: bin}}},
		{"1.0.0", []Binary{{Platform: "../x/amd64", Path: bin}}},
	} {
		if _, err := Publish(t.TempDir(), bad.version, key, bad.bins, false); err == nil {
			t.Errorf("Publish(%q, %v) accepted", bad.version, bad.bins)
		}
	}
}
