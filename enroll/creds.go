package enroll

import (
	"fmt"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
)

// CredsOption turns creds file bytes (ServiceCreds, SystemCreds) into a
// nats.Option, without writing them anywhere. The key pair stays in memory.
func CredsOption(creds []byte) (nats.Option, error) {
	userJWT, err := jwt.ParseDecoratedJWT(creds)
	if err != nil {
		return nil, fmt.Errorf("creds: %w", err)
	}
	kp, err := jwt.ParseDecoratedUserNKey(creds)
	if err != nil {
		return nil, fmt.Errorf("creds: %w", err)
	}
	defer kp.Wipe()
	seed, err := kp.Seed() // kp's own buffer, wiped with kp
	if err != nil {
		return nil, fmt.Errorf("creds: %w", err)
	}
	return jwtAuth(userJWT, string(seed))
}

// jwtAuth authenticates with a user JWT and signs the server's nonce with the
// seed, which never leaves memory.
func jwtAuth(userJWT, seed string) (nats.Option, error) {
	kp, err := nkeys.FromSeed([]byte(seed))
	if err != nil {
		return nil, fmt.Errorf("seed: %w", err)
	}
	if _, err := kp.PublicKey(); err != nil {
		return nil, fmt.Errorf("seed: %w", err)
	}
	return nats.UserJWT(
		func() (string, error) { return userJWT, nil },
		func(nonce []byte) ([]byte, error) { return kp.Sign(nonce) },
	), nil
}

func wipe(b []byte) {
	for i := range b {
		b[i] = 'x'
	}
}

func truncate(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "..."
	}
	return string(b)
}
