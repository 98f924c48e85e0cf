package policy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/outposthq/outpost/wire"
)

// Summary is what the control plane may see of p: the switches, allow-lists
// and limits, and how many paths are denied (not which). limitsBy is the
// mechanism that applies the limits on this machine.
func (p *Policy) Summary(limitsBy string) *wire.PolicySummary {
	if p == nil {
		p = &Policy{}
	}
	s := &wire.PolicySummary{
		Exec: allowed(p.Exec), Processes: allowed(p.Processes), TTY: allowed(p.TTY),
		FS: string(access(p.FS)), Git: string(access(p.Git)),
		Commands: p.Commands, DenyPaths: len(p.DenyPaths), Ports: p.Ports,
		Limits: wire.PolicyLimits{MemoryBytes: p.Limits.MemoryBytes, CPUPercent: p.Limits.CPUPercent, Processes: p.Limits.Processes},
	}
	if !p.Limits.IsZero() {
		s.LimitsBy = limitsBy
	}
	return s
}

// ErrUnsafeFile is returned for a policy file that someone other than its
// owner (and root) may change: the policy would not be the owner's.
var ErrUnsafeFile = errors.New("policy file is writable by others")

// Read loads and parses the policy file at path, refusing one that is not
// a regular file, that group or others may write, or that belongs to
// another user than the agent's (or root). On Windows, whose permissions
// are ACLs, only the file's kind is checked.
func Read(path string) (*Policy, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("policy: %s is not a regular file", path)
	}
	if err := checkOwner(path, st); err != nil {
		return nil, err
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxSize+1))
	if err != nil {
		return nil, fmt.Errorf("policy: read %s: %w", path, err)
	}
	p, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return p, nil
}

// File is a policy file in force: Current is the policy last read
// successfully. Reload reads it again; Watch reloads on a signal or when
// the file's size or time changes. A file that became unreadable, invalid
// or unsafe leaves the last good policy in force, and says so in the log.
type File struct {
	path string
	log  *slog.Logger

	cur atomic.Pointer[Policy]

	mu      sync.Mutex
	stamp   stamp
	onApply []func(*Policy)
}

// stamp is what Watch compares to notice a changed file.
type stamp struct {
	size  int64
	mtime time.Time
}

// Open reads the policy file at path; its errors are Read's.
func Open(path string, log *slog.Logger) (*File, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	f := &File{path: path, log: log}
	p, err := Read(path)
	if err != nil {
		return nil, err
	}
	f.cur.Store(p)
	f.stamp = f.statStamp()
	return f, nil
}

// Path is the file's name.
func (f *File) Path() string { return f.path }

// Current is the policy in force. A nil *File has none (all allowed).
func (f *File) Current() *Policy {
	if f == nil {
		return nil
	}
	return f.cur.Load()
}

// OnApply calls fn with the policy now and after every reload that changes it.
func (f *File) OnApply(fn func(*Policy)) {
	f.mu.Lock()
	f.onApply = append(f.onApply, fn)
	f.mu.Unlock()
	fn(f.Current())
}

func (f *File) statStamp() stamp {
	st, err := os.Stat(f.path)
	if err != nil {
		return stamp{}
	}
	return stamp{size: st.Size(), mtime: st.ModTime()}
}

// Reload reads the file again and puts it in force. On an error the
// policy in force stays and the error is returned.
func (f *File) Reload() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stamp = f.statStamp()
	p, err := Read(f.path)
	if err != nil {
		f.log.Error("policy file not reloaded; the previous policy stays in force", "file", f.path, "err", err)
		return err
	}
	f.cur.Store(p)
	for _, fn := range f.onApply {
		fn(p)
	}
	f.log.Info("policy file reloaded", "file", f.path)
	return nil
}

// Watch reloads the file whenever sig delivers (SIGHUP, wired by the
// caller) and when a check every interval finds its size or modification
// time changed, until ctx ends.
func (f *File) Watch(ctx context.Context, interval time.Duration, sig <-chan os.Signal) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-sig:
			_ = f.Reload()
		case <-t.C:
			f.mu.Lock()
			changed := f.statStamp() != f.stamp
			f.mu.Unlock()
			if changed {
				_ = f.Reload()
			}
		}
	}
}
