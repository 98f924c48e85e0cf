package main

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// evictCopies drops the page cache of every regular file under dirs
// (POSIX_FADV_DONTNEED; the pages are clean, flushDisks ran first). The
// first carries and rsyncs each leave a 1 GiB copy behind: kept cached,
// the suite's memory grows by a copy a run, and on this Firecracker VM
// guest memory past ~8 GiB in use costs the host a fault per page (1 GiB
// written to tmpfs: 0.47 s up to 8 GiB, 3.0–3.2 s past it), so the
// suite's last runs, carry and rsync alike, ran ~1.5× slower for the
// same work. Evicted, every run starts with the same memory: the source
// tree cached, no copy, and no page of the store's (the carry suite
// passes the control plane's store directory too: rsync has no store).
// tmpfs keeps its pages (nothing to drop there). A file or directory gone
// while it walks (a block the store removed) is passed over.
func evictCopies(dirs []string) error {
	for _, d := range dirs {
		err := filepath.WalkDir(d, func(p string, e fs.DirEntry, err error) error {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // the store removed a block as we went
			}
			if err != nil || !e.Type().IsRegular() {
				return err
			}
			f, err := os.Open(p)
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			if err != nil {
				return err
			}
			defer f.Close()
			return unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
		})
		if err != nil {
			return err
		}
	}
	return nil
}
