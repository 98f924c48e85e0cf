package files

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"testing"
)

// tarEntry is one entry of a test archive.
type tarEntry struct {
	name, body, link string
	typ              byte
	size             int64 // declared size when it differs from body's
}

// makeTar builds a tar stream of es.
func makeTar(t testing.TB, es ...tarEntry) []byte {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, e := range es {
		typ := e.typ
		if typ == 0 {
			typ = tar.TypeReg
		}
		h := &tar.Header{Name: e.name, Typeflag: typ, Linkname: e.link, Mode: 0o644, Format: tar.FormatPAX}
		if typ == tar.TypeReg {
			h.Size = int64(len(e.body))
			if e.size != 0 {
				h.Size = e.size
			}
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatalf("header %s: %v", e.name, err)
		}
		if e.size == 0 && typ == tar.TypeReg {
			tw.Write([]byte(e.body))
		}
	}
	if err := tw.Flush(); err != nil && len(es) > 0 && es[len(es)-1].size == 0 {
		t.Fatalf("flush: %v", err)
	}
	if es == nil || es[len(es)-1].size == 0 {
		tw.Close()
	}
	return b.Bytes()
}

var kindArchive = map[error]string{ErrUnsafeEntry: "unsafe", ErrArchiveTooLarge: "too_large", ErrUnsupportedEntry: "unsupported"}

func init() {
	for k, v := range kindArchive {
		kindNames[k] = v
	}
}

func TestExtractArchiveRefusesUnsafeEntries(t *testing.T) {
	small := ArchiveLimits{MaxEntries: 3, MaxBytes: 100}
	for _, tc := range []struct {
		name    string
		entries []tarEntry
		lim     ArchiveLimits
		want    string
	}{
		{"dotdot", []tarEntry{{name: "../outside/evil.txt", body: "x"}}, DefaultArchiveLimits, "unsafe"},
		{"dotdot deep", []tarEntry{{name: "a/../../sibling.txt", body: "x"}}, DefaultArchiveLimits, "unsafe"},
		{"absolute", []tarEntry{{name: "/etc/evil", body: "x"}}, DefaultArchiveLimits, "unsafe"},
		{"absolute outside", []tarEntry{{name: filepath.ToSlash(os.TempDir()) + "/evil", body: "x"}}, DefaultArchiveLimits, "unsafe"},
		{"symlink out", []tarEntry{{name: "l", typ: tar.TypeSymlink, link: "../../outside"}}, DefaultArchiveLimits, "unsafe"},
		{"symlink absolute", []tarEntry{{name: "l", typ: tar.TypeSymlink, link: "/etc"}}, DefaultArchiveLimits, "unsafe"},
		{"symlink then file", []tarEntry{{name: "l", typ: tar.TypeSymlink, link: "sub"}, {name: "l/x", body: "x"}}, DefaultArchiveLimits, "unsafe"},
		{"symlink then file case", []tarEntry{{name: "L", typ: tar.TypeSymlink, link: "sub"}, {name: "l/x", body: "x"}}, DefaultArchiveLimits, "unsafe"},
		{"existing escaping symlink", []tarEntry{{name: "tooutside/evil.txt", body: "x"}}, DefaultArchiveLimits, outsideRoot},
		{"hard link out", []tarEntry{{name: "h", typ: tar.TypeLink, link: "../outside/secret.txt"}}, DefaultArchiveLimits, "unsafe"},
		{"hard link absolute", []tarEntry{{name: "h", typ: tar.TypeLink, link: "/etc/passwd"}}, DefaultArchiveLimits, "unsafe"},
		{"hard link to existing", []tarEntry{{name: "h", typ: tar.TypeLink, link: "a.txt"}}, DefaultArchiveLimits, "unsafe"},
		{"fifo", []tarEntry{{name: "p", typ: tar.TypeFifo}}, DefaultArchiveLimits, "unsupported"},
		{"char device", []tarEntry{{name: "d", typ: tar.TypeChar}}, DefaultArchiveLimits, "unsupported"},
		{"too many entries", []tarEntry{{name: "1"}, {name: "2"}, {name: "3"}, {name: "4"}}, small, "too_large"},
		{"too many bytes", []tarEntry{{name: "big", size: 1 << 40}}, DefaultArchiveLimits, "too_large"},
		{"too many bytes summed", []tarEntry{{name: "a1", body: string(make([]byte, 60))}, {name: "a2", body: string(make([]byte, 60))}}, small, "too_large"},
		{"temp name", []tarEntry{{name: TempPrefix + "x", body: "x"}}, DefaultArchiveLimits, "invalid"},
		{"truncated content", []tarEntry{{name: "t", body: "abc", size: 10}}, DefaultArchiveLimits, "invalid"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx := newFixture(t)
			fx.links(t)
			before := snapshot(t, fx.base, fx.root)
			_, err := fx.fs.ExtractArchive(context.Background(), ".", bytes.NewReader(makeTar(t, tc.entries...)), tc.lim)
			if got := kindOf(err); got != tc.want {
				t.Fatalf("err = %v (%s), want %s", err, got, tc.want)
			}
			if d := diffSnapshots(before, snapshot(t, fx.base, fx.root)); len(d) > 0 {
				t.Errorf("outside the root changed: %v", d)
			}
			if tf := tempFiles(t, fx.base); len(tf) > 0 {
				t.Errorf("temporary files left: %v", tf)
			}
			if _, err := os.Lstat(filepath.Join(fx.root, "l", "x")); err == nil {
				t.Errorf("a file was written through the archive's symlink")
			}
		})
	}
}

func TestExtractArchiveDotDotRootDest(t *testing.T) {
	fx := newFixture(t)
	_, err := fx.fs.ExtractArchive(context.Background(), "../outside", bytes.NewReader(makeTar(t, tarEntry{name: "x", body: "x"})), DefaultArchiveLimits)
	if kindOf(err) != outsideRoot {
		t.Fatalf("err = %v, want outside_root", err)
	}
}

func TestArchiveRoundTrip(t *testing.T) {
	fx := newFixture(t)
	mustWrite(t, filepath.Join(fx.root, "src", "x", "y.txt"), "why")
	mustWrite(t, filepath.Join(fx.root, "src", "z.bin"), "\x00\x01zed")
	mustSymlink(t, "x/y.txt", filepath.Join(fx.root, "src", "ln"))
	mustWrite(t, filepath.Join(fx.root, "src", TempPrefix+"junk"), "temp")
	var b bytes.Buffer
	if err := fx.fs.WriteArchive(context.Background(), "src", &b); err != nil {
		t.Fatalf("WriteArchive: %v", err)
	}
	res, err := fx.fs.ExtractArchive(context.Background(), "copy", &b, DefaultArchiveLimits)
	if err != nil {
		t.Fatalf("ExtractArchive: %v", err)
	}
	if res.Files != 2 || res.Dirs != 1 || res.Links != 1 || res.Bytes != 8 {
		t.Errorf("result = %+v, want 2 files, 1 dir, 1 link, 8 bytes", res)
	}
	if got := readFile(t, filepath.Join(fx.root, "copy", "x", "y.txt")); got != "why" {
		t.Errorf("copy/x/y.txt = %q", got)
	}
	if got := readFile(t, filepath.Join(fx.root, "copy", "z.bin")); got != "\x00\x01zed" {
		t.Errorf("copy/z.bin = %q", got)
	}
	if l, err := os.Readlink(filepath.Join(fx.root, "copy", "ln")); err != nil || filepath.ToSlash(l) != "x/y.txt" {
		t.Errorf("copy/ln -> %q, %v", l, err)
	}
	if _, err := os.Lstat(filepath.Join(fx.root, "copy", TempPrefix+"junk")); err == nil {
		t.Errorf("a temporary file was archived")
	}
	// A hard link to a file the archive wrote is made.
	res, err = fx.fs.ExtractArchive(context.Background(), "hl", bytes.NewReader(makeTar(t,
		tarEntry{name: "f", body: "eff"}, tarEntry{name: "g", typ: tar.TypeLink, link: "f"})), DefaultArchiveLimits)
	if err != nil || readFile(t, filepath.Join(fx.root, "hl", "g")) != "eff" {
		t.Errorf("hard link: %+v, %v", res, err)
	}
}

func TestWriteArchiveOneFile(t *testing.T) {
	fx := newFixture(t)
	var b bytes.Buffer
	if err := fx.fs.WriteArchive(context.Background(), "dir/b.txt", &b); err != nil {
		t.Fatal(err)
	}
	h, err := tar.NewReader(&b).Next()
	if err != nil || h.Name != "b.txt" || h.Size != 3 {
		t.Fatalf("entry = %+v, %v", h, err)
	}
	if err := fx.fs.WriteArchive(context.Background(), "tooutside", &b); err == nil {
		// a symlink at the top is archived as a link, never followed
		if h, _ := tar.NewReader(bytes.NewReader(b.Bytes()[1024:])).Next(); h != nil && h.Typeflag != tar.TypeSymlink {
			t.Errorf("top symlink archived as %q", h.Typeflag)
		}
	}
	if err := fx.fs.WriteArchive(context.Background(), "../outside", &b); kindOf(err) != outsideRoot {
		t.Errorf("archive of ../outside: %v", err)
	}
}

// FuzzExtractArchive unpacks arbitrary bytes: whatever they hold, nothing
// outside the destination changes and no temporary file stays.
func FuzzExtractArchive(f *testing.F) {
	f.Add(makeTar(f, tarEntry{name: "a/b.txt", body: "x"}))
	f.Add(makeTar(f, tarEntry{name: "../x", body: "x"}))
	f.Add(makeTar(f, tarEntry{name: "l", typ: tar.TypeSymlink, link: ".."}, tarEntry{name: "l/x", body: "x"}))
	f.Add(makeTar(f, tarEntry{name: "h", typ: tar.TypeLink, link: "../../sibling.txt"}))
	f.Add(makeTar(f, tarEntry{name: "d/", typ: tar.TypeDir}, tarEntry{name: "d/l", typ: tar.TypeSymlink, link: "../.."}))
	f.Add([]byte("not a tar"))
	f.Fuzz(func(t *testing.T, data []byte) {
		fx := newFixture(t)
		if err := os.Mkdir(filepath.Join(fx.root, "dest"), 0o755); err != nil {
			t.Fatal(err)
		}
		before := snapshot(t, fx.base, filepath.Join(fx.root, "dest"))
		_, err := fx.fs.ExtractArchive(context.Background(), "dest", bytes.NewReader(data), ArchiveLimits{MaxEntries: 50, MaxBytes: 1 << 20})
		if err != nil && kindOf(err) == "no kind" {
			t.Errorf("error of no kind: %v", err)
		}
		after := snapshot(t, fx.base, filepath.Join(fx.root, "dest"))
		delete(after, filepath.Join(fx.root, "dest"))
		delete(before, filepath.Join(fx.root, "dest"))
		if d := diffSnapshots(before, after); len(d) > 0 {
			t.Errorf("outside dest changed: %v", d)
		}
		if tf := tempFiles(t, fx.base); len(tf) > 0 {
			t.Errorf("temporary files left: %v", tf)
		}
	})
}

// FuzzCheckEntryName: an accepted name never leaves the directory.
func FuzzCheckEntryName(f *testing.F) {
	for _, s := range []string{"a", "../a", "/a", "a/../../b", "C:\\x", "a\\..\\..\\b", "./", "a\x00b"} {
		f.Add(s, "x")
	}
	f.Fuzz(func(t *testing.T, name, link string) {
		c, err := CheckEntryName(name)
		if err != nil {
			return
		}
		if !filepath.IsLocal(filepath.FromSlash(c)) && c != "." {
			t.Errorf("CheckEntryName(%q) = %q, not local", name, c)
		}
		if CheckLinkTarget(c, link) == nil {
			r := filepath.Join(filepath.Dir(filepath.FromSlash(c)), filepath.FromSlash(link))
			if !filepath.IsLocal(r) && r != "." {
				t.Errorf("CheckLinkTarget(%q, %q) accepted, resolves to %q", c, link, r)
			}
		}
		_ = errors.Is
	})
}

// TestExtractArchiveReplacedDirectory: the unpack keeps directories open,
// but an entry that replaces a path (a file over a symlink to a
// directory) makes later entries under it resolve anew: "lnk/b" after the
// file "lnk" fails as it would on a fresh walk, and nothing lands in the
// directory the symlink pointed to. Modes come from the headers.
func TestExtractArchiveReplacedDirectory(t *testing.T) {
	fx := newFixture(t)
	if err := os.MkdirAll(filepath.Join(fx.root, "dest", "real"), 0o755); err != nil {
		t.Fatal(err)
	}
	mustSymlink(t, "real", filepath.Join(fx.root, "dest", "lnk"))
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, e := range []struct {
		name string
		mode int64
	}{{"lnk/a", 0o600}, {"lnk", 0o751}, {"lnk/b", 0o644}} {
		tw.WriteHeader(&tar.Header{Name: e.name, Typeflag: tar.TypeReg, Mode: e.mode, Size: 1})
		tw.Write([]byte("x"))
	}
	tw.Close()
	res, err := fx.fs.ExtractArchive(context.Background(), "dest", &b, DefaultArchiveLimits)
	if err == nil {
		t.Fatalf("lnk/b after the file lnk was unpacked: %+v", res)
	}
	if res.Files != 2 {
		t.Errorf("files written %d, want 2 (lnk/a, lnk)", res.Files)
	}
	if fi, err := os.Stat(filepath.Join(fx.root, "dest", "real", "a")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("real/a: %v, %v", fi, err)
	}
	if fi, err := os.Lstat(filepath.Join(fx.root, "dest", "lnk")); err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o751 {
		t.Errorf("lnk: %v, %v", fi, err)
	}
	if _, err := os.Lstat(filepath.Join(fx.root, "dest", "real", "b")); err == nil {
		t.Errorf("lnk/b was written into the directory the replaced symlink pointed to")
	}
	if tf := tempFiles(t, filepath.Join(fx.root, "dest")); len(tf) > 0 {
		t.Errorf("temporary files left: %v", tf)
	}
}

// TestExtractArchiveWorkersKeepOrder: small files are written several at
// once, yet the stream's order decides: a name written twice keeps the
// later content, a hard link to a file just written finds it, a file over
// a symlink to a directory is placed before entries under its name are
// looked at, and a file that cannot be written (a directory in its way)
// fails the unpack with every file before it in place and no temporary
// file left.
func TestExtractArchiveWorkersKeepOrder(t *testing.T) {
	fx := newFixture(t)
	var es, once []tarEntry
	for i := range 300 {
		first := tarEntry{name: fmt.Sprintf("d%d/f%03d", i%3, i), body: fmt.Sprintf("first %d", i)}
		es = append(es, first, tarEntry{name: first.name, body: fmt.Sprintf("second %d", i)})
		once = append(once, first)
	}
	es = append(es, tarEntry{name: "hl", typ: tar.TypeLink, link: "d2/f299"})
	res, err := fx.fs.ExtractArchive(context.Background(), "dest", bytes.NewReader(makeTar(t, es...)), DefaultArchiveLimits)
	if err != nil {
		t.Fatal(err)
	}
	if res.Files != 600 || res.Links != 1 {
		t.Errorf("result %+v", res)
	}
	for i := range 300 {
		if got := readFile(t, filepath.Join(fx.root, "dest", fmt.Sprintf("d%d/f%03d", i%3, i))); got != fmt.Sprintf("second %d", i) {
			t.Fatalf("file %d = %q, want the later entry's content", i, got)
		}
	}
	if got := readFile(t, filepath.Join(fx.root, "dest", "hl")); got != "second 299" {
		t.Errorf("hard link = %q", got)
	}

	// A directory in the way of entry 150.
	if err := os.MkdirAll(filepath.Join(fx.root, "dest2", "d0", "f150"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err = fx.fs.ExtractArchive(context.Background(), "dest2", bytes.NewReader(makeTar(t, once...)), DefaultArchiveLimits)
	if !errors.Is(err, iofs.ErrInvalid) {
		t.Fatalf("unpack over a directory: %v", err)
	}
	for i := range 150 {
		if got := readFile(t, filepath.Join(fx.root, "dest2", fmt.Sprintf("d%d/f%03d", i%3, i))); got != fmt.Sprintf("first %d", i) {
			t.Fatalf("file %d before the failure = %q", i, got)
		}
	}
	for _, d := range []string{"d0", "d1", "d2"} {
		if tf := tempFiles(t, filepath.Join(fx.root, "dest2", d)); len(tf) > 0 {
			t.Errorf("temporary files left in %s: %v", d, tf)
		}
	}
}

// TestWriteArchiveIsSorted: entries come in name order within each
// directory, whatever order the file system lists them in, so the same
// tree gives the same archive.
func TestWriteArchiveIsSorted(t *testing.T) {
	fx := newFixture(t)
	var want []string
	for i := range 200 {
		name := fmt.Sprintf("f%03d", (i*37)%200)
		mustWrite(t, filepath.Join(fx.root, "many", name), name)
		want = append(want, name)
	}
	slices.Sort(want)
	var b bytes.Buffer
	if err := fx.fs.WriteArchive(context.Background(), "many", &b); err != nil {
		t.Fatalf("WriteArchive: %v", err)
	}
	var got []string
	tr := tar.NewReader(&b)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			got = append(got, path.Base(h.Name))
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("entries in this order: %v", got)
	}
}
