// Package release is the publisher's side of agent self-update: the release
// key pair, and a releases directory (binaries, manifest.json and its
// ed25519 signature) for `outpost serve --agent-releases DIR`. The agent
// links only the verifying side (agent/update), never this package: the
// private key stays with whoever publishes releases.
package release

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/outposthq/outpost/agent/update"
	"github.com/outposthq/outpost/internal/secretfile"
)

// NewKey makes a release key pair: the private key as base64 (keep it
// secret; Publish signs with it) and the public key as base64 (build it
// into agents with -ldflags "-X main.releaseKey=PUBLIC").
func NewKey() (private, public string, err error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return "", "", err
	}
	return base64.StdEncoding.EncodeToString(priv), base64.StdEncoding.EncodeToString(pub), nil
}

// WriteKey writes a new key pair's private key to path (mode 0600, refusing
// to overwrite) and returns the public key.
func WriteKey(path string) (public string, err error) {
	priv, pub, err := NewKey()
	if err != nil {
		return "", err
	}
	if err := secretfile.CreateExclusive(path, []byte(priv+"\n")); err != nil {
		return "", fmt.Errorf("release key %s: %w", path, err)
	}
	return pub, nil
}

// LoadKey reads a private key WriteKey wrote.
func LoadKey(path string) (ed25519.PrivateKey, error) {
	data, err := secretfile.Read(path, 4096)
	if err != nil {
		return nil, fmt.Errorf("release key: %w", err)
	}
	b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(data)))
	if err != nil || len(b) != ed25519.PrivateKeySize {
		return nil, fmt.Errorf("release key %s: not a base64 ed25519 private key", path)
	}
	return ed25519.PrivateKey(b), nil
}

// Binary is one platform's build to publish.
type Binary struct {
	Platform string // "os/arch"
	Path     string
}

// Publish copies the binaries into dir as outpost-VERSION-OS-ARCH[.exe],
// writes manifest.json naming them with their SHA-256, and signs it
// (manifest.json.sig, base64). The manifest and signature are replaced
// atomically, signature first never after: an agent reading between the two
// writes sees a signature that does not match, and retries later.
func Publish(dir, version string, key ed25519.PrivateKey, bins []Binary, force bool) (*update.Manifest, error) {
	if !update.IsVersion(version) {
		return nil, fmt.Errorf("release: version %q is not MAJOR.MINOR.PATCH", version)
	}
	if len(bins) == 0 {
		return nil, errors.New("release: no binaries")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	m := &update.Manifest{Version: version, CreatedAt: time.Now().UTC().Truncate(time.Second), Force: force, Files: map[string]update.File{}}
	for _, b := range bins {
		goos, arch, ok := strings.Cut(b.Platform, "/")
		if !ok || goos == "" || arch == "" || strings.ContainsAny(b.Platform, `\. `) {
			return nil, fmt.Errorf("release: platform %q: want os/arch", b.Platform)
		}
		name := "outpost-" + version + "-" + goos + "-" + arch
		if goos == "windows" {
			name += ".exe"
		}
		sum, size, err := copyFile(b.Path, filepath.Join(dir, name))
		if err != nil {
			return nil, fmt.Errorf("release: %s: %w", b.Path, err)
		}
		m.Files[b.Platform] = update.File{Name: name, SHA256: sum, Size: size}
	}
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, err
	}
	sig := ed25519.Sign(key, data)
	if err := writeAtomic(filepath.Join(dir, "manifest.json"), data); err != nil {
		return nil, err
	}
	if err := writeAtomic(filepath.Join(dir, "manifest.json.sig"), []byte(base64.StdEncoding.EncodeToString(sig)+"\n")); err != nil {
		return nil, err
	}
	return m, nil
}

func copyFile(from, to string) (string, int64, error) {
	in, err := os.Open(from)
	if err != nil {
		return "", 0, err
	}
	defer in.Close()
	tmp, err := os.CreateTemp(filepath.Dir(to), ".publish-*")
	if err != nil {
		return "", 0, err
	}
	defer os.Remove(tmp.Name())
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(tmp, h), in)
	if err == nil {
		err = tmp.Chmod(0o755)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", 0, err
	}
	return hex.EncodeToString(h.Sum(nil)), n, os.Rename(tmp.Name(), to)
}

func writeAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".publish-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Chmod(0o644)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
