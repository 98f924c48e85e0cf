package enroll

import (
	"encoding/hex"
	"strings"
	"testing"
)

func TestNewSecrets(t *testing.T) {
	tests := []struct {
		name   string
		make   func() (string, string, error)
		prefix string
	}{
		{"token", NewToken, TokenPrefix},
		{"api key", NewAPIKey, APIKeyPrefix},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plain, hash, err := tt.make()
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(plain, tt.prefix) {
				t.Errorf("plain %q lacks prefix %q", plain, tt.prefix)
			}
			if got, want := len(plain), len(tt.prefix)+43; got != want {
				t.Errorf("plain length %d, want %d", got, want)
			}
			if plain == hash || strings.Contains(hash, plain) {
				t.Error("hash reveals plain")
			}
			if b, err := hex.DecodeString(hash); err != nil || len(b) != 32 {
				t.Errorf("hash %q is not 32 bytes of hex", hash)
			}
			if HashToken(plain) != hash || HashToken(plain) != HashToken(plain) {
				t.Error("HashToken is not stable")
			}
			plain2, hash2, err := tt.make()
			if err != nil {
				t.Fatal(err)
			}
			if plain2 == plain || hash2 == hash {
				t.Error("two secrets are equal")
			}
		})
	}
}

func TestHashToken(t *testing.T) {
	// SHA-256 of "abc" (FIPS 180-2).
	if got, want := HashToken("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"; got != want {
		t.Fatalf("HashToken(abc) = %s, want %s", got, want)
	}
}

func TestConstantTimeEqualHash(t *testing.T) {
	h := HashToken("opt_x")
	tests := []struct {
		name string
		a, b string
		want bool
	}{
		{"equal", h, HashToken("opt_x"), true},
		{"different", h, HashToken("opt_y"), false},
		{"prefix", h, h[:10], false},
		{"empty and hash", "", h, false},
		{"both empty", "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ConstantTimeEqualHash(tt.a, tt.b); got != tt.want {
				t.Fatalf("ConstantTimeEqualHash = %v, want %v", got, tt.want)
			}
		})
	}
}
