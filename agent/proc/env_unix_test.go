//go:build unix

package proc

import (
	"context"
	"strings"
	"testing"
)

// TestCommandsDoNotInheritAgentSecrets: the agent's OUTPOST_* variables
// reach neither an exec nor a started process; the rest of its environment
// does, and a variable the request sets explicitly does too.
func TestCommandsDoNotInheritAgentSecrets(t *testing.T) {
	m, _ := newTestManager(t)
	t.Setenv("OUTPOST_TOKEN", "secret-token")
	t.Setenv("OUTPOST_ADMIN_TOKEN", "secret-admin")
	t.Setenv("INHERITED_VAR", "passes")
	env := map[string]string{"OUTPOST_ASKED": "explicit"}
	check := func(t *testing.T, out string) {
		t.Helper()
		for _, bad := range []string{"OUTPOST_TOKEN", "secret-token", "OUTPOST_ADMIN_TOKEN", "secret-admin"} {
			if strings.Contains(out, bad) {
				t.Errorf("the command's environment holds %q:\n%s", bad, out)
			}
		}
		for _, good := range []string{"\nINHERITED_VAR=passes\n", "\nPATH=", "\nOUTPOST_ASKED=explicit\n"} {
			if !strings.Contains("\n"+out, good) {
				t.Errorf("the command's environment lacks %q:\n%s", good, out)
			}
		}
	}
	t.Run("exec", func(t *testing.T) {
		res, err := m.Exec(context.Background(), ExecRequest{Argv: []string{"env"}, Env: env})
		if err != nil {
			t.Fatal(err)
		}
		check(t, string(res.Stdout))
	})
	t.Run("start", func(t *testing.T) {
		id := start(t, m, StartRequest{Argv: []string{"env"}, Env: env})
		check(t, readToClose(t, m, id, 0, 0).text("stdout"))
	})
}

// TestLoginEnv: a command of an agent whose environment lacks USER,
// LOGNAME and HOME gets them, as a login sets them; present ones stay.
func TestLoginEnv(t *testing.T) {
	u := agentUser()
	if u == nil {
		t.Fatal("cannot look up the current user")
	}
	got := loginEnv([]string{"PATH=/bin", "HOME=/custom"})
	for key, want := range map[string]string{"USER": u.Username, "LOGNAME": u.Username, "HOME": "/custom"} {
		if v := lookupEnv(got, key); v != want {
			t.Errorf("%s = %q, want %q (env %q)", key, v, want, got)
		}
	}
}
