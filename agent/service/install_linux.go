package service

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
)

// unitPath is where a user unit named name lives:
// $XDG_CONFIG_HOME/systemd/user (default ~/.config/systemd/user).
func unitPath(name string) (string, error) {
	dir := os.Getenv("XDG_CONFIG_HOME")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("service: %w", err)
		}
		dir = filepath.Join(home, ".config")
	}
	return filepath.Join(dir, "systemd", "user", name+".service"), nil
}

// Path is where Install writes s's definition.
func Path(s *Spec) (string, error) { return unitPath(s.Name) }

// Install writes the user unit, enables it (started at the user manager's
// start) and starts it now. A user manager must run: the user is logged
// in, or lingering is enabled (`loginctl enable-linger`), which also keeps
// the agent running after logout and starts it at boot; out says so when
// lingering is off.
func Install(ctx context.Context, s *Spec, out io.Writer) error {
	if err := s.Validate(); err != nil {
		return err
	}
	path, err := unitPath(s.Name)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("service: %w", err)
	}
	if err := writeFile(path, []byte(SystemdUnit(s))); err != nil {
		return fmt.Errorf("service: write %s: %w", path, err)
	}
	fmt.Fprintf(out, "wrote %s\n", path)
	if err := systemctl(ctx, "daemon-reload"); err != nil {
		return err
	}
	if err := systemctl(ctx, "enable", "--now", s.Name+".service"); err != nil {
		return err
	}
	fmt.Fprintf(out, "started %s.service (systemctl --user status %s; journalctl --user -u %s)\n", s.Name, s.Name, s.Name)
	if lingering(ctx) == "no" {
		u, _ := user.Current()
		name := "$USER"
		if u != nil {
			name = u.Username
		}
		fmt.Fprintf(out, "note: lingering is off for %s, so the agent stops when you log out and starts only when you log in; to keep it running and start it at boot, run: loginctl enable-linger %s\n", name, name)
	}
	return nil
}

// Uninstall stops and disables the unit and removes its file.
func Uninstall(ctx context.Context, name string, out io.Writer) error {
	path, err := unitPath(name)
	if err != nil {
		return err
	}
	if _, err := os.Stat(path); err != nil {
		return fmt.Errorf("service: %s is not installed (%s): %w", name, path, err)
	}
	if err := systemctl(ctx, "disable", "--now", name+".service"); err != nil {
		fmt.Fprintf(out, "warning: %v\n", err)
	}
	if err := os.Remove(path); err != nil {
		return fmt.Errorf("service: %w", err)
	}
	fmt.Fprintf(out, "stopped and removed %s\n", path)
	return systemctl(ctx, "daemon-reload")
}

func systemctl(ctx context.Context, args ...string) error {
	cmd := exec.CommandContext(ctx, "systemctl", append([]string{"--user"}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("service: systemctl --user %s: %w: %s (a systemd user manager must run for this user: log in, or run 'loginctl enable-linger')",
			strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// lingering is "yes", "no", or "" when loginctl cannot tell.
func lingering(ctx context.Context) string {
	u, err := user.Current()
	if err != nil {
		return ""
	}
	out, err := exec.CommandContext(ctx, "loginctl", "show-user", u.Username, "--property=Linger", "--value").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// RunAsService is for Windows, where the service manager speaks a protocol
// of its own; elsewhere it reports false.
func RunAsService(func(context.Context) error) (bool, error) { return false, nil }
