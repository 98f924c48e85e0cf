// Package secretfile reads and writes files that hold secrets (nkey seeds,
// credentials, tokens): owner-only modes, refused when group or others can
// reach them, written atomically so nobody sees half a key.
package secretfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
)

// ErrInsecure is returned (wrapped) when a secret file can be read or
// written by group or others.
var ErrInsecure = errors.New("file is accessible by group or others")

// Modes of secret files and of the directories that hold them.
const (
	FileMode fs.FileMode = 0o600
	DirMode  fs.FileMode = 0o700
)

// CheckPrivate refuses a secret file whose mode lets group or others in. On
// Windows the permission bits carry no meaning and the check is skipped.
func CheckPrivate(path string, fi fs.FileInfo) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return fmt.Errorf("%w: %s has mode %#o; run: chmod 600 %s", ErrInsecure, path, perm, path)
	}
	return nil
}

// Read reads a secret file after checking its mode, at most max
// bytes.
func Read(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", path)
	}
	if err := CheckPrivate(path, fi); err != nil {
		return nil, err
	}
	if fi.Size() > max {
		return nil, fmt.Errorf("%s: %d bytes, at most %d", path, fi.Size(), max)
	}
	data := make([]byte, fi.Size())
	if _, err := f.ReadAt(data, 0); err != nil && fi.Size() > 0 {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return data, nil
}

// writeTemp writes data to a new 0600 temp file in dir and syncs it; the
// caller renames or links it into place and removes it on failure.
func writeTemp(dir, pattern string, data []byte) (string, error) {
	f, err := os.CreateTemp(dir, pattern)
	if err != nil {
		return "", err
	}
	name := f.Name()
	fail := func(err error) (string, error) {
		f.Close()
		os.Remove(name)
		return "", err
	}
	// CreateTemp already uses 0600; make it explicit against odd umasks and
	// platforms.
	if err := f.Chmod(FileMode); err != nil && runtime.GOOS != "windows" {
		return fail(err)
	}
	if _, err := f.Write(data); err != nil {
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		os.Remove(name)
		return "", err
	}
	return name, nil
}

// WriteAtomic replaces path with data, mode 0600: readers see the old
// content or the new, never a partial file, and the result is 0600 even when
// the old file had a looser mode.
func WriteAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	tmp, err := writeTemp(dir, "."+filepath.Base(path)+".tmp-*", data)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	SyncDir(dir)
	return nil
}

// CreateExclusive writes data to path only if path does not exist yet,
// atomically (temp file, then a hard link that fails if path exists). It
// reports fs.ErrExist (wrapped) when another writer got there first.
func CreateExclusive(path string, data []byte) error {
	dir := filepath.Dir(path)
	tmp, err := writeTemp(dir, "."+filepath.Base(path)+".tmp-*", data)
	if err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	defer os.Remove(tmp)
	if err := os.Link(tmp, path); err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	SyncDir(dir)
	return nil
}

// SyncDir makes a rename durable where the platform supports it; best effort.
func SyncDir(dir string) {
	if runtime.GOOS == "windows" {
		return
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}

// Wipe overwrites b, so a secret read into it does not linger in memory.
func Wipe(b []byte) {
	for i := range b {
		b[i] = 'x'
	}
}
