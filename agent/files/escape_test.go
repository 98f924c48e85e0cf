package files

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// etcProbe is a name that must never appear in /etc.
var etcProbe = fmt.Sprintf("outpost-escape-test-%d", os.Getpid())

// escapeCase is one attempt to leave the root.
type escapeCase struct {
	name string
	op   func(fx *fixture) error
	want string // wire code/reason; "" when the op is allowed (it stays inside)
}

// Helpers that turn each operation into func(*fixture) error.
func stat(p string) func(*fixture) error {
	return func(fx *fixture) error { _, err := fx.fs.Stat(p); return err }
}

func list(p string) func(*fixture) error {
	return func(fx *fixture) error { _, err := fx.fs.List(p, true, 0); return err }
}

func read(p string) func(*fixture) error {
	return func(fx *fixture) error {
		r, _, err := fx.fs.Read(p, 0, -1)
		if err == nil {
			io.Copy(io.Discard, r)
			r.Close()
		}
		return err
	}
}

func write(p string, overwrite, parents bool) func(*fixture) error {
	return func(fx *fixture) error {
		_, err := fx.fs.Write(p, strings.NewReader("pwned"), WriteOptions{Overwrite: overwrite, MkdirParents: parents})
		return err
	}
}

func mkdir(p string, parents bool) func(*fixture) error {
	return func(fx *fixture) error { return fx.fs.Mkdir(p, parents) }
}

func move(from, to string) func(*fixture) error {
	return func(fx *fixture) error { return fx.fs.Move(from, to, true) }
}

func remove(p string, recursive bool) func(*fixture) error {
	return func(fx *fixture) error { return fx.fs.Remove(p, recursive) }
}

// lexicalEscapes leave the root by name alone.
func lexicalEscapes() []escapeCase {
	deep := strings.Repeat("a/../", 500) + "../outside/secret.txt"
	return []escapeCase{
		{"stat dotdot", stat("../outside/secret.txt"), outsideRoot},
		{"read dotdot", read("../outside/secret.txt"), outsideRoot},
		{"read inner dotdot", read("dir/../../outside/secret.txt"), outsideRoot},
		{"read slash dotdot", read("/../outside/secret.txt"), outsideRoot},
		{"stat slash dotdot", stat("/.."), outsideRoot},
		{"list parent", list(".."), outsideRoot},
		{"list outside", list("../outside"), outsideRoot},
		{"read deep dotdot", read(deep), outsideRoot},
		{"read dotdot only", read(strings.Repeat("../", 1000) + "etc/passwd"), outsideRoot},
		{"read very long", read(strings.Repeat("../", 2000) + "etc/passwd"), "invalid"},
		{"stat long name", stat(strings.Repeat("x", 300)), "invalid"},
		{"write dotdot new", write("../outside/new.txt", false, false), outsideRoot},
		{"write dotdot overwrite", write("../outside/secret.txt", true, false), outsideRoot},
		{"write inner dotdot", write("dir/../../sibling.txt", true, false), outsideRoot},
		{"write dotdot parents", write("../outside/newdir/x", false, true), outsideRoot},
		{"mkdir dotdot", mkdir("../outside/newdir", false), outsideRoot},
		{"mkdir dotdot parents", mkdir("../newtree/a/b", true), outsideRoot},
		{"move to outside", move("a.txt", "../outside/moved.txt"), outsideRoot},
		{"move from outside", move("../outside/secret.txt", "stolen.txt"), outsideRoot},
		{"remove dotdot", remove("../outside/secret.txt", false), outsideRoot},
		{"remove outside recursive", remove("../outside", true), outsideRoot},
		{"remove parent recursive", remove("..", true), outsideRoot},
		{"read nul", read("a.txt\x00../../outside/secret.txt"), outsideRoot},
		{"write nul", write("x\x00/../../outside/new", true, true), outsideRoot},
		{"stat nul", stat("\x00"), outsideRoot},
		{"mkdir nul", mkdir("a\x00b", true), outsideRoot},
	}
}

// absoluteEscapes use host paths. A leading "/" means the root, so they
// land inside it and never reach the sentinel tree.
func absoluteEscapes() []escapeCase {
	// outsideAbs applies op to the sentinel's absolute host path plus suffix.
	outsideAbs := func(suffix string, op func(string) func(*fixture) error) func(*fixture) error {
		return func(fx *fixture) error { return op(filepath.ToSlash(fx.outside) + suffix)(fx) }
	}
	return []escapeCase{
		{"read absolute", outsideAbs("/secret.txt", read), "not_exist"},
		{"read etc passwd", read("/etc/passwd"), "not_exist"},
		{"write absolute", outsideAbs("/secret.txt", func(p string) func(*fixture) error {
			return write(p, true, false)
		}), "not_exist"},
		{"write absolute parents", outsideAbs("/secret.txt", func(p string) func(*fixture) error {
			return write(p, true, true)
		}), ""},
		{"remove absolute", outsideAbs("", func(p string) func(*fixture) error {
			return remove(p, true)
		}), "not_exist"},
	}
}

// linkEscapes leave the root through symbolic links.
func linkEscapes() []escapeCase {
	return []escapeCase{
		{"read via etc link", read("toetc/passwd"), outsideRoot},
		{"stat via etc link", stat("toetc/passwd"), outsideRoot},
		{"list via outside link", list("tooutside/sub"), outsideRoot},
		{"list via parent link", list("toparent/outside"), outsideRoot},
		{"read final link out", read("secretlink"), outsideRoot},
		{"read via absolute link", read("absoutside/secret.txt"), outsideRoot},
		{"read via parent link", read("toparent/outside/secret.txt"), outsideRoot},
		{"read back into root via parent", read("toparent/root/a.txt"), outsideRoot},
		{"read via absolute inside link", read("absinside/b.txt"), outsideRoot},
		{"read via middle dir link", read("dir/mid/secret.txt"), outsideRoot},
		{"write via middle dir link", write("dir/mid/new.txt", false, false), outsideRoot},
		{"overwrite via middle dir link", write("dir/mid/secret.txt", true, false), outsideRoot},
		{"write via outside link parents", write("tooutside/new/x.txt", false, true), outsideRoot},
		{"overwrite via parent link", write("toparent/sibling.txt", true, false), outsideRoot},
		{"write via etc link", write("toetc/"+etcProbe, false, false), outsideRoot},
		{"write via etc link parents", write("toetc/"+etcProbe+"/x", false, true), outsideRoot},
		{"overwrite final link replaces link", write("secretlink", true, false), ""},
		{"mkdir via outside link", mkdir("tooutside/newdir", false), outsideRoot},
		{"mkdir parents via middle link", mkdir("dir/mid/x/y", true), outsideRoot},
		{"mkdir parents via parent link", mkdir("toparent/newtree", true), outsideRoot},
		{"mkdir via etc link", mkdir("toetc/"+etcProbe, false), outsideRoot},
		{"move into outside link", move("a.txt", "tooutside/moved.txt"), outsideRoot},
		{"move out of outside link", move("tooutside/secret.txt", "stolen.txt"), outsideRoot},
		{"move dir via middle link", move("dir/mid/sub", "dir/stolen"), outsideRoot},
		{"move link itself", move("secretlink", "renamed-link"), ""},
		{"remove via outside link", remove("tooutside/secret.txt", false), outsideRoot},
		{"remove recursive via outside link", remove("tooutside/sub", true), outsideRoot},
		{"remove via middle link", remove("dir/mid/sub/inner.txt", false), outsideRoot},
		{"remove outside link itself", remove("tooutside", true), ""},
		{"remove dir holding link", remove("dir", true), ""},
		{"remove parent link itself", remove("toparent", false), ""},
		{"read link loop", read("loop"), "invalid"},
	}
}

// TestEscapes runs every attempt on a fresh fixture and checks both the
// error and that nothing beside the root, or in /etc, changed.
func TestEscapes(t *testing.T) {
	cases := append(lexicalEscapes(), linkEscapes()...)
	cases = append(cases, absoluteEscapes()...)
	if len(cases) < 40 {
		t.Fatalf("only %d escape cases", len(cases))
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fx := newFixture(t)
			fx.links(t)
			before := snapshot(t, fx.base, fx.root)
			err := tc.op(fx)
			if got := kindOf(err); got != tc.want {
				t.Errorf("got %q (%v), want %q", got, err, tc.want)
			}
			if d := diffSnapshots(before, snapshot(t, fx.base, fx.root)); len(d) > 0 {
				t.Errorf("outside the root changed:\n%s", strings.Join(d, "\n"))
			}
			if _, err := os.Lstat(filepath.Join("/etc", etcProbe)); err == nil {
				os.RemoveAll(filepath.Join("/etc", etcProbe))
				t.Errorf("created /etc/%s", etcProbe)
			}
			if tmp := tempFiles(t, fx.base); len(tmp) > 0 {
				t.Errorf("temporary files left: %v", tmp)
			}
		})
	}
}

// TestOverwriteLinkKeepsTarget checks that overwriting a symlink that points
// outside replaces the link inside the root and leaves its target alone.
func TestOverwriteLinkKeepsTarget(t *testing.T) {
	fx := newFixture(t)
	fx.links(t)
	if _, err := fx.fs.Write("secretlink", strings.NewReader("new"), WriteOptions{Overwrite: true}); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(fx.outside, "secret.txt")); got != "secret" {
		t.Errorf("target = %q, want secret", got)
	}
	fi, err := os.Lstat(filepath.Join(fx.root, "secretlink"))
	if err != nil || !fi.Mode().IsRegular() {
		t.Errorf("secretlink: %v %v, want a regular file", fi, err)
	}
}

// TestSwapMidUpload replaces the upload's directory with a link to the
// sentinel between BeginWrite and Commit.
func TestSwapMidUpload(t *testing.T) {
	fx := newFixture(t)
	fx.links(t)
	before := snapshot(t, fx.base, fx.root)
	u, err := fx.fs.BeginWrite("dir/sub/new.txt", WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer u.Abort()
	if _, err := u.Write([]byte("pwned")); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(fx.root, "dir", "sub")
	if err := os.Rename(sub, sub+"-old"); err != nil {
		t.Fatal(err)
	}
	mustSymlink(t, filepath.Join("..", "..", "outside"), sub)
	if _, err := u.Commit(); kindOf(err) != outsideRoot {
		t.Errorf("Commit = %v, want %s", err, outsideRoot)
	}
	if d := diffSnapshots(before, snapshot(t, fx.base, fx.root)); len(d) > 0 {
		t.Errorf("outside the root changed:\n%s", strings.Join(d, "\n"))
	}
}

// swapIterations is how many operations each racing worker performs.
const swapIterations = 300

// TestSwapRace flips the link "swap" between a directory inside the root and
// the sentinel while workers read, write, list and remove through it.
func TestSwapRace(t *testing.T) {
	fx := newFixture(t)
	fx.links(t)
	swap := filepath.Join(fx.root, "swap")
	mustWrite(t, filepath.Join(fx.root, "swap-dir", "f.txt"), "inside")
	mustSymlink(t, "swap-dir", swap)
	before := snapshot(t, fx.base, fx.root)

	stop := make(chan struct{})
	flipped := make(chan error, 1)
	go func() { flipped <- flip(swap, "swap-dir", stop) }()

	errs := make(chan error, 4)
	var wg sync.WaitGroup
	for _, work := range []func(*FS) error{raceRead, raceWrite, raceList, raceRemove} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- work(fx.fs)
		}()
	}
	wg.Wait()
	close(stop)
	if err := <-flipped; err != nil {
		t.Fatalf("flipper: %v", err)
	}
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if d := diffSnapshots(before, snapshot(t, fx.base, fx.root)); len(d) > 0 {
		t.Errorf("outside the root changed:\n%s", strings.Join(d, "\n"))
	}
}

// flip points link alternately at target and at ../outside, replacing the
// link atomically each time, until stop is closed.
func flip(link, target string, stop <-chan struct{}) error {
	tmp := link + "-new"
	for i := 0; ; i++ {
		select {
		case <-stop:
			return nil
		default:
		}
		to := target
		if i%2 == 0 {
			to = filepath.Join("..", "outside")
		}
		if err := os.Symlink(to, tmp); err != nil {
			return err
		}
		if err := os.Rename(tmp, link); err != nil {
			return err
		}
	}
}

// raceRead reads swap/f.txt; whatever succeeds must be the inside content.
func raceRead(f *FS) error {
	for range swapIterations {
		r, _, err := f.Read("swap/f.txt", 0, -1)
		if err != nil {
			continue
		}
		b, err := io.ReadAll(r)
		r.Close()
		if err == nil && string(b) != "inside" {
			return fmt.Errorf("read %q through the swapped link", b)
		}
	}
	return nil
}

// raceWrite writes files under swap.
func raceWrite(f *FS) error {
	for i := range swapIterations {
		f.Write("swap/f.txt", strings.NewReader("inside"), WriteOptions{Overwrite: true})
		f.Write(fmt.Sprintf("swap/new-%d.txt", i%3), strings.NewReader("x"), WriteOptions{Overwrite: true})
		f.Mkdir("swap/newdir/deeper", true)
	}
	return nil
}

// raceList lists swap; no entry may come from the sentinel.
func raceList(f *FS) error {
	for range swapIterations {
		es, _ := f.List("swap", true, 0)
		for _, e := range es {
			if e.Name == "secret.txt" || e.Name == "inner.txt" {
				return fmt.Errorf("listed %s through the swapped link", e.Path)
			}
		}
	}
	return nil
}

// raceRemove removes and moves files under swap.
func raceRemove(f *FS) error {
	for i := range swapIterations {
		f.Remove(fmt.Sprintf("swap/new-%d.txt", i%3), false)
		f.Remove("swap/newdir", true)
		f.Move("swap/f.txt", "swap/g.txt", true)
		f.Move("swap/g.txt", "swap/f.txt", true)
	}
	return nil
}
