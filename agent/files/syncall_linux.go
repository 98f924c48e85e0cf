package files

import "golang.org/x/sys/unix"

// canSyncAll: Linux flushes a whole file system with one syncfs.
const canSyncAll = true

// syncAll flushes the file system holding clean directory c: the data and
// renames of every file an unpack wrote without its own fsync.
func (f *FS) syncAll(c string) error {
	d, err := f.root.Open(native(c))
	if err != nil {
		return mapErr("sync", c, err)
	}
	defer d.Close()
	if err := unix.Syncfs(int(d.Fd())); err != nil {
		return mapErr("sync", c, err)
	}
	return nil
}
