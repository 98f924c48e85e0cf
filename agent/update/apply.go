package update

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"time"
)

// Defaults of Handoff.
const (
	DefaultHealthWindow = 2 * time.Minute
	trialStopTimeout    = 30 * time.Second
	trialPoll           = 100 * time.Millisecond
)

// TrialEnv names the trial a new binary runs in: its value is a path
// prefix; the new agent creates "<prefix>.online" once it serves and stops
// when "<prefix>.stop" appears.
const TrialEnv = "OUTPOST_UPDATE_TRIAL"

// ErrRolledBack is returned (wrapped) by Apply when the new binary did not
// come online and the previous one was put back.
var ErrRolledBack = errors.New("update: the new version did not come online; rolled back")

// Handoff replaces the running binary with a staged one and tries it.
type Handoff struct {
	// Exe is the running binary's path (symlinks resolved).
	Exe string
	// Args are the agent's arguments (os.Args[1:]): the trial runs with them.
	Args []string
	// Window bounds how long the new binary may take to come online
	// (DefaultHealthWindow).
	Window time.Duration
	// Dir holds the trial's marker files (the config's directory).
	Dir string
	// Output receives the trial's output (the agent's log).
	Output io.Writer
	Log    *slog.Logger
}

// Apply tries the staged binary, then puts it in place. The trial runs
// the staged file (next to exe) with the agent's arguments; the running
// agent must have stopped serving. When the trial comes online within the
// window, Apply stops it, keeps the running binary as "<exe>.previous" and
// renames the staged one over exe (atomic: a process starting exe gets the
// old or the new one, never a part), and returns nil: the caller then
// starts exe again (exec on unix, so the service's process stays the
// same). When the trial exits or stays offline, Apply kills it, deletes
// the staged file and returns ErrRolledBack: exe was never touched. So an
// agent killed at any point of a trial leaves exe the version it was,
// which its service manager starts next.
func (h *Handoff) Apply(ctx context.Context, st *Staged) error {
	h.Log.Info("trying the new version", "version", st.Version, "window", h.window())
	if err := h.trial(ctx, st.Path); err != nil {
		os.Remove(st.Path)
		return fmt.Errorf("%w to the previous binary (%s did not: %v)", ErrRolledBack, st.Version, err)
	}
	prev := h.Exe + ".previous"
	if err := keepPrevious(h.Exe, prev); err != nil {
		os.Remove(st.Path)
		return fmt.Errorf("update: keep the running binary: %w", err)
	}
	if err := os.Rename(st.Path, h.Exe); err != nil {
		os.Remove(st.Path)
		if rerr := restore(h.Exe, prev); rerr != nil {
			return fmt.Errorf("update: replace %s: %w; and putting the previous binary back failed: %v", h.Exe, err, rerr)
		}
		return fmt.Errorf("update: replace %s: %w", h.Exe, err)
	}
	h.Log.Info("binary replaced", "version", st.Version, "previous", prev)
	return nil
}

func (h *Handoff) window() time.Duration {
	if h.Window > 0 {
		return h.Window
	}
	return DefaultHealthWindow
}

// trial runs the binary at path until it reports online, then stops it.
func (h *Handoff) trial(ctx context.Context, path string) error {
	var b [8]byte
	_, _ = rand.Read(b[:])
	marker := filepath.Join(h.Dir, ".update-trial-"+hex.EncodeToString(b[:]))
	defer os.Remove(marker + ".online")
	defer os.Remove(marker + ".stop")
	cmd := exec.Command(path, h.Args...)
	cmd.Env = append(os.Environ(), TrialEnv+"="+marker)
	cmd.Stdout, cmd.Stderr = h.Output, h.Output
	started, release, err := dieWithParent(cmd)
	if err != nil {
		return err
	}
	defer release() // after every path below has waited for the trial
	if err := cmd.Start(); err != nil {
		return err
	}
	if err := started(); err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.NewTimer(h.window())
	defer deadline.Stop()
	tick := time.NewTicker(trialPoll)
	defer tick.Stop()
	for {
		select {
		case err := <-exited:
			return fmt.Errorf("it exited before coming online: %v", err)
		case <-deadline.C:
			_ = cmd.Process.Kill()
			<-exited
			return fmt.Errorf("not online within %s", h.window())
		case <-ctx.Done():
			_ = cmd.Process.Kill()
			<-exited
			return ctx.Err()
		case <-tick.C:
		}
		if _, err := os.Stat(marker + ".online"); err != nil {
			continue
		}
		if err := os.WriteFile(marker+".stop", nil, 0o600); err != nil {
			_ = cmd.Process.Kill()
		}
		select {
		case <-exited:
		case <-time.After(trialStopTimeout):
			_ = cmd.Process.Kill()
			<-exited
		}
		return nil
	}
}

// keepPrevious makes prev the running binary: a hard link where it can
// (exe stays in place), else a rename (Windows lets a running binary be
// renamed, not replaced).
func keepPrevious(exe, prev string) error {
	_ = os.Remove(prev)
	if runtime.GOOS != "windows" {
		if err := os.Link(exe, prev); err == nil {
			return nil
		}
	}
	return os.Rename(exe, prev)
}

// restore puts prev back at exe.
func restore(exe, prev string) error {
	if runtime.GOOS == "windows" {
		_ = os.Rename(exe, exe+".failed")
	}
	return os.Rename(prev, exe)
}

// Trial is the new binary's side of a trial run.
type Trial struct {
	marker string
	parent int // the old agent's pid, which waits for this trial
}

// TrialFromEnv is the trial this process runs in, nil when none.
func TrialFromEnv() *Trial {
	m := os.Getenv(TrialEnv)
	if m == "" {
		return nil
	}
	os.Unsetenv(TrialEnv) // not for the agent's commands
	return &Trial{marker: m, parent: os.Getppid()}
}

// Online reports that the agent serves.
func (t *Trial) Online() error { return os.WriteFile(t.marker+".online", nil, 0o600) }

// WaitStop returns when the old binary says the trial is over, when the
// old binary has died (on unix the trial is then reparented; a trial
// outliving it would serve beside what the service manager starts next),
// or when ctx ends.
func (t *Trial) WaitStop(ctx context.Context) {
	tick := time.NewTicker(trialPoll)
	defer tick.Stop()
	for {
		if _, err := os.Stat(t.marker + ".stop"); err == nil {
			return
		}
		if runtime.GOOS != "windows" && os.Getppid() != t.parent {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// TrialFromEnvSet reports whether this process is a trial run, without
// taking the trial (TrialFromEnv does).
func TrialFromEnvSet() bool { return os.Getenv(TrialEnv) != "" }
