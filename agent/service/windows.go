package service

import (
	"fmt"
	"strings"
)

// Windows service settings, shared by the rendering and the installer.
const (
	// windowsRestartDelayMs is the delay of each recovery restart.
	windowsRestartDelayMs = 2000
	// windowsResetPeriodS resets the failure count after a day.
	windowsResetPeriodS = 86400
)

// WindowsService renders what install registers with the service control
// manager: an automatic (delayed) service running as Account, restarted by
// the recovery actions after any failure, with the command line it runs.
func WindowsService(s *Spec) string {
	var b strings.Builder
	fmt.Fprintf(&b, "ServiceName:     %s\n", s.Name)
	fmt.Fprintf(&b, "DisplayName:     Outpost agent (%s)\n", s.Name)
	fmt.Fprintf(&b, "Description:     %s\n", s.Description)
	fmt.Fprintf(&b, "BinaryPathName:  %s\n", WindowsCommandLine(s.Executable, s.Args))
	fmt.Fprintf(&b, "StartType:       automatic (delayed start)\n")
	fmt.Fprintf(&b, "ServiceType:     own process\n")
	fmt.Fprintf(&b, "ObjectName:      %s\n", s.Account)
	for _, k := range s.envKeys() {
		fmt.Fprintf(&b, "Environment:     %s=%s\n", k, s.Env[k])
	}
	fmt.Fprintf(&b, "FailureActions:  restart/%d, restart/%d, restart/%d (reset after %d s; also on a non-zero exit)\n",
		windowsRestartDelayMs, windowsRestartDelayMs, windowsRestartDelayMs, windowsResetPeriodS)
	return b.String()
}

// WindowsCommandLine joins exe and args as CreateProcess parses them
// (syscall.EscapeArg's rules).
func WindowsCommandLine(exe string, args []string) string {
	parts := []string{windowsQuote(exe)}
	for _, a := range args {
		parts = append(parts, windowsQuote(a))
	}
	return strings.Join(parts, " ")
}

// windowsQuote is syscall.EscapeArg, here so it renders on every platform.
func windowsQuote(s string) string {
	if s == "" {
		return `""`
	}
	if !strings.ContainsAny(s, " \t\"") {
		return s
	}
	var b strings.Builder
	b.WriteByte('"')
	slashes := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '\\':
			slashes++
		case '"':
			b.WriteString(strings.Repeat(`\`, slashes+1))
			slashes = 0
		default:
			slashes = 0
		}
		b.WriteByte(c)
	}
	b.WriteString(strings.Repeat(`\`, slashes))
	b.WriteByte('"')
	return b.String()
}
