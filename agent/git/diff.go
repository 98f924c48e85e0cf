package git

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// DiffOptions select what Diff compares.
type DiffOptions struct {
	// Staged compares the index with Ref (default HEAD, or the empty tree
	// before the first commit) instead of the work tree with the index.
	Staged bool
	// Ref compares against this revision instead; a range "a..b" compares
	// two commits.
	Ref string
	// Paths limits the diff to these paths, taken literally (no globs),
	// relative to dir.
	Paths []string
}

// Diff is a parsed diff and its patch text.
type Diff struct {
	// Files are the changed files from --numstat.
	Files []DiffFile
	// Patch is the unified diff, with a/ and b/ prefixes.
	Patch string
}

// DiffFile is one file of a diff.
type DiffFile struct {
	// Path is the file's path, the new one for a rename.
	Path string
	// OldPath is the path before a rename or copy.
	OldPath string
	// Added and Deleted count lines; both are zero for a binary file.
	Added, Deleted int
	// Binary is true when git treats the file as binary.
	Binary bool
}

// Diff runs `git diff --numstat -z` and `git diff` with the same arguments.
// Renames are detected. dir must be in a work tree (else ErrNotRepository);
// an unknown Ref is ErrUnknownRevision; git refusing the arguments is
// os.ErrInvalid.
func (g *Git) Diff(ctx context.Context, dir string, opts DiffOptions) (*Diff, error) {
	if err := checkPaths(opts.Paths); err != nil {
		return nil, err
	}
	if err := g.requireRepo(ctx, dir); err != nil {
		return nil, err
	}
	revs, err := g.diffRevs(ctx, dir, opts)
	if err != nil {
		return nil, err
	}
	base := []string{"--literal-pathspecs", "diff", "--no-color", "--no-ext-diff", "--no-textconv", "-M"}
	if opts.Staged {
		base = append(base, "--cached")
	}
	tail := append(append(revs, "--"), opts.Paths...)
	out, err := g.output(ctx, dir, os.ErrInvalid, concat(base, []string{"--numstat", "-z"}, tail)...)
	if err != nil {
		return nil, err
	}
	files, err := ParseNumstat(out)
	if err != nil {
		return nil, errorf(nil, "git diff: %v", err)
	}
	patch, err := g.output(ctx, dir, os.ErrInvalid, concat(base, []string{"--src-prefix=a/", "--dst-prefix=b/"}, tail)...)
	if err != nil {
		return nil, err
	}
	return &Diff{Files: files, Patch: string(patch)}, nil
}

// diffRevs are the revision arguments for opts: Ref checked and resolved, or
// for a staged diff before the first commit the empty tree.
func (g *Git) diffRevs(ctx context.Context, dir string, opts DiffOptions) ([]string, error) {
	if opts.Ref != "" {
		if err := checkRef(opts.Ref); err != nil {
			return nil, err
		}
		if !strings.Contains(opts.Ref, "..") {
			if _, ok, err := g.resolve(ctx, dir, opts.Ref); err != nil || !ok {
				return nil, notFoundRef(opts.Ref, err)
			}
		}
		return []string{opts.Ref}, nil
	}
	if !opts.Staged {
		return nil, nil
	}
	if _, ok, err := g.resolve(ctx, dir, "HEAD"); err != nil || ok {
		return nil, err
	}
	tree, err := g.emptyTree(ctx, dir)
	if err != nil {
		return nil, err
	}
	return []string{tree}, nil
}

// notFoundRef is err, or ErrUnknownRevision when err is nil.
func notFoundRef(ref string, err error) error {
	if err != nil {
		return err
	}
	return errorf(ErrUnknownRevision, "unknown revision %q", ref)
}

// concat joins argument lists into a new slice.
func concat(lists ...[]string) []string {
	var out []string
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}

// ParseNumstat parses `git diff --numstat -z` output: per file
// "added\tdeleted\tpath\x00", or for a rename "added\tdeleted\t\x00old\x00new\x00";
// "-" counts mark a binary file. It never panics; malformed input is an error.
func ParseNumstat(b []byte) ([]DiffFile, error) {
	var files []DiffFile
	fields := splitNUL(b)
	for i := 0; i < len(fields); i++ {
		parts := strings.SplitN(fields[i], "\t", 3)
		if len(parts) != 3 {
			return nil, fmt.Errorf("bad numstat record %q", fields[i])
		}
		f, err := parseCounts(parts[0], parts[1])
		if err != nil {
			return nil, fmt.Errorf("bad numstat record %q: %w", fields[i], err)
		}
		f.Path = parts[2]
		if f.Path == "" {
			if i+2 >= len(fields) {
				return nil, fmt.Errorf("rename record %q without both paths", fields[i])
			}
			f.OldPath, f.Path = fields[i+1], fields[i+2]
			i += 2
		}
		if f.Path == "" {
			return nil, fmt.Errorf("numstat record %q without a path", fields[i])
		}
		files = append(files, f)
	}
	return files, nil
}

// parseCounts parses the added and deleted columns.
func parseCounts(added, deleted string) (DiffFile, error) {
	if added == "-" && deleted == "-" {
		return DiffFile{Binary: true}, nil
	}
	a, err1 := strconv.Atoi(added)
	d, err2 := strconv.Atoi(deleted)
	if err1 != nil || err2 != nil || a < 0 || d < 0 {
		return DiffFile{}, fmt.Errorf("bad counts %q %q", added, deleted)
	}
	return DiffFile{Added: a, Deleted: d}, nil
}
