// Package service makes the agent a per-user service: a systemd user unit
// on Linux, a LaunchAgent on macOS, a Windows service. It renders each
// platform's definition from one Spec (the renderings are plain functions,
// so every platform's is tested on any), and installs, starts, stops and
// removes the one of the platform it runs on.
package service

import (
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
)

// ErrUnsupported is returned on a platform without a service manager this
// package knows.
var ErrUnsupported = errors.New("service: no per-user service manager on this platform")

// Spec is one agent service.
type Spec struct {
	// Name is the service's name: systemd unit "<Name>.service", launchd
	// label "dev.outpost.<Name>", Windows service name. Required, of
	// [a-z0-9_-] (see NameFor).
	Name string
	// Description says what it is, for people listing services.
	Description string
	// Executable is the absolute path of the outpost binary. Required.
	Executable string
	// Args follow Executable ("agent", "run", ...).
	Args []string
	// Env is set for the agent (proxies the installing shell had).
	Env map[string]string
	// LogDir is where launchd writes the agent's output (macOS only; systemd
	// keeps it in the journal, Windows in the agent's own log).
	LogDir string
	// Account is the Windows account the service runs as (".\\user" or
	// "DOMAIN\\user"); with Password. Empty: LocalSystem, which install
	// refuses (least privilege).
	Account, Password string
}

// NameFor is the service name of an agent: "outpost-agent-<ws>-<agent>",
// so agents of one user do not clash.
func NameFor(workspace, agent string) string {
	return "outpost-agent-" + workspace + "-" + agent
}

// Validate checks what every platform needs.
func (s *Spec) Validate() error {
	if s.Name == "" || strings.Trim(s.Name, "abcdefghijklmnopqrstuvwxyz0123456789_-") != "" {
		return fmt.Errorf("service: bad name %q", s.Name)
	}
	if !filepath.IsAbs(s.Executable) && !strings.HasPrefix(s.Executable, `\`) && !(len(s.Executable) > 2 && s.Executable[1] == ':') {
		return fmt.Errorf("service: executable %q is not an absolute path", s.Executable)
	}
	return nil
}

// Label is the launchd label of s.
func (s *Spec) Label() string { return "dev.outpost." + s.Name }

// envKeys is s.Env's keys in order, so renderings are stable.
func (s *Spec) envKeys() []string {
	keys := make([]string, 0, len(s.Env))
	for k := range s.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Definition is the service definition of the platform goos, as install
// would write or register it: what --dry-run prints.
func Definition(goos string, s *Spec) (string, error) {
	if err := s.Validate(); err != nil {
		return "", err
	}
	switch goos {
	case "linux":
		if strings.ContainsAny(s.Executable, "\"'\\$") || strings.ContainsFunc(s.Executable, func(r rune) bool { return r < ' ' || r == 0x7f }) {
			return "", fmt.Errorf("service: systemd runs no executable whose path holds a quote, backslash, $ or control character: %q (move outpost elsewhere)", s.Executable)
		}
		return SystemdUnit(s), nil
	case "darwin":
		return LaunchdPlist(s), nil
	case "windows":
		return WindowsService(s), nil
	}
	return "", fmt.Errorf("%w (%s)", ErrUnsupported, goos)
}
