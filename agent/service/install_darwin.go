package service

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

func plistPath(label string) (string, error) {
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("service: %w", err)
	}
	return filepath.Join(home, "Library", "LaunchAgents", label+".plist"), nil
}

// Path is where Install writes s's definition.
func Path(s *Spec) (string, error) { return plistPath(s.Label()) }

// Install writes the LaunchAgent and loads it into the user's GUI domain:
// it starts now, at every login, and again after any exit.
func Install(ctx context.Context, s *Spec, out io.Writer) error {
	if err := s.Validate(); err != nil {
		return err
	}
	path, err := plistPath(s.Label())
	if err != nil {
		return err
	}
	if s.LogDir != "" {
		if err := os.MkdirAll(s.LogDir, 0o700); err != nil {
			return fmt.Errorf("service: %w", err)
		}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("service: %w", err)
	}
	if err := writeFile(path, []byte(LaunchdPlist(s))); err != nil {
		return fmt.Errorf("service: write %s: %w", path, err)
	}
	fmt.Fprintf(out, "wrote %s\n", path)
	_ = launchctl(ctx, "bootout", domain()+"/"+s.Label()) // a previous install
	if err := launchctl(ctx, "bootstrap", domain(), path); err != nil {
		if err2 := launchctl(ctx, "load", "-w", path); err2 != nil {
			return err
		}
	}
	fmt.Fprintf(out, "started %s (launchctl print %s/%s)\n", s.Label(), domain(), s.Label())
	return nil
}

// Uninstall unloads the LaunchAgent named name and removes its file.
func Uninstall(ctx context.Context, name string, out io.Writer) error {
	s := Spec{Name: name}
	path, err := plistPath(s.Label())
	if err != nil {
		return err
	}
	if _, err := os.Stat(path); err != nil {
		return fmt.Errorf("service: %s is not installed (%s): %w", name, path, err)
	}
	if err := launchctl(ctx, "bootout", domain()+"/"+s.Label()); err != nil {
		_ = launchctl(ctx, "unload", "-w", path)
	}
	if err := os.Remove(path); err != nil {
		return fmt.Errorf("service: %w", err)
	}
	fmt.Fprintf(out, "stopped and removed %s\n", path)
	return nil
}

func domain() string { return "gui/" + strconv.Itoa(os.Getuid()) }

func launchctl(ctx context.Context, args ...string) error {
	out, err := exec.CommandContext(ctx, "launchctl", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("service: launchctl %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// RunAsService is for Windows; elsewhere it reports false.
func RunAsService(func(context.Context) error) (bool, error) { return false, nil }
