package files

import (
	"archive/tar"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"os"
	"path"
	"slices"
	"strings"
)

// Archive errors, beyond the package's other kinds.
var (
	// ErrUnsafeEntry: a tar entry would leave the directory it is unpacked
	// into: an absolute or ".." name, a symlink or hard link pointing out,
	// or an entry under a symlink the same archive made. Nothing of that
	// entry was written.
	ErrUnsafeEntry = errors.New("unsafe archive entry")
	// ErrArchiveTooLarge: the archive declares more entries or bytes than
	// the limits allow (a tar bomb); refused at the header, before its
	// content is written.
	ErrArchiveTooLarge = errors.New("archive too large")
	// ErrUnsupportedEntry: a tar entry of a type that is not unpacked
	// (devices, FIFOs).
	ErrUnsupportedEntry = errors.New("unsupported archive entry")
)

// ArchiveLimits bound what one unpack may create.
type ArchiveLimits struct {
	// MaxEntries is the most entries (files, directories, links).
	MaxEntries int
	// MaxBytes is the most file content, as the headers declare it (a
	// sparse file counts its full size).
	MaxBytes int64
}

// DefaultArchiveLimits: 1,000,000 entries (a large monorepo with its
// node_modules is a few hundred thousand files) and 64 GiB of content. A
// tar is not compressed, so the bytes limit only matters for headers that
// claim sizes (or sparse maps) with little behind them; it stops such an
// entry at its header instead of at a full disk.
var DefaultArchiveLimits = ArchiveLimits{MaxEntries: 1_000_000, MaxBytes: 64 << 30}

// ArchiveResult counts what an unpack wrote.
type ArchiveResult struct {
	Files, Dirs, Links int
	Bytes              int64
}

// maxTrailing is how much data after the archive's end marker is read and
// ignored (tar pads to 10 KiB records; some writers pad more).
const maxTrailing = 1 << 20

// CheckEntryName validates a tar entry's name and returns it as a clean
// slash path relative to the directory being unpacked into. Absolute
// names, names with ".." that leave it, volume names, NUL bytes and the
// agent's temporary names are refused; "." (the directory itself) is
// returned for "./" and the like.
func CheckEntryName(name string) (string, error) {
	if name == "" {
		return "", errorf(ErrUnsafeEntry, "archive entry with an empty name")
	}
	n := strings.ReplaceAll(name, "\\", "/")
	if strings.HasPrefix(n, "/") || (len(n) >= 2 && n[1] == ':') {
		return "", errorf(ErrUnsafeEntry, "archive entry %q is absolute", name)
	}
	c, err := Clean(n)
	if err != nil {
		if errors.Is(err, ErrOutsideRoot) {
			return "", errorf(ErrUnsafeEntry, "archive entry %q leaves the directory", name)
		}
		return "", err
	}
	if isTemp(c) {
		return "", tempReserved("unpack", c)
	}
	return c, nil
}

// CheckLinkTarget validates the target of symlink entry c (clean, relative
// to the unpack directory): it must be relative and, resolved from the
// link's directory, stay inside the unpack directory.
func CheckLinkTarget(c, target string) error {
	t := strings.ReplaceAll(target, "\\", "/")
	if t == "" || strings.HasPrefix(t, "/") || (len(t) >= 2 && t[1] == ':') || strings.IndexByte(t, 0) >= 0 {
		return errorf(ErrUnsafeEntry, "archive symlink %s -> %q points outside", c, target)
	}
	r := path.Clean(path.Join(path.Dir(c), t))
	if r == ".." || strings.HasPrefix(r, "../") {
		return errorf(ErrUnsafeEntry, "archive symlink %s -> %q points outside", c, target)
	}
	return nil
}

// unpack is the state of one ExtractArchive.
type unpack struct {
	f     *FS
	dest  string // clean destination directory
	lim   ArchiveLimits
	res   ArchiveResult
	links map[string]bool // symlinks this archive made, lower-cased
	files map[string]bool // regular files this archive wrote
}

// ExtractArchive unpacks the tar stream r into directory p (created when
// missing). Every regular file is written atomically (as Write does, with
// overwrite); an entry that is unsafe, unsupported or over the limits ends
// the unpack with its error, leaving the entries before it in place and
// nothing of it. Where the platform can (Linux: syncfs), files are not
// synced one by one but all at once at the end, before it returns: an
// fsync per file made 20,000 small files take ten times rsync's time. Symlinks are made only when they point inside p; an
// entry under a symlink the archive made is refused (lower-cased
// comparison, so it holds on case-insensitive disks too); a hard link must
// name a file this archive wrote. Data after the end marker is ignored.
func (f *FS) ExtractArchive(ctx context.Context, p string, r io.Reader, lim ArchiveLimits) (ArchiveResult, error) {
	dest, err := Clean(p)
	if err != nil {
		return ArchiveResult{}, err
	}
	if isTemp(dest) {
		return ArchiveResult{}, tempReserved("unpack", dest)
	}
	if err := f.root.MkdirAll(native(dest), dirMode); err != nil {
		return ArchiveResult{}, mapErr("unpack", dest, err)
	}
	u := &unpack{f: f, dest: dest, lim: lim, links: map[string]bool{}, files: map[string]bool{}}
	tr := tar.NewReader(r)
	for entries := 0; ; entries++ {
		if err := ctx.Err(); err != nil {
			return u.res, err
		}
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			io.CopyN(io.Discard, r, maxTrailing)
			return u.res, f.syncAll(dest)
		}
		if err != nil {
			return u.res, errorf(iofs.ErrInvalid, "unpack %s: reading the tar stream: %v", dest, err)
		}
		if entries >= lim.MaxEntries {
			return u.res, errorf(ErrArchiveTooLarge, "unpack %s: more than %d entries", dest, lim.MaxEntries)
		}
		if err := u.entry(h, tr); err != nil {
			f.syncAll(dest)
			return u.res, err
		}
	}
}

// entry unpacks one entry.
func (u *unpack) entry(h *tar.Header, tr io.Reader) error {
	if h.Typeflag == tar.TypeXGlobalHeader {
		return nil
	}
	c, err := CheckEntryName(h.Name)
	if err != nil {
		return err
	}
	if err := u.underLink(c); err != nil {
		return err
	}
	full := join(u.dest, c)
	if u.f.hidden(full) {
		return errorf(ErrDenied, "archive entry %s: %s is a path the machine owner's policy denies", c, full)
	}
	if err := u.f.writeCheck(full); err != nil {
		return fmt.Errorf("archive entry %s: %w", c, err)
	}
	switch h.Typeflag {
	case tar.TypeDir:
		if c == "." {
			return nil
		}
		if err := u.f.root.MkdirAll(native(full), dirMode); err != nil {
			return mapErr("unpack", full, err)
		}
		u.res.Dirs++
		return nil
	case tar.TypeReg, tar.TypeRegA:
		return u.file(c, full, h, tr)
	case tar.TypeSymlink:
		return u.symlink(c, full, h.Linkname)
	case tar.TypeLink:
		return u.hardlink(c, full, h.Linkname)
	}
	return errorf(ErrUnsupportedEntry, "archive entry %s: type %q is not unpacked (only files, directories and links)", c, h.Typeflag)
}

// underLink refuses c when it or a parent is a symlink this archive made.
func (u *unpack) underLink(c string) error {
	l := strings.ToLower(c)
	for d := path.Dir(l); d != "."; d = path.Dir(d) {
		if u.links[d] {
			return errorf(ErrUnsafeEntry, "archive entry %s lies under a symlink the archive made", c)
		}
	}
	return nil
}

// file writes one regular file atomically.
func (u *unpack) file(c, full string, h *tar.Header, tr io.Reader) error {
	if c == "." {
		return errorf(ErrUnsafeEntry, "archive entry %q names the directory itself", h.Name)
	}
	if h.Size < 0 || h.Size > u.lim.MaxBytes-u.res.Bytes {
		return errorf(ErrArchiveTooLarge, "archive entry %s: %d bytes would pass the limit of %d", c, h.Size, u.lim.MaxBytes)
	}
	up, err := u.f.BeginWrite(full, WriteOptions{Mode: os.FileMode(h.Mode) & os.ModePerm, Overwrite: true, MkdirParents: true, NoSync: canSyncAll})
	if err != nil {
		return err
	}
	defer up.Abort()
	if _, err := io.CopyN(up, tr, h.Size); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return errorf(iofs.ErrInvalid, "archive entry %s: the stream ended inside its content", c)
		}
		return mapErr("unpack", full, err)
	}
	if _, err := up.Commit(); err != nil {
		return err
	}
	delete(u.links, strings.ToLower(c))
	u.files[c] = true
	u.res.Files++
	u.res.Bytes += h.Size
	return nil
}

// symlink makes a link that points inside the destination, atomically.
func (u *unpack) symlink(c, full, target string) error {
	if c == "." {
		return errorf(ErrUnsafeEntry, "archive entry %q names the directory itself", c)
	}
	if err := CheckLinkTarget(c, target); err != nil {
		return err
	}
	err := u.place(full, func(tmp string) error {
		return u.f.root.Symlink(strings.ReplaceAll(target, "/", string(os.PathSeparator)), native(tmp))
	})
	if err != nil {
		return err
	}
	u.links[strings.ToLower(c)] = true
	u.res.Links++
	return nil
}

// hardlink links c to a file this archive wrote.
func (u *unpack) hardlink(c, full, target string) error {
	t, err := CheckEntryName(target)
	if err != nil || !u.files[t] {
		return errorf(ErrUnsafeEntry, "archive hard link %s -> %q: only files the archive wrote may be linked", c, target)
	}
	src := join(u.dest, t)
	if err := u.place(full, func(tmp string) error { return u.f.root.Link(native(src), native(tmp)) }); err != nil {
		return err
	}
	u.files[c] = true
	u.res.Links++
	return nil
}

// place makes a new name with mk under a temporary name beside full and
// renames it over full, creating parents.
func (u *unpack) place(full string, mk func(tmp string) error) error {
	dir := path.Dir(full)
	if err := u.f.root.MkdirAll(native(dir), dirMode); err != nil {
		return mapErr("unpack", full, err)
	}
	tmp := join(dir, TempPrefix+rand.Text())
	u.f.recordTemp(tmp)
	defer u.f.forgetTemp(tmp)
	if err := mk(tmp); err != nil {
		return mapErr("unpack", full, err)
	}
	if fi, err := u.f.root.Lstat(native(full)); err == nil && fi.IsDir() {
		u.f.root.Remove(native(tmp))
		return errorf(iofs.ErrExist, "unpack %s: a directory is in the way", full)
	}
	if err := u.f.root.Rename(native(tmp), native(full)); err != nil {
		u.f.root.Remove(native(tmp))
		return mapErr("unpack", full, err)
	}
	return nil
}

// WriteArchive writes the tree at p to w as a tar stream, names relative
// to p (a file gives one entry, its base name). Symlinks are stored as
// links, never followed; other special files and the agent's temporary
// files are left out; entries that vanish during the walk are skipped.
func (f *FS) WriteArchive(ctx context.Context, p string, w io.Writer) error {
	c, err := Clean(p)
	if err != nil {
		return err
	}
	e, err := f.Stat(c)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(w)
	if e.Type != TypeDir {
		if err := f.tarEntry(tw, c, path.Base(c)); err != nil {
			return err
		}
	} else if err := f.tarDir(ctx, tw, c, ""); err != nil {
		return err
	}
	return tw.Close()
}

// tarDir writes the entries of directory c, named under prefix.
func (f *FS) tarDir(ctx context.Context, tw *tar.Writer, c, prefix string) error {
	d, err := f.root.Open(native(c))
	if err != nil {
		return mapErr("archive", c, err)
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return mapErr("archive", c, err)
	}
	slices.Sort(names)
	for _, n := range names {
		if err := ctx.Err(); err != nil {
			return err
		}
		if strings.HasPrefix(n, TempPrefix) || f.hidden(join(c, n)) {
			continue
		}
		sub, name := join(c, n), join(prefix, n)
		if prefix == "" {
			name = n
		}
		err := f.tarEntry(tw, sub, name)
		if errors.Is(err, errIsDir) {
			err = f.tarDir(ctx, tw, sub, name)
		}
		if err != nil && !errors.Is(err, iofs.ErrNotExist) {
			return err
		}
	}
	return nil
}

// errIsDir tells tarDir to descend: tarEntry wrote a directory's header.
var errIsDir = errors.New("directory")

// tarEntry writes c's header (and content, for a file) as name.
func (f *FS) tarEntry(tw *tar.Writer, c, name string) error {
	e, err := f.lstatEntry("archive", c)
	if err != nil {
		return err
	}
	h := &tar.Header{Name: name, Mode: int64(e.Mode), ModTime: e.ModTime, Format: tar.FormatPAX}
	switch e.Type {
	case TypeDir:
		h.Typeflag, h.Name = tar.TypeDir, name+"/"
		if err := tw.WriteHeader(h); err != nil {
			return fmt.Errorf("archive %s: %w", c, err)
		}
		return errIsDir
	case TypeSymlink:
		h.Typeflag, h.Linkname = tar.TypeSymlink, e.LinkTarget
		return tw.WriteHeader(h)
	case TypeFile:
	default:
		return nil
	}
	file, err := f.root.OpenFile(native(c), readFlags, 0)
	if err != nil {
		return mapErr("archive", c, err)
	}
	defer file.Close()
	fi, err := file.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return mapErr("archive", c, err)
	}
	h.Typeflag, h.Size = tar.TypeReg, fi.Size()
	if err := tw.WriteHeader(h); err != nil {
		return fmt.Errorf("archive %s: %w", c, err)
	}
	// A file that shrinks meanwhile is padded with zeros, one that grows
	// is cut at its size: the header's size is what the stream carries.
	n, err := io.CopyN(tw, file, h.Size)
	if errors.Is(err, io.EOF) {
		_, err = io.CopyN(tw, zeros{}, h.Size-n)
	}
	if err != nil {
		return fmt.Errorf("archive %s: %w", c, err)
	}
	return nil
}

// zeros reads as an endless run of zero bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}
