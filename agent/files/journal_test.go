package files

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// crash ends u as a killed daemon would: the file handle goes, the
// temporary file stays.
func crash(u *Upload) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.done = true
	u.file.Close()
}

// crashRestore ends r as a killed daemon would: its files' descriptors
// are closed without a removal, and so are those of its directories and
// of the files it replaced (held: a dead process's count of them goes
// with it, so the restores a test runs next are not bounded by it).
func crashRestore(r *Restore) {
	r.mu.Lock()
	for _, rf := range r.files {
		if rf.up != nil && !rf.written {
			crash(rf.up)
		}
	}
	r.mu.Unlock()
	r.dirs.closeAll()
	r.releaseOld()
}

// TestJournalSweepsAfterCrash: uploads a crash interrupted leave temporary
// files that the next OpenJournal removes; finished writes leave nothing to
// remove, and a temporary-looking file the agent did not make is not
// touched.
func TestJournalSweepsAfterCrash(t *testing.T) {
	fx := newFixture(t)
	journal := filepath.Join(t.TempDir(), "agent.json.writes")
	if removed, err := fx.fs.OpenJournal(journal); err != nil || len(removed) > 0 {
		t.Fatalf("first OpenJournal = %v, %v; want nothing removed", removed, err)
	}
	var crashed []string
	for _, p := range []string{"a.txt", "dir/sub/new.txt"} {
		u, err := fx.fs.BeginWrite(p, WriteOptions{Overwrite: true})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := u.Write([]byte("partial")); err != nil {
			t.Fatal(err)
		}
		crash(u)
		crashed = append(crashed, u.tmp)
	}
	if _, err := fx.fs.Write("done.txt", strings.NewReader("done"), WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	aborted, err := fx.fs.BeginWrite("aborted.txt", WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	aborted.Abort()
	planted := filepath.Join(fx.root, "dir", TempPrefix+"not-mine")
	mustWrite(t, planted, "someone else's")
	fx.fs.Close()

	if got := len(tempFiles(t, fx.root)); got != 3 {
		t.Fatalf("%d temporary files after the crash, want 3 (two crashed, one planted)", got)
	}
	fs2, err := New(fx.root)
	if err != nil {
		t.Fatal(err)
	}
	defer fs2.Close()
	removed, err := fs2.OpenJournal(journal)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(removed)
	slices.Sort(crashed)
	if !slices.Equal(removed, crashed) {
		t.Errorf("removed %v, want %v", removed, crashed)
	}
	if tmp := tempFiles(t, fx.root); len(tmp) != 1 || tmp[0] != planted {
		t.Errorf("temporary files left: %v, want only %s", tmp, planted)
	}
	if got := contentAt(t, fx, "a.txt"); got != "hello world" {
		t.Errorf("a.txt = %q, want the old content", got)
	}
	if fi, err := os.Stat(journal); err != nil || fi.Size() != 0 {
		t.Errorf("journal after the sweep: %v, %v; want empty", fi, err)
	}
}

// TestJournalStaysSmall: with a write always in progress the journal never
// empties, and compaction keeps it near journalCompactAt; what it lists is
// still exactly the write in progress.
func TestJournalStaysSmall(t *testing.T) {
	old := journalCompactAt
	journalCompactAt = 1 << 10
	t.Cleanup(func() { journalCompactAt = old })
	fx := newFixture(t)
	journal := filepath.Join(t.TempDir(), "writes")
	if _, err := fx.fs.OpenJournal(journal); err != nil {
		t.Fatal(err)
	}
	open, err := fx.fs.BeginWrite("open.txt", WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		if _, err := fx.fs.Write("f.txt", strings.NewReader("x"), WriteOptions{Overwrite: true}); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
	}
	fi, err := os.Stat(journal)
	if err != nil || fi.Size() > 2*int64(journalCompactAt) {
		t.Fatalf("journal after 100 writes: %v, %v; want at most %d bytes", fi, err, 2*journalCompactAt)
	}
	live, err := readJournal(journal)
	if err != nil || len(live) != 1 || !live[open.tmp] {
		t.Fatalf("journal lists %v, %v; want only %s", live, err, open.tmp)
	}
	open.Abort()
	if fi, err := os.Stat(journal); err != nil || fi.Size() != 0 {
		t.Errorf("journal with nothing in progress: %v, %v; want empty", fi, err)
	}
}

// TestTempFilesHidden: the temporary file of a write in progress shows in
// no listing, reads as missing by name, and its names cannot be made.
func TestTempFilesHidden(t *testing.T) {
	fx := newFixture(t)
	u, err := fx.fs.BeginWrite("dir/up.txt", WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer u.Abort()
	tmp := u.tmp
	for _, rec := range []bool{false, true} {
		for _, dir := range []string{"", "dir"} {
			es, err := fx.fs.List(dir, rec, 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range es {
				if strings.Contains(e.Path, TempPrefix) {
					t.Errorf("List(%q, %v) shows %s", dir, rec, e.Path)
				}
			}
		}
	}
	tests := []struct {
		name string
		op   func() error
		code string
	}{
		{"stat", func() error { _, err := fx.fs.Stat(tmp); return err }, "not_exist"},
		{"list", func() error { _, err := fx.fs.List(tmp, false, 0); return err }, "not_exist"},
		{"read", func() error { _, _, err := fx.fs.Read(tmp, 0, -1); return err }, "not_exist"},
		{"open", func() error { _, _, err := fx.fs.Open(tmp); return err }, "not_exist"},
		{"remove", func() error { return fx.fs.Remove(tmp, false) }, "not_exist"},
		{"move from", func() error { return fx.fs.Move(tmp, "stolen.txt", false) }, "not_exist"},
		{"move to", func() error { return fx.fs.Move("a.txt", "dir/"+TempPrefix+"x", false) }, "invalid"},
		{"write", func() error {
			_, err := fx.fs.Write(TempPrefix+"x", strings.NewReader("x"), WriteOptions{})
			return err
		}, "invalid"},
		{"mkdir", func() error { return fx.fs.Mkdir(TempPrefix+"d/sub", true) }, "invalid"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.op(); kindOf(err) != tc.code {
				t.Fatalf("error = %v, want %s", err, tc.code)
			}
		})
	}
	if got := tempFiles(t, fx.root); len(got) != 1 {
		t.Errorf("temporary files = %v, want the one upload's", got)
	}
	if _, err := u.Write([]byte("still mine")); err != nil {
		t.Fatal(err)
	}
	if _, err := u.Commit(); err != nil {
		t.Fatal(err)
	}
}
