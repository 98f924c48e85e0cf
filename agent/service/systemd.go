package service

import (
	"fmt"
	"strings"
)

// SystemdUnit renders s as a systemd user unit. Restart=always brings the
// agent back after a crash, a kill or a self-update's exit; KillMode=mixed
// sends SIGTERM to the agent alone (it stops its own process groups), then
// SIGKILL to whatever is left after TimeoutStopSec. Delegate=yes hands the
// service its cgroup subtree, where the agent makes a cgroup v2 per
// process tree for the owner's limits (proc's cgroup2 mechanism).
func SystemdUnit(s *Spec) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Written by outpost agent install; remove with outpost agent uninstall.\n")
	fmt.Fprintf(&b, "[Unit]\nDescription=%s\nStartLimitIntervalSec=0\n\n", systemdEscape(s.Description))
	fmt.Fprintf(&b, "[Service]\nType=simple\n")
	cmd := []string{systemdQuote(s.Executable)}
	for _, a := range s.Args {
		cmd = append(cmd, systemdQuote(a))
	}
	fmt.Fprintf(&b, "ExecStart=%s\n", strings.Join(cmd, " "))
	for _, k := range s.envKeys() {
		fmt.Fprintf(&b, "Environment=%s\n", systemdQuote(k+"="+s.Env[k]))
	}
	fmt.Fprintf(&b, "Restart=always\nRestartSec=2\nKillMode=mixed\nTimeoutStopSec=30\nDelegate=yes\n\n")
	fmt.Fprintf(&b, "[Install]\nWantedBy=default.target\n")
	return b.String()
}

// systemdQuote quotes one word of a command line for systemd: double
// quotes when it holds a space, quote or backslash; % and $ escaped, as
// systemd would otherwise expand them.
func systemdQuote(s string) string {
	s = systemdEscape(s)
	if s != "" && !strings.ContainsAny(s, " \t\"'\\;") {
		return s
	}
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`)
	return `"` + r.Replace(s) + `"`
}

// systemdEscape escapes the specifiers systemd expands in a value.
func systemdEscape(s string) string { return systemdEscaper.Replace(s) }

var systemdEscaper = strings.NewReplacer("%", "%%", "$", "$$", "\n", " ")
