package main

import (
	"bytes"
	"strings"
	"testing"
)

// --help on every command prints its usage, and a usage error (an unknown
// flag) prints it too: never a secret, not the token of $OUTPOST_TOKEN nor
// the admin token of $OUTPOST_ADMIN_TOKEN, nor a context's token.
func TestHelpPrintsNoSecret(t *testing.T) {
	const token, admin = "opk_SECRET-client-token-0123456789", "opadm_SECRET-admin-token-0123456789"
	t.Setenv("OUTPOST_TOKEN", token)
	t.Setenv("OUTPOST_ADMIN_TOKEN", admin)
	t.Setenv("OUTPOST_URL", "http://127.0.0.1:1")
	t.Setenv("OUTPOST_CONFIG_DIR", t.TempDir())
	commands := [][]string{
		{"up"}, {"serve"}, {"nats-config"}, {"agent", "enroll"}, {"agent", "run"},
		{"exec"}, {"agents"}, {"agents", "ls"}, {"agents", "rm"},
		{"token"}, {"token", "create"}, {"token", "ls"}, {"token", "rm"},
		{"key"}, {"key", "create"}, {"key", "ls"}, {"key", "rm"},
		{"workspace"}, {"workspace", "show"}, {"workspace", "set"},
		{"fs", "ls"}, {"fs", "stat"}, {"fs", "get"}, {"fs", "put"}, {"fs", "mkdir"}, {"fs", "mv"}, {"fs", "rm"},
		{"git", "status"}, {"git", "diff"}, {"git", "log"}, {"git", "commit"}, {"git", "apply"},
		{"version"}, {"login"}, {"logout"}, {"context"}, {"context", "ls"}, {"context", "use"}, {"completion"},
		{"session"}, {"session", "create"}, {"session", "show"}, {"session", "swap"}, {"session", "delete"}, {"session", "ls"},
		{"snapshot"}, {"snapshot", "create"}, {"snapshot", "ls"}, {"snapshot", "rm"}, {"snapshot", "restore"},
	}
	for _, args := range commands {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			var out bytes.Buffer
			code := run(append(args, "--help"), &out, &out)
			got := out.String()
			if code != 0 || !strings.Contains(got, "usage: outpost "+args[0]) {
				t.Fatalf("exit %d, output:\n%s\nwant 0 and the usage", code, got)
			}
			var bad bytes.Buffer
			if code := run(append(args, "--no-such-flag"), &bad, &bad); code == 0 {
				t.Fatalf("an unknown flag: exit 0, output:\n%s", bad.String())
			}
			for _, secret := range []string{token, admin, "SECRET"} {
				if strings.Contains(got, secret) || strings.Contains(bad.String(), secret) {
					t.Fatalf("usage prints a secret:\n%s\n%s", got, bad.String())
				}
			}
		})
	}
}

// The guard behind the flags: a default holding a secret is blanked in the
// usage, whoever registered it.
func TestUsageHidesSecretDefaults(t *testing.T) {
	t.Setenv("OUTPOST_TOKEN", "plain-secret-without-prefix")
	tests := []struct{ name, def string }{
		{"admin token", "opadm_ABCDEF"},
		{"workspace key", "opk_ABCDEF"},
		{"enrollment token", "opt_ABCDEF"},
		{"the value of OUTPOST_TOKEN", "x-plain-secret-without-prefix"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			fs := newFlags("test", "", &out)
			fs.String("secret", tt.def, "a flag whose default is a secret")
			fs.String("plain", "visible-default", "a flag whose default is not")
			fs.Usage()
			if strings.Contains(out.String(), tt.def) || !strings.Contains(out.String(), "visible-default") {
				t.Fatalf("usage:\n%s\nwant %q hidden and visible-default shown", out.String(), tt.def)
			}
		})
	}
}

// A usage error prints the usage, then the error once, naming the command
// and subcommand.
func TestUsageErrorPrintedOnce(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"fs", "ls", "--bogus"}, "outpost fs ls: flag provided but not defined: -bogus\n"},
		{[]string{"token", "create", "--ttl", "5x"}, "outpost token create: invalid value \"5x\" for flag -ttl: parse error\n"},
		{[]string{"git", "log", "a", "b"}, "outpost git log: want at most one REPO, got 2 arguments: [\"a\" \"b\"]\n"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var out bytes.Buffer
			if code := run(tt.args, &out, &out); code != 1 {
				t.Fatalf("exit %d, want 1", code)
			}
			got := out.String()
			if !strings.HasPrefix(got, "usage: outpost ") || !strings.HasSuffix(got, tt.want) || strings.Count(got, strings.SplitN(tt.want, ": ", 2)[1]) != 1 {
				t.Fatalf("output:\n%s\nwant the usage, then once: %s", got, tt.want)
			}
		})
	}
}
