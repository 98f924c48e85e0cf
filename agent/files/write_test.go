package files

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// sha is the hex SHA-256 of s.
func sha(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// failingReader yields data and then fails, like a dropped upload.
type failingReader struct{ data io.Reader }

func (r *failingReader) Read(p []byte) (int, error) {
	n, err := r.data.Read(p)
	if errors.Is(err, io.EOF) {
		return n, errors.New("connection reset")
	}
	return n, err
}

func TestWrite(t *testing.T) {
	big := strings.Repeat("0123456789", 20_000)
	tests := []struct {
		name, path string
		body       io.Reader
		opts       WriteOptions
		code       string
		want       string // content of path afterwards
	}{
		{"new", "new.txt", strings.NewReader("fresh"), WriteOptions{}, "", "fresh"},
		{"leading slash", "/new.txt", strings.NewReader("fresh"), WriteOptions{}, "", "fresh"},
		{"big", "big.txt", strings.NewReader(big), WriteOptions{}, "", big},
		{"empty", "empty.txt", strings.NewReader(""), WriteOptions{}, "", ""},
		{"overwrite", "a.txt", strings.NewReader("replaced"), WriteOptions{Overwrite: true}, "", "replaced"},
		{"no overwrite", "a.txt", strings.NewReader("replaced"), WriteOptions{}, "exist", "hello world"},
		{"parents", "x/y/z.txt", strings.NewReader("deep"), WriteOptions{MkdirParents: true}, "", "deep"},
		{"no parents", "x/y/z.txt", strings.NewReader("deep"), WriteOptions{}, "not_exist", "<missing>"},
		{"parent is a file", "a.txt/z.txt", strings.NewReader("deep"), WriteOptions{MkdirParents: true}, "exist", "<missing>"},
		{"directory", "dir", strings.NewReader("x"), WriteOptions{Overwrite: true}, "invalid", "<dir>"},
		{"root", "/", strings.NewReader("x"), WriteOptions{Overwrite: true}, "invalid", "<dir>"},
		{"bad mode", "m.txt", strings.NewReader("x"), WriteOptions{Mode: os.ModeSetuid | 0o755}, "invalid", "<missing>"},
		{"reader fails", "a.txt", &failingReader{strings.NewReader(big)}, WriteOptions{Overwrite: true}, "no kind", "hello world"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fx := newFixture(t)
			res, err := fx.fs.Write(tc.path, tc.body, tc.opts)
			if kindOf(err) != tc.code {
				t.Fatalf("Write error = %v, want %q", err, tc.code)
			}
			if got := contentAt(t, fx, tc.path); got != tc.want {
				t.Errorf("content = %.40q, want %.40q", got, tc.want)
			}
			if err == nil && (res.Size != int64(len(tc.want)) || res.SHA256 != sha(tc.want)) {
				t.Errorf("result = %+v, want size %d sha %s", res, len(tc.want), sha(tc.want))
			}
			if tmp := tempFiles(t, fx.base); len(tmp) > 0 {
				t.Errorf("temporary files left: %v", tmp)
			}
		})
	}
}

// contentAt reads root-relative p from the host: its content, "<dir>" or
// "<missing>".
func contentAt(t testing.TB, fx *fixture, p string) string {
	t.Helper()
	name := filepath.Join(fx.root, filepath.FromSlash(strings.TrimLeft(p, "/")))
	fi, err := os.Stat(name)
	switch {
	case err != nil:
		return "<missing>"
	case fi.IsDir():
		return "<dir>"
	}
	return readFile(t, name)
}

func TestWriteMode(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("windows has no permission bits")
	}
	tests := []struct {
		name     string
		path     string
		existing os.FileMode // 0: no existing file
		mode     os.FileMode
		want     os.FileMode
	}{
		{"new default", "n.txt", 0, 0, DefaultFileMode},
		{"new explicit", "n.txt", 0, 0o600, 0o600},
		{"keep existing", "a.txt", 0o751, 0, 0o751},
		{"replace existing", "a.txt", 0o751, 0o640, 0o640},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fx := newFixture(t)
			name := filepath.Join(fx.root, tc.path)
			if tc.existing != 0 {
				if err := os.Chmod(name, tc.existing); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := fx.fs.Write(tc.path, strings.NewReader("x"), WriteOptions{Mode: tc.mode, Overwrite: true}); err != nil {
				t.Fatal(err)
			}
			fi, err := os.Stat(name)
			if err != nil || fi.Mode().Perm() != tc.want {
				t.Errorf("mode = %v, %v; want %v", fi.Mode().Perm(), err, tc.want)
			}
		})
	}
}

func TestUploadChunks(t *testing.T) {
	fx := newFixture(t)
	u, err := fx.fs.BeginWrite("up/load.bin", WriteOptions{MkdirParents: true})
	if err != nil {
		t.Fatal(err)
	}
	defer u.Abort()
	chunks := []struct {
		data string
		off  int64
	}{{"world", 6}, {"hello ", 0}, {"!", 11}}
	for _, c := range chunks {
		if _, err := u.WriteAt([]byte(c.data), c.off); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := u.Write([]byte("?")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(fx.root, "up", "load.bin")); err == nil {
		t.Error("target visible before Commit")
	}
	res, err := u.Commit()
	const want = "hello world!?"
	if err != nil || res.Size != int64(len(want)) || res.SHA256 != sha(want) || res.Path != "up/load.bin" {
		t.Fatalf("Commit = %+v, %v; want %q", res, err, want)
	}
	if got := contentAt(t, fx, "up/load.bin"); got != want {
		t.Errorf("content = %q, want %q", got, want)
	}
	if _, err := u.Commit(); kindOf(err) != "upload_done" {
		t.Errorf("second Commit = %v, want upload_done", err)
	}
	if _, err := u.Write([]byte("x")); kindOf(err) != "upload_done" {
		t.Errorf("Write after Commit = %v, want upload_done", err)
	}
	if tmp := tempFiles(t, fx.base); len(tmp) > 0 {
		t.Errorf("temporary files left: %v", tmp)
	}
}

func TestUploadAbort(t *testing.T) {
	fx := newFixture(t)
	u, err := fx.fs.BeginWrite("a.txt", WriteOptions{Overwrite: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := u.Write([]byte("partial")); err != nil {
		t.Fatal(err)
	}
	if len(tempFiles(t, fx.root)) != 1 {
		t.Error("no temporary file while uploading")
	}
	if err := u.Abort(); err != nil {
		t.Fatal(err)
	}
	if err := u.Abort(); err != nil {
		t.Errorf("second Abort = %v", err)
	}
	if got := contentAt(t, fx, "a.txt"); got != "hello world" {
		t.Errorf("content = %q, want the old content", got)
	}
	if tmp := tempFiles(t, fx.base); len(tmp) > 0 {
		t.Errorf("temporary files left: %v", tmp)
	}
}

// TestUploadRace begins two no-overwrite uploads of one new path: the first
// to commit wins, the second conflicts and the winner's content stays.
func TestUploadRace(t *testing.T) {
	fx := newFixture(t)
	var us []*Upload
	for _, s := range []string{"first", "second"} {
		u, err := fx.fs.BeginWrite("race.txt", WriteOptions{})
		if err != nil {
			t.Fatal(err)
		}
		u.Write([]byte(s))
		us = append(us, u)
	}
	if _, err := us[0].Commit(); err != nil {
		t.Fatal(err)
	}
	if _, err := us[1].Commit(); kindOf(err) != "exist" {
		t.Errorf("second Commit = %v, want exist", err)
	}
	if got := contentAt(t, fx, "race.txt"); got != "first" {
		t.Errorf("content = %q, want first", got)
	}
	if tmp := tempFiles(t, fx.base); len(tmp) > 0 {
		t.Errorf("temporary files left: %v", tmp)
	}
}

// TestUploadHashOrders checks the sha256 Commit reports against the content
// written, whatever order chunks come in: early chunks kept in memory
// (retained or copied), early chunks past the memory bound read back, and
// overlapping or repeated writes, after which the file is read back.
func TestUploadHashOrders(t *testing.T) {
	big := maxHeld/2 + 1 // two early chunks of this size exceed maxHeld
	type w struct {
		off, n   int
		fill     byte
		retained bool
	}
	tests := []struct {
		name   string
		writes []w
	}{
		{"in order", []w{{0, 10, 'a', false}, {10, 10, 'b', true}}},
		{"reversed, retained", []w{{20, 5, 'c', true}, {10, 10, 'b', true}, {0, 10, 'a', true}}},
		{"reversed, copied", []w{{20, 5, 'c', false}, {10, 10, 'b', false}, {0, 10, 'a', false}}},
		{"early past the bound", []w{{2 * big, 7, 'c', true}, {big, big, 'b', true}, {0, big, 'a', true}}},
		{"overlap ahead", []w{{10, 10, 'b', true}, {15, 10, 'c', true}, {0, 10, 'a', true}}},
		{"repeat ahead, new bytes", []w{{10, 10, 'b', true}, {10, 10, 'x', false}, {0, 10, 'a', true}}},
		{"inside an early chunk", []w{{10, 10, 'b', true}, {12, 3, 'x', true}, {0, 10, 'a', true}}},
		{"behind the hashed prefix", []w{{0, 10, 'a', true}, {10, 10, 'b', true}, {5, 3, 'x', true}}},
		{"in order over an early chunk", []w{{10, 10, 'b', true}, {0, 15, 'a', true}, {15, 5, 'c', true}}},
		{"gap left", []w{{10, 10, 'b', true}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fx := newFixture(t)
			u, err := fx.fs.BeginWrite("f.bin", WriteOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer u.Abort()
			var want []byte
			for _, c := range tc.writes {
				p := bytes.Repeat([]byte{c.fill}, c.n)
				write := u.WriteAt
				if c.retained {
					write = u.WriteAtRetained
				}
				if _, err := write(p, int64(c.off)); err != nil {
					t.Fatal(err)
				}
				if !c.retained {
					clear(p) // the upload must have copied what it keeps
				}
				if end := c.off + c.n; end > len(want) {
					want = append(want, make([]byte, end-len(want))...)
				}
				copy(want[c.off:], bytes.Repeat([]byte{c.fill}, c.n))
			}
			res, err := u.Commit()
			if err != nil || res.SHA256 != sha(string(want)) || res.Size != int64(len(want)) {
				t.Fatalf("Commit = size %d sha %s, %v; want size %d sha %s", res.Size, res.SHA256, err, len(want), sha(string(want)))
			}
			if got := contentAt(t, fx, "f.bin"); got != string(want) {
				t.Errorf("content differs from what was written (%d bytes, want %d)", len(got), len(want))
			}
		})
	}
}
