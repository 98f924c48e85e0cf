package update

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestNewer(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"1.1.0", "1.0.0", true},
		{"1.0.0", "1.1.0", false},
		{"1.0.0", "1.0.0", false},
		{"2.0.0", "1.99.99", true},
		{"1.0.10", "1.0.9", true},
		{"v1.2.0", "1.1.0", true},
		{"1.0.0", "1.0.0-rc1", true},
		{"1.0.0-rc1", "1.0.0", false},
		{"1.0.0-rc2", "1.0.0-rc1", true},
		{"dev", "1.0.0", false},
		{"1.0.0", "dev", false},
		{"1.0", "0.9.0", false},
		{"1.0.x", "0.9.0", false},
	} {
		if got := Newer(tc.a, tc.b); got != tc.want {
			t.Errorf("Newer(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}

func signed(t testing.TB, priv ed25519.PrivateKey, m any) *Latest {
	t.Helper()
	data, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return &Latest{Updates: true, Manifest: base64.StdEncoding.EncodeToString(data), Signature: base64.StdEncoding.EncodeToString(ed25519.Sign(priv, data))}
}

func TestVerify(t *testing.T) {
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	_, other, _ := ed25519.GenerateKey(rand.Reader)
	good := Manifest{Version: "1.2.3", Files: map[string]File{"linux/amd64": {Name: "outpost-1.2.3-linux-amd64", SHA256: strings.Repeat("a", 64), Size: 10}}}
	tampered := signed(t, priv, good)
	data, _ := base64.StdEncoding.DecodeString(tampered.Manifest)
	tampered.Manifest = base64.StdEncoding.EncodeToString([]byte(strings.Replace(string(data), "1.2.3", "9.2.3", 1)))
	badName := good
	badName.Files = map[string]File{"linux/amd64": {Name: "../evil", SHA256: strings.Repeat("a", 64)}}
	for _, tc := range []struct {
		name   string
		latest *Latest
		err    error // nil: ok; errAny: any error
	}{
		{"good", signed(t, priv, good), nil},
		{"another key", signed(t, other, good), ErrBadSignature},
		{"manifest changed after signing", tampered, ErrBadSignature},
		{"no signature", &Latest{Manifest: signed(t, priv, good).Manifest}, ErrBadSignature},
		{"signed, but a file name leaves the directory", signed(t, priv, badName), errAny},
		{"signed, but no version", signed(t, priv, Manifest{Version: "dev"}), errAny},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := tc.latest.Verify(pub)
			switch {
			case tc.err == nil && err != nil:
				t.Fatalf("Verify: %v", err)
			case tc.err == nil && m.Version != "1.2.3":
				t.Fatalf("version %q", m.Version)
			case tc.err == errAny && err == nil, tc.err != nil && tc.err != errAny && !errors.Is(err, tc.err):
				t.Fatalf("Verify = %v, want %v", err, tc.err)
			}
		})
	}
}

var errAny = errors.New("any error")

// FuzzVerify: what the control plane (or anyone in its place) answers to
// a check. Nothing verifies without the key's signature, and nothing
// panics.
func FuzzVerify(f *testing.F) {
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	good := signed(f, priv, Manifest{Version: "1.2.3", Files: map[string]File{"linux/amd64": {Name: "x", SHA256: strings.Repeat("a", 64)}}})
	f.Add(good.Manifest, good.Signature)
	f.Add("", "")
	f.Add("e30=", good.Signature)
	f.Fuzz(func(t *testing.T, manifest, sig string) {
		l := &Latest{Updates: true, Manifest: manifest, Signature: sig}
		m, err := l.Verify(pub)
		if err == nil && (manifest != good.Manifest || sig != good.Signature) {
			data, _ := base64.StdEncoding.DecodeString(manifest)
			s, _ := base64.StdEncoding.DecodeString(sig)
			if !ed25519.Verify(pub, data, s) {
				t.Fatalf("verified without a valid signature: %+v", m)
			}
		}
	})
}
