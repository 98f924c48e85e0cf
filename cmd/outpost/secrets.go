package main

import (
	"flag"
	"os"
	"strings"
)

// secretEnv are the environment variables that hold secrets.
var secretEnv = []string{"OUTPOST_TOKEN", "OUTPOST_ADMIN_TOKEN"}

// hideSecretDefaults blanks any flag default that holds a secret, so that
// usage never prints one, whatever a later flag's default is made of: the
// client flags read the environment after parsing, and this is the guard
// behind them.
func hideSecretDefaults(fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) {
		if looksSecret(f.DefValue) {
			f.DefValue = ""
		}
	})
}

// looksSecret reports whether v holds a secret: an Outpost token (admin,
// workspace key, enrollment) or the value of a secret variable.
func looksSecret(v string) bool {
	for _, p := range []string{"opadm_", "opk_", "opt_"} {
		if strings.Contains(v, p) {
			return true
		}
	}
	for _, name := range secretEnv {
		if s := strings.TrimSpace(os.Getenv(name)); s != "" && strings.Contains(v, s) {
			return true
		}
	}
	return false
}
