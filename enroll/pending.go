package enroll

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"

	"github.com/outposthq/outpost/internal/secretfile"
)

// PendingConfig is a config file made ready before enrolling: its directory
// exists and a temporary file in it is open for the config. Enrollment
// spends a single-use token, so a path the config cannot be written to must
// fail before the token is sent; PrepareConfig is that check, and Save
// finishes the write. Call Discard when Save is not reached (it is a no-op
// after Save).
type PendingConfig struct {
	path string

	mu   sync.Mutex
	tmp  *os.File // nil once saved or discarded
	done bool
}

// PrepareConfig readies path for a config: it creates the missing parent
// directories (mode 0700) and a temporary file (mode 0600) beside path, the
// file Save writes and renames into place. A path that is a directory, or
// whose directory cannot be made or written in (a parent that is a file, no
// permission, a read-only or full disk), is an error here, before anything
// is sent anywhere.
func PrepareConfig(path string) (*PendingConfig, error) {
	if path == "" {
		return nil, errors.New("config: no path")
	}
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return nil, fmt.Errorf("config %s: is a directory", path)
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, secretfile.DirMode); err != nil {
		return nil, fmt.Errorf("config %s: cannot make its directory: %w", path, err)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return nil, fmt.Errorf("config %s: cannot write in %s: %w", path, dir, err)
	}
	if err := f.Chmod(secretfile.FileMode); err != nil && runtime.GOOS != "windows" {
		f.Close()
		os.Remove(f.Name())
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	return &PendingConfig{path: path, tmp: f}, nil
}

// Path is where Save writes the config.
func (p *PendingConfig) Path() string { return p.path }

// Save validates c and writes it to the prepared file, synced, then renames
// it over the path (mode 0600). On error the temporary file is removed.
func (p *PendingConfig) Save(c *Config) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done {
		return fmt.Errorf("config %s: already saved or discarded", p.path)
	}
	p.done = true
	f := p.tmp
	p.tmp = nil
	err := p.write(f, c)
	if err != nil {
		f.Close()
		os.Remove(f.Name())
	}
	return err
}

// write puts c in f and f in place.
func (p *PendingConfig) write(f *os.File, c *Config) error {
	if err := c.Validate(); err != nil {
		return err
	}
	data, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	data = append(data, '\n')
	defer wipe(data)
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", p.path, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("write %s: %w", p.path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", p.path, err)
	}
	if err := os.Rename(f.Name(), p.path); err != nil {
		return fmt.Errorf("write %s: %w", p.path, err)
	}
	secretfile.SyncDir(filepath.Dir(p.path))
	return nil
}

// Discard removes the temporary file of a config that will not be saved.
// It is idempotent and a no-op after Save.
func (p *PendingConfig) Discard() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done {
		return
	}
	p.done = true
	p.tmp.Close()
	os.Remove(p.tmp.Name())
	p.tmp = nil
}
