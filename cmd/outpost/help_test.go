package main

import (
	"bytes"
	"strings"
	"testing"
)

// --help on every command prints its usage, and never a secret: not the
// token of $OUTPOST_TOKEN nor the admin token of $OUTPOST_ADMIN_TOKEN.
func TestHelpPrintsNoSecret(t *testing.T) {
	const token, admin = "opk_SECRET-client-token-0123456789", "opadm_SECRET-admin-token-0123456789"
	t.Setenv("OUTPOST_TOKEN", token)
	t.Setenv("OUTPOST_ADMIN_TOKEN", admin)
	t.Setenv("OUTPOST_URL", "http://127.0.0.1:1")
	commands := [][]string{
		{"up"}, {"serve"}, {"nats-config"}, {"agent", "enroll"}, {"agent", "run"},
		{"exec"}, {"agents"}, {"agents", "ls"}, {"agents", "rm"},
		{"token"}, {"token", "create"}, {"token", "ls"}, {"token", "rm"},
		{"key"}, {"key", "create"}, {"key", "ls"}, {"key", "rm"},
		{"fs", "ls"}, {"fs", "get"}, {"fs", "put"}, {"fs", "rm"},
		{"git", "status"}, {"git", "diff"},
		{"session"}, {"session", "create"}, {"session", "show"}, {"session", "swap"}, {"session", "delete"}, {"session", "ls"},
	}
	for _, args := range commands {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			var out bytes.Buffer
			code := run(append(args, "--help"), &out, &out)
			got := out.String()
			if code != 0 || !strings.Contains(got, "usage: outpost "+args[0]) {
				t.Fatalf("exit %d, output:\n%s\nwant 0 and the usage", code, got)
			}
			for _, secret := range []string{token, admin, "SECRET"} {
				if strings.Contains(got, secret) {
					t.Fatalf("--help prints a secret:\n%s", got)
				}
			}
		})
	}
}
