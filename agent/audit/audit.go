// Package audit is the agent's audit log: one JSON line per operation
// (time, op, session and epoch, argv or path, result, bytes, duration) in a
// file on the machine, owner-only, rotated by size. It never holds file
// contents, stdin or environment values: Event has no field for them.
package audit

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/outposthq/outpost/wire"
)

// Event is one operation, as one line of the log: wire.AuditEvent, the
// shape the control plane's copy serves too.
type Event = wire.AuditEvent

// Defaults of Open.
const (
	DefaultMaxBytes = 16 << 20
	// Keep is how many rotated files are kept (FILE.1 ... FILE.3).
	Keep = 3
)

// Log appends events to a file, rotating it past MaxBytes.
type Log struct {
	path string
	max  int64

	mu   sync.Mutex
	f    *os.File
	size int64
}

// Open opens (creating, mode 0600) the log at path; maxBytes <= 0 is DefaultMaxBytes.
func Open(path string, maxBytes int64) (*Log, error) {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxBytes
	}
	l := &Log{path: path, max: maxBytes}
	if err := l.open(); err != nil {
		return nil, err
	}
	return l, nil
}

func (l *Log) open() error {
	f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("audit: %w", err)
	}
	if st.Mode().Perm()&0o077 != 0 {
		f.Chmod(0o600)
	}
	l.f, l.size = f, st.Size()
	return nil
}

// Path is the log file's name.
func (l *Log) Path() string { return l.path }

// Append writes e as one line, rotating first when the file would pass its size.
func (l *Log) Append(e Event) error {
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return os.ErrClosed
	}
	if l.size > 0 && l.size+int64(len(b)) > l.max {
		if err := l.rotate(); err != nil {
			return err
		}
	}
	n, err := l.f.Write(b)
	l.size += int64(n)
	return err
}

// rotate shifts FILE.(n) to FILE.(n+1), FILE to FILE.1, and starts anew.
func (l *Log) rotate() error {
	l.f.Close()
	l.f = nil
	for i := Keep - 1; i >= 1; i-- {
		os.Rename(fmt.Sprintf("%s.%d", l.path, i), fmt.Sprintf("%s.%d", l.path, i+1))
	}
	if err := os.Rename(l.path, l.path+".1"); err != nil {
		return fmt.Errorf("audit: rotate: %w", err)
	}
	return l.open()
}

// Close closes the file; later appends fail.
func (l *Log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}

// followEvery is how often Copy looks for new lines when following.
const followEvery = 200 * time.Millisecond

// Copy writes the log's current file to w and, with follow, the lines
// appended later (across rotations) until ctx ends.
func Copy(ctx context.Context, path string, w io.Writer, follow bool) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	defer func() { f.Close() }()
	r := bufio.NewReader(f)
	for {
		if _, err := io.Copy(w, r); err != nil {
			return err
		}
		if !follow {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(followEvery):
		}
		if rotated(f, path) {
			nf, err := os.Open(path)
			if err != nil {
				continue // between rename and create
			}
			io.Copy(w, r) // the rest of the old file
			// Files rotated out since: newer than f, older than nf.
			for _, name := range newerRotated(f, path) {
				if rf, err := os.Open(name); err == nil {
					io.Copy(w, rf)
					rf.Close()
				}
			}
			f.Close()
			f = nf
			r.Reset(f)
		}
	}
}

// newerRotated names the rotated files (FILE.n) newer than f, oldest
// first: those between f, now FILE.k, and FILE.
func newerRotated(f *os.File, path string) []string {
	fi, err := f.Stat()
	if err != nil {
		return nil
	}
	var out []string
	for i := 1; i <= Keep; i++ {
		name := fmt.Sprintf("%s.%d", path, i)
		st, err := os.Stat(name)
		if err != nil {
			break
		}
		if os.SameFile(fi, st) {
			return out
		}
		out = append([]string{name}, out...)
	}
	return out // f was rotated out entirely: all that is kept is newer
}

// rotated reports whether path names another file than f now.
func rotated(f *os.File, path string) bool {
	a, err1 := f.Stat()
	b, err2 := os.Stat(path)
	return err1 == nil && err2 == nil && !os.SameFile(a, b)
}
