package enroll

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"fmt"
)

// Prefixes of the secrets this package makes, so a leaked one is recognisable
// (secret scanners, logs) and the two kinds are never confused.
const (
	TokenPrefix  = "opt_" // enrollment tokens
	APIKeyPrefix = "opk_" // workspace keys and the admin token
)

// secretBytes is the entropy of every token and key.
const secretBytes = 32

// NewToken makes a single-use enrollment token: plain is "opt_" followed by 32
// random bytes in unpadded base64url, and hash is HashToken(plain). Give plain
// to the user once; store only hash.
func NewToken() (plain, hash string, err error) { return newSecret(TokenPrefix) }

// NewAPIKey makes a workspace key or admin token, the same scheme as NewToken
// with the prefix "opk_".
func NewAPIKey() (plain, hash string, err error) { return newSecret(APIKeyPrefix) }

func newSecret(prefix string) (string, string, error) {
	var b [secretBytes]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", "", fmt.Errorf("random: %w", err)
	}
	plain := prefix + base64.RawURLEncoding.EncodeToString(b[:])
	return plain, HashToken(plain), nil
}

// HashToken is the lowercase hex SHA-256 of plain: what is stored and looked
// up. A plain SHA-256 suffices because the input has 256 bits of entropy.
func HashToken(plain string) string {
	sum := sha256.Sum256([]byte(plain))
	return hex.EncodeToString(sum[:])
}

// ConstantTimeEqualHash compares two hashes without leaking, through timing,
// how much of them matches. Hashes of different lengths are unequal, and an
// empty hash equals nothing, not even another empty one, so a record with a
// missing hash can never match.
func ConstantTimeEqualHash(a, b string) bool {
	if a == "" || b == "" {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}
