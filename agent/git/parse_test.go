package git

import (
	"reflect"
	"testing"
	"time"
)

// Real outputs of git 2.39, captured from the scenarios in git_test.go.
const (
	realStatusWorktree = "# branch.oid 9087108d868596dd7c7f2b020df68b593e178bd9\x00# branch.head main\x00" +
		"1 .M N... 100644 100644 100644 4cb29ea38f70d7c61b2a3a25b02e3bdf44905402 4cb29ea38f70d7c61b2a3a25b02e3bdf44905402 a.txt\x00" +
		"2 R. N... 100644 100644 100644 627bc4af38265665b2fcd05d02c73929d9489cc9 627bc4af38265665b2fcd05d02c73929d9489cc9 R100 new.txt\x00old.txt\x00" +
		"1 .D N... 100644 100644 000000 587be6b4c3f93f93c489c0111bba5596147a26cb 587be6b4c3f93f93c489c0111bba5596147a26cb sp ace.txt\x00" +
		"? sub/n.txt\x00! ignored.log\x00"
	realStatusMerge = "# branch.oid de454fe786b3d380c51a3294d0e9f319f7a417b1\x00# branch.head feature\x00" +
		"# branch.upstream main\x00# branch.ab +1 -1\x00" +
		"1 A. N... 000000 100644 100644 0000000000000000000000000000000000000000 2378f14e9b0cb8716fd3bf612f280ccbf377505a .gitignore\x00" +
		"u UU N... 100644 100644 100644 100644 4cb29ea38f70d7c61b2a3a25b02e3bdf44905402 e45c9c2666d44e0327c1f9c239a74c508336053e f384549cbeb481e437091320de6d1f2e15e11b4a a.txt\x00"
	realStatusUnborn = "# branch.oid (initial)\x00# branch.head main\x00" +
		"1 A. N... 000000 100644 100644 0000000000000000000000000000000000000000 45b983be36b73c0788dc9cbcb76cbb80fc7bb057 a\x00"
	realNumstat = "1\t0\t.gitignore\x001\t0\ta.txt\x00-\t-\tb.bin\x000\t0\t\x00old.txt\x00new.txt\x000\t1\tsp ace.txt\x00"
	realLog     = "7bf3d5aa0d4c8e3c0e3bfb9b4b1e4a9bd3f1d7c2\x1fA\x1fa@b\x1f2026-11-23T09:31:22+00:00\x1fsecond one\x00" +
		"1d3a8c5f0e0e4c3a9e2b7f6d5c4b3a2918171615\x1fA B\x1fa@b\x1f2026-11-23T09:31:22+02:00\x1ffirst\x00"
)

// statusCases are ParseStatus's table; FuzzParseStatus seeds from them.
var statusCases = []struct {
	name string
	in   string
	want *Status
	ok   bool
}{
	{"empty", "", &Status{IsRepo: true}, true},
	{"worktree", realStatusWorktree, &Status{IsRepo: true,
		Branch: Branch{Head: "main", OID: "9087108d868596dd7c7f2b020df68b593e178bd9"},
		Entries: []StatusEntry{
			{Kind: KindChanged, Path: "a.txt", Index: ".", Worktree: "M", Submodule: "N..."},
			{Kind: KindRenamed, Path: "new.txt", OrigPath: "old.txt", Index: "R", Worktree: ".", Score: 100, Submodule: "N..."},
			{Kind: KindChanged, Path: "sp ace.txt", Index: ".", Worktree: "D", Submodule: "N..."},
			{Kind: KindUntracked, Path: "sub/n.txt", Index: "?", Worktree: "?"},
			{Kind: KindIgnored, Path: "ignored.log", Index: "!", Worktree: "!"},
		}}, true},
	{"merge", realStatusMerge, &Status{IsRepo: true,
		Branch: Branch{Head: "feature", OID: "de454fe786b3d380c51a3294d0e9f319f7a417b1", Upstream: "main", Ahead: 1, Behind: 1},
		Entries: []StatusEntry{
			{Kind: KindChanged, Path: ".gitignore", Index: "A", Worktree: ".", Submodule: "N..."},
			{Kind: KindUnmerged, Path: "a.txt", Index: "U", Worktree: "U", Submodule: "N..."},
		}}, true},
	{"unborn", realStatusUnborn, &Status{IsRepo: true,
		Branch:  Branch{Head: "main", Unborn: true},
		Entries: []StatusEntry{{Kind: KindChanged, Path: "a", Index: "A", Worktree: ".", Submodule: "N..."}}}, true},
	{"detached", "# branch.oid abc\x00# branch.head (detached)\x00", &Status{IsRepo: true,
		Branch: Branch{OID: "abc", Detached: true}}, true},
	{"unknown header skipped", "# stash 3\x00", &Status{IsRepo: true}, true},
	{"no final nul", "? a b", &Status{IsRepo: true, Entries: []StatusEntry{{Kind: KindUntracked, Path: "a b", Index: "?", Worktree: "?"}}}, true},
	{"rename without orig", "2 R. N... 100644 100644 100644 a b R100 new.txt", nil, false},
	{"bad score", "2 R. N... 100644 100644 100644 a b X100 new\x00old\x00", nil, false},
	{"score too big", "2 R. N... 100644 100644 100644 a b R101 new\x00old\x00", nil, false},
	{"short changed", "1 .M N... 100644", nil, false},
	{"bad xy", "1 M N... 100644 100644 100644 a b path\x00", nil, false},
	{"bad ab", "# branch.ab 1 2\x00", nil, false},
	{"negative ab", "# branch.ab +-1 -2\x00", nil, false},
	{"unknown record", "x whatever\x00", nil, false},
	{"empty record", "\x00\x00", nil, false},
	{"empty untracked path", "? \x00", nil, false},
}

func TestParseStatus(t *testing.T) {
	for _, tc := range statusCases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseStatus([]byte(tc.in))
			if (err == nil) != tc.ok {
				t.Fatalf("ParseStatus error = %v, want ok %v", err, tc.ok)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("ParseStatus =\n%+v\nwant\n%+v", got, tc.want)
			}
		})
	}
}

// numstatCases are ParseNumstat's table; FuzzParseNumstat seeds from them.
var numstatCases = []struct {
	name string
	in   string
	want []DiffFile
	ok   bool
}{
	{"empty", "", nil, true},
	{"real", realNumstat, []DiffFile{
		{Path: ".gitignore", Added: 1},
		{Path: "a.txt", Added: 1},
		{Path: "b.bin", Binary: true},
		{Path: "new.txt", OldPath: "old.txt"},
		{Path: "sp ace.txt", Deleted: 1},
	}, true},
	{"tab in path", "3\t4\ta\tb\x00", []DiffFile{{Path: "a\tb", Added: 3, Deleted: 4}}, true},
	{"rename missing new", "1\t2\t\x00old\x00", nil, false},
	{"rename empty new", "1\t2\t\x00old\x00\x00", nil, false},
	{"bad count", "x\t2\tpath\x00", nil, false},
	{"negative count", "-1\t2\tpath\x00", nil, false},
	{"half binary", "-\t2\tpath\x00", nil, false},
	{"no tabs", "path\x00", nil, false},
}

func TestParseNumstat(t *testing.T) {
	for _, tc := range numstatCases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseNumstat([]byte(tc.in))
			if (err == nil) != tc.ok {
				t.Fatalf("ParseNumstat error = %v, want ok %v", err, tc.ok)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("ParseNumstat =\n%+v\nwant\n%+v", got, tc.want)
			}
		})
	}
}

// logCases are ParseLog's table; FuzzParseLog seeds from them.
var logCases = []struct {
	name string
	in   string
	want []Commit
	ok   bool
}{
	{"empty", "", []Commit{}, true},
	{"real", realLog, []Commit{
		{OID: "7bf3d5aa0d4c8e3c0e3bfb9b4b1e4a9bd3f1d7c2", Author: "A", Email: "a@b",
			Time: time.Date(2026, 11, 23, 9, 31, 22, 0, time.FixedZone("", 0)), Subject: "second one"},
		{OID: "1d3a8c5f0e0e4c3a9e2b7f6d5c4b3a2918171615", Author: "A B", Email: "a@b",
			Time: time.Date(2026, 11, 23, 9, 31, 22, 0, time.FixedZone("", 2*3600)), Subject: "first"},
	}, true},
	{"subject with separator", "o\x1fa\x1fe\x1f2026-01-02T03:04:05Z\x1fa\x1fb\x00", []Commit{
		{OID: "o", Author: "a", Email: "e", Time: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Subject: "a\x1fb"},
	}, true},
	{"bad time", "o\x1fa\x1fe\x1fyesterday\x1fs\x00", nil, false},
	{"short", "o\x1fa\x00", nil, false},
}

func TestParseLog(t *testing.T) {
	for _, tc := range logCases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseLog([]byte(tc.in))
			if (err == nil) != tc.ok {
				t.Fatalf("ParseLog error = %v, want ok %v", err, tc.ok)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("ParseLog = %+v, want %+v", got, tc.want)
			}
			for i := range got {
				g, w := got[i], tc.want[i]
				if !g.Time.Equal(w.Time) || g.OID != w.OID || g.Author != w.Author || g.Email != w.Email || g.Subject != w.Subject {
					t.Errorf("commit %d = %+v, want %+v", i, g, w)
				}
				if _, off := g.Time.Zone(); off != func() int { _, o := w.Time.Zone(); return o }() {
					t.Errorf("commit %d zone offset %d, want the author's", i, off)
				}
			}
		})
	}
}
