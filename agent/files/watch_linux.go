package files

import (
	"context"
	"errors"
	iofs "io/fs"
	"path/filepath"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// WatchSupported is true: Linux watches with inotify.
const WatchSupported = true

// watchMask is what each watched directory reports.
const watchMask = unix.IN_CREATE | unix.IN_MODIFY | unix.IN_CLOSE_WRITE | unix.IN_DELETE |
	unix.IN_MOVED_FROM | unix.IN_MOVED_TO | unix.IN_DELETE_SELF | unix.IN_ONLYDIR | unix.IN_DONT_FOLLOW | unix.IN_EXCL_UNLINK

// Watch reports changes under directory p (and its subdirectories with
// recursive, new ones included) to emit until ctx is done; ready is called
// once the watches are in place. It uses one inotify instance, closed on
// return. The agent's temporary files are not reported (an atomic write
// shows as a create of its target).
func (f *FS) Watch(ctx context.Context, p string, recursive bool, ready func(), emit func(WatchEvent)) error {
	c, err := Clean(p)
	if err != nil {
		return err
	}
	host, err := f.HostDir(c)
	if err != nil {
		return err
	}
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return errorf(nil, "watch %s: inotify: %v", c, err)
	}
	defer unix.Close(fd)
	wake, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return errorf(nil, "watch %s: eventfd: %v", c, err)
	}
	defer unix.Close(wake)
	shown := emit
	emit = func(ev WatchEvent) {
		if ev.Path == "" || !f.hidden(ev.Path) {
			shown(ev)
		}
	}
	w := &inotify{fs: f, fd: fd, dirs: map[int32]string{}, top: c, hostTop: host, recursive: recursive}
	if err := w.add(c); err != nil {
		return err
	}
	ready()
	stop := context.AfterFunc(ctx, func() {
		var one = [8]byte{1}
		unix.Write(wake, one[:])
	})
	defer stop()
	buf := make([]byte, 64<<10)
	for {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}, {Fd: int32(wake), Events: unix.POLLIN}}
		if _, err := unix.Poll(fds, -1); err != nil && !errors.Is(err, unix.EINTR) {
			return errorf(nil, "watch %s: poll: %v", c, err)
		}
		if ctx.Err() != nil {
			return nil
		}
		n, err := unix.Read(fd, buf)
		if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return errorf(nil, "watch %s: read: %v", c, err)
		}
		w.parse(buf[:n], emit)
	}
}

// inotify is one Watch's state.
type inotify struct {
	fs        *FS
	fd        int
	top       string           // the watched directory, clean
	hostTop   string           // its host path
	dirs      map[int32]string // watch descriptor → clean dir
	recursive bool
}

// host is the host path of clean path p under the watched directory.
func (w *inotify) host(p string) string {
	if w.top == "." {
		return filepath.Join(w.hostTop, native(p))
	}
	return filepath.Join(w.hostTop, native(strings.TrimPrefix(strings.TrimPrefix(p, w.top), "/")))
}

// add watches clean directory c, and with recursive its subdirectories.
func (w *inotify) add(c string) error {
	wd, err := unix.InotifyAddWatch(w.fd, w.host(c), watchMask)
	if err != nil {
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
			return errorf(iofs.ErrNotExist, "watch %s: no such directory", c)
		}
		return errorf(nil, "watch %s: %v (raise fs.inotify.max_user_watches?)", c, err)
	}
	w.dirs[int32(wd)] = c
	if !w.recursive {
		return nil
	}
	return w.fs.walk(context.Background(), c, false, func(p string, e iofs.DirEntry) error {
		if e.IsDir() {
			if wd, err := unix.InotifyAddWatch(w.fd, w.host(p), watchMask); err == nil {
				w.dirs[int32(wd)] = p
			}
		}
		return nil
	})
}

// parse turns a read's inotify records into events.
func (w *inotify) parse(b []byte, emit func(WatchEvent)) {
	for len(b) >= unix.SizeofInotifyEvent {
		ev := (*unix.InotifyEvent)(unsafe.Pointer(&b[0]))
		end := unix.SizeofInotifyEvent + int(ev.Len)
		if end > len(b) {
			return
		}
		name := strings.TrimRight(string(b[unix.SizeofInotifyEvent:end]), "\x00")
		b = b[end:]
		if ev.Mask&unix.IN_Q_OVERFLOW != 0 {
			emit(WatchEvent{Overflow: true})
			continue
		}
		if ev.Mask&unix.IN_IGNORED != 0 {
			delete(w.dirs, ev.Wd)
			continue
		}
		dir, ok := w.dirs[ev.Wd]
		if !ok || strings.HasPrefix(name, TempPrefix) {
			continue
		}
		p := dir
		if name != "" {
			p = join(dir, name)
		}
		switch m := ev.Mask; {
		case m&(unix.IN_CREATE|unix.IN_MOVED_TO) != 0:
			emit(WatchEvent{Path: p, Op: WatchCreate})
			if m&unix.IN_ISDIR != 0 && w.recursive {
				// What was made in the new directory before its watch
				// was in place is reported from a scan after it is.
				w.add(p)
				w.fs.walk(context.Background(), p, false, func(q string, _ iofs.DirEntry) error {
					emit(WatchEvent{Path: q, Op: WatchCreate})
					return nil
				})
			}
		case m&(unix.IN_MODIFY|unix.IN_CLOSE_WRITE) != 0:
			emit(WatchEvent{Path: p, Op: WatchWrite})
		case m&unix.IN_MOVED_FROM != 0:
			emit(WatchEvent{Path: p, Op: WatchRename})
		case m&unix.IN_DELETE != 0:
			emit(WatchEvent{Path: p, Op: WatchRemove})
		case m&unix.IN_DELETE_SELF != 0 && name == "" && dir == w.dirs[ev.Wd]:
			// the directory itself: its parent's watch reports it
		}
	}
}
