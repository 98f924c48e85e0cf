package main

import (
	"bytes"
	"strings"
	"testing"
)

// `workspace set` checks what it is given before asking the control plane
// (here none answers): a value other than on or off, or nothing to set, is
// a usage error that says what it wants.
func TestWorkspaceSetRefusesBadValues(t *testing.T) {
	t.Setenv("OUTPOST_URL", "http://127.0.0.1:1")
	t.Setenv("OUTPOST_TOKEN", "opadm_SECRET-admin-token-0123456789")
	t.Setenv("OUTPOST_CONFIG_DIR", t.TempDir())
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"workspace", "set", "--agent-updates", "maybe"}, `--agent-updates "maybe": want on or off`},
		{[]string{"workspace", "set"}, "nothing to set: give --agent-updates on|off"},
		{[]string{"workspace", "set", "extra", "--agent-updates", "on"}, "want no arguments"},
	} {
		var out bytes.Buffer
		if code := run(tc.args, &out, &out); code != 1 || !strings.Contains(out.String(), tc.want) || strings.Contains(out.String(), "SECRET") {
			t.Errorf("outpost %s: exit %d\n%s\nwant 1 and %q, no secret", strings.Join(tc.args, " "), code, out.String(), tc.want)
		}
	}
}
