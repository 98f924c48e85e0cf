package git

import (
	"context"
	"fmt"
	"strconv"
	"strings"
)

// Entry kinds, as in the API's "kind" field.
const (
	KindChanged   = "changed"
	KindRenamed   = "renamed" // renamed or copied; Index or Worktree says which
	KindUnmerged  = "unmerged"
	KindUntracked = "untracked"
	KindIgnored   = "ignored"
)

// StatusOptions control Status.
type StatusOptions struct {
	// Ignored also lists ignored files.
	Ignored bool
}

// Status is the state of a work tree.
type Status struct {
	// IsRepo is false when the directory is in no repository; then the rest
	// is empty.
	IsRepo bool
	// Branch describes HEAD and its upstream.
	Branch Branch
	// Entries are the paths that differ from HEAD or the index, in git's
	// order.
	Entries []StatusEntry
}

// Branch describes HEAD.
type Branch struct {
	// Head is the checked-out branch; empty when Detached.
	Head string
	// OID is the commit HEAD points to; empty when Unborn.
	OID string
	// Upstream is the upstream branch, such as "origin/main"; empty if none.
	Upstream string
	// Ahead and Behind count commits relative to Upstream; both are zero
	// when the upstream is unset or gone.
	Ahead, Behind int
	// Detached is true when HEAD is not on a branch.
	Detached bool
	// Unborn is true before the first commit.
	Unborn bool
}

// StatusEntry is one path in a status.
type StatusEntry struct {
	// Kind is KindChanged, KindRenamed, KindUnmerged, KindUntracked or
	// KindIgnored.
	Kind string
	// Path is relative to the repository's top directory.
	Path string
	// OrigPath is the source of a rename or copy.
	OrigPath string
	// Index and Worktree are git's X and Y status letters ("M", "A", "D",
	// "R", "C", "T", "U", "." for unchanged, "?" untracked, "!" ignored).
	Index, Worktree string
	// Score is the rename or copy similarity in percent.
	Score int
	// Submodule is git's 4-letter submodule state ("N..." for a plain file).
	Submodule string
}

// Status reports the work tree of dir with
// `git status --porcelain=v2 --branch -z --untracked-files=all`. A directory
// in no repository gives IsRepo false and no error.
func (g *Git) Status(ctx context.Context, dir string, opts StatusOptions) (*Status, error) {
	ok, err := g.inWorkTree(ctx, dir)
	if err != nil {
		return nil, err
	}
	if !ok {
		return &Status{}, nil
	}
	args := []string{"status", "--porcelain=v2", "--branch", "-z", "--untracked-files=all"}
	if opts.Ignored {
		args = append(args, "--ignored")
	}
	out, err := g.output(ctx, dir, nil, args...)
	if err != nil {
		return nil, err
	}
	st, err := ParseStatus(out)
	if err != nil {
		return nil, errorf(nil, "git status: %v", err)
	}
	return st, nil
}

// ParseStatus parses `git status --porcelain=v2 --branch -z` output. It never
// panics; malformed input is an error.
func ParseStatus(b []byte) (*Status, error) {
	st := &Status{IsRepo: true}
	fields := splitNUL(b)
	for i := 0; i < len(fields); i++ {
		rec := fields[i]
		if strings.HasPrefix(rec, "# ") {
			if err := parseHeader(&st.Branch, rec[2:]); err != nil {
				return nil, err
			}
			continue
		}
		e, orig, err := parseRecord(rec)
		if err != nil {
			return nil, err
		}
		if orig {
			if i+1 >= len(fields) {
				return nil, fmt.Errorf("rename of %q without its original path", e.Path)
			}
			i++
			e.OrigPath = fields[i]
		}
		st.Entries = append(st.Entries, e)
	}
	return st, nil
}

// splitNUL splits NUL-terminated fields; a missing final NUL is tolerated.
func splitNUL(b []byte) []string {
	if len(b) == 0 {
		return nil
	}
	s := strings.TrimSuffix(string(b), "\x00")
	return strings.Split(s, "\x00")
}

// parseHeader applies one "# branch.*" header. Unknown headers (such as
// "# stash") are skipped.
func parseHeader(br *Branch, h string) error {
	key, val, _ := strings.Cut(h, " ")
	switch key {
	case "branch.oid":
		br.Unborn = val == "(initial)"
		if !br.Unborn {
			br.OID = val
		}
	case "branch.head":
		br.Detached = val == "(detached)"
		if !br.Detached {
			br.Head = val
		}
	case "branch.upstream":
		br.Upstream = val
	case "branch.ab":
		return parseAheadBehind(br, val)
	}
	return nil
}

// parseAheadBehind parses "+<ahead> -<behind>".
func parseAheadBehind(br *Branch, val string) error {
	a, b, ok := strings.Cut(val, " ")
	if !ok || !strings.HasPrefix(a, "+") || !strings.HasPrefix(b, "-") {
		return fmt.Errorf("bad branch.ab %q", val)
	}
	ahead, err1 := strconv.Atoi(a[1:])
	behind, err2 := strconv.Atoi(b[1:])
	if err1 != nil || err2 != nil || ahead < 0 || behind < 0 {
		return fmt.Errorf("bad branch.ab %q", val)
	}
	br.Ahead, br.Behind = ahead, behind
	return nil
}

// parseRecord parses one entry record; orig reports that the original path of
// a rename follows in the next field.
func parseRecord(rec string) (e StatusEntry, orig bool, err error) {
	if len(rec) < 3 || rec[1] != ' ' {
		return e, false, fmt.Errorf("bad status record %q", rec)
	}
	switch rec[0] {
	case '1':
		e, err = parseTracked(rec, KindChanged, 9)
	case '2':
		e, err = parseTracked(rec, KindRenamed, 10)
		orig = true
	case 'u':
		e, err = parseTracked(rec, KindUnmerged, 11)
	case '?':
		e = StatusEntry{Kind: KindUntracked, Path: rec[2:], Index: "?", Worktree: "?"}
	case '!':
		e = StatusEntry{Kind: KindIgnored, Path: rec[2:], Index: "!", Worktree: "!"}
	default:
		err = fmt.Errorf("unknown status record %q", rec)
	}
	return e, orig, err
}

// parseTracked parses a "1", "2" or "u" record of n space-separated fields,
// the last being the path (which may hold spaces):
//
//	1 XY sub mH mI mW hH hI path
//	2 XY sub mH mI mW hH hI Xscore path
//	u XY sub m1 m2 m3 mW h1 h2 h3 path
func parseTracked(rec, kind string, n int) (StatusEntry, error) {
	f := strings.SplitN(rec, " ", n)
	if len(f) != n || len(f[1]) != 2 || len(f[2]) != 4 || f[n-1] == "" {
		return StatusEntry{}, fmt.Errorf("bad %s record %q", kind, rec)
	}
	e := StatusEntry{Kind: kind, Path: f[n-1], Index: f[1][:1], Worktree: f[1][1:], Submodule: f[2]}
	if kind == KindRenamed {
		score, err := parseScore(f[8])
		if err != nil {
			return StatusEntry{}, fmt.Errorf("bad rename record %q: %w", rec, err)
		}
		e.Score = score
	}
	return e, nil
}

// parseScore parses "R100" or "C75".
func parseScore(s string) (int, error) {
	if len(s) < 2 || (s[0] != 'R' && s[0] != 'C') {
		return 0, fmt.Errorf("bad score %q", s)
	}
	n, err := strconv.Atoi(s[1:])
	if err != nil || n < 0 || n > 100 {
		return 0, fmt.Errorf("bad score %q", s)
	}
	return n, nil
}
