// Package update is the agent's side of self-update: a release manifest
// signed with ed25519 by a release key whose public half is built into the
// agent; the check, download and verification of a newer build over the
// agent's pinned TLS connection; and the handoff that replaces the binary
// atomically, tries the new one, and rolls back when it does not come
// online. Signing lives elsewhere (package release): the agent holds no
// private key.
package update

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ErrBadSignature means the manifest's signature does not verify with the
// release key built into this agent.
var ErrBadSignature = errors.New("update: the release manifest's signature does not verify with this agent's release key")

// ErrBadHash means a downloaded binary's SHA-256 differs from the signed
// manifest's.
var ErrBadHash = errors.New("update: the downloaded binary's sha256 does not match the signed manifest")

// Manifest describes one release: its version and a binary per platform.
type Manifest struct {
	Version   string    `json:"version"`
	CreatedAt time.Time `json:"createdAt"`
	// Force makes agents update without waiting for live processes and
	// transfers to end (a security fix).
	Force bool `json:"force,omitempty"`
	// Files are by "os/arch" (runtime.GOOS/runtime.GOARCH).
	Files map[string]File `json:"files"`
}

// File is one platform's binary.
type File struct {
	Name   string `json:"name"` // its name under the releases directory
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size"`
}

// Latest is the body of GET /v1/agent-releases/latest: the manifest's
// exact bytes and their signature (base64), or Updates false when the
// agent's workspace turned updates off.
type Latest struct {
	Updates bool `json:"updates"`
	// OldestProtocol is the oldest agent protocol the control plane
	// serves: an agent older than that says so in its log.
	OldestProtocol int    `json:"oldestProtocol,omitempty"`
	Version        string `json:"version,omitempty"`
	Manifest       string `json:"manifest,omitempty"`
	Signature      string `json:"signature,omitempty"`
}

// ParsePublicKey decodes a release public key (base64 of 32 bytes), as
// built in with -ldflags.
func ParsePublicKey(s string) (ed25519.PublicKey, error) {
	b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(s))
	if err != nil || len(b) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("update: release public key: want base64 of %d bytes", ed25519.PublicKeySize)
	}
	return ed25519.PublicKey(b), nil
}

// Verify checks l's signature with pub and decodes its manifest.
func (l *Latest) Verify(pub ed25519.PublicKey) (*Manifest, error) {
	data, err := base64.StdEncoding.DecodeString(l.Manifest)
	if err != nil {
		return nil, fmt.Errorf("update: manifest: %w", err)
	}
	sig, err := base64.StdEncoding.DecodeString(l.Signature)
	if err != nil || len(sig) != ed25519.SignatureSize {
		return nil, ErrBadSignature
	}
	if !ed25519.Verify(pub, data, sig) {
		return nil, ErrBadSignature
	}
	return ParseManifest(data)
}

// ParseManifest decodes and checks a manifest's bytes (signed or not).
func ParseManifest(data []byte) (*Manifest, error) {
	var m Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("update: manifest: %w", err)
	}
	if _, ok := parseVersion(m.Version); !ok {
		return nil, fmt.Errorf("update: manifest: version %q is not MAJOR.MINOR.PATCH", m.Version)
	}
	for plat, f := range m.Files {
		if f.Name == "" || strings.ContainsAny(f.Name, `/\`) || f.Name == "." || f.Name == ".." {
			return nil, fmt.Errorf("update: manifest: %s: bad file name %q", plat, f.Name)
		}
		if len(f.SHA256) != 64 {
			return nil, fmt.Errorf("update: manifest: %s: bad sha256", plat)
		}
	}
	return &m, nil
}

// Newer reports whether version a is newer than b. Versions are
// [v]MAJOR.MINOR.PATCH with an optional -suffix (a pre-release, older
// than the release); a version that is not (a "dev" build) is never
// newer, nor older.
func Newer(a, b string) bool {
	va, ok1 := parseVersion(a)
	vb, ok2 := parseVersion(b)
	if !ok1 || !ok2 {
		return false
	}
	for i := range 3 {
		if va.n[i] != vb.n[i] {
			return va.n[i] > vb.n[i]
		}
	}
	switch {
	case va.pre == vb.pre:
		return false
	case va.pre == "":
		return true
	case vb.pre == "":
		return false
	}
	return va.pre > vb.pre
}

type version struct {
	n   [3]int
	pre string
}

func parseVersion(s string) (version, bool) {
	var v version
	s = strings.TrimPrefix(s, "v")
	s, v.pre, _ = strings.Cut(s, "-")
	parts := strings.Split(s, ".")
	if len(parts) != 3 {
		return v, false
	}
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 || p == "" {
			return v, false
		}
		v.n[i] = n
	}
	return v, true
}

// IsVersion reports whether v is a release version ([v]MAJOR.MINOR.PATCH
// with an optional -suffix); a "dev" build is not, and never updates.
func IsVersion(v string) bool {
	_, ok := parseVersion(v)
	return ok
}
