// Package tmpfs mounts small file systems for tests that need a full disk.
package tmpfs

import "testing"

// Mount mounts an empty tmpfs of size bytes on directory dir (which must
// exist) and unmounts it at cleanup. Where that cannot be done (not Linux,
// not root, mount refused) it skips the test, saying why.
func Mount(t testing.TB, dir string, size int64) {
	t.Helper()
	if err := mount(dir, size); err != nil {
		t.Skipf("cannot mount a %d-byte tmpfs on %s (needs root on Linux): %v", size, dir, err)
	}
	t.Cleanup(func() {
		if err := unmount(dir); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
}
