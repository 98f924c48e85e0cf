package files

import (
	"bytes"
	"context"
	"errors"
	"io"
	iofs "io/fs"
	"os"
	"path"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"
)

// Search limits.
const (
	// MaxSearchFileSize: larger files are not searched (they are rarely
	// source, and a match list from them is rarely useful).
	MaxSearchFileSize = 64 << 20
	// binarySniff is how much of a file is checked for a NUL byte: one
	// there makes it binary, and it is skipped (as git and rg do).
	binarySniff = 8 << 10
	// maxMatchText bounds a match's line text; longer lines are cut.
	maxMatchText = 1024
)

// SearchOptions say what Search looks for.
type SearchOptions struct {
	// Path is the directory (or file) searched.
	Path string
	// Query is a literal, or an RE2 regular expression when Regex.
	Query string
	Regex bool
	// Glob, when set, limits the search to files it matches (see Glob).
	Glob string
	// MaxResults stops the search after that many matches.
	MaxResults int
}

// Match is one line that matches: 1-based line and byte column of the
// first match on it, and the line's text (valid UTF-8, cut at 1 KiB).
type Match struct {
	Path   string
	Line   int
	Column int
	Text   string
}

// Search finds lines matching opts.Query in the text files under
// opts.Path. It skips what .gitignore files (the root's, those between
// the root and Path, and nested ones) exclude, the .git directory, binary
// files (a NUL in the first 8 KiB) and files over MaxSearchFileSize; it
// never follows symlinks. Files are searched in parallel; matches come
// sorted by path and line. At MaxResults it stops and reports truncated:
// the matches are then the first found, not necessarily the first by path.
func (f *FS) Search(ctx context.Context, opts SearchOptions) ([]Match, bool, error) {
	if opts.Query == "" {
		return nil, false, errorf(iofs.ErrInvalid, "search: the query is empty")
	}
	var re *regexp.Regexp
	if opts.Regex {
		var err error
		if re, err = regexp.Compile("(?m)" + opts.Query); err != nil {
			return nil, false, errorf(iofs.ErrInvalid, "search: bad regular expression: %v", err)
		}
	}
	glob, err := compileGlob(opts.Glob)
	if err != nil {
		return nil, false, err
	}
	c, err := Clean(opts.Path)
	if err != nil {
		return nil, false, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s := &searcher{f: f, lit: []byte(opts.Query), re: re, max: opts.MaxResults, cancel: cancel}
	paths := make(chan searchFile, 256)
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			buf := make([]byte, 0, 64<<10)
			for sf := range paths {
				buf = s.file(sf, buf)
			}
		})
	}
	werr := f.walkIn(ctx, c, true, func(p string, e iofs.DirEntry, dir *openDir) error {
		if e.Type().IsRegular() && (glob == nil || glob.match(p, c)) {
			if dir != nil {
				dir.ref()
			}
			select {
			case paths <- searchFile{p, e.Name(), dir}:
			case <-ctx.Done():
				if dir != nil {
					dir.unref()
				}
				return ctx.Err()
			}
		}
		return nil
	})
	close(paths)
	wg.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	if werr != nil && !(s.truncated && errors.Is(werr, context.Canceled)) {
		return nil, false, werr
	}
	slices.SortFunc(s.out, func(a, b Match) int {
		if a.Path != b.Path {
			return strings.Compare(a.Path, b.Path)
		}
		return a.Line - b.Line
	})
	return s.out, s.truncated, nil
}

// searcher is one Search's shared state.
type searcher struct {
	f      *FS
	lit    []byte
	re     *regexp.Regexp
	max    int
	cancel context.CancelFunc

	mu        sync.Mutex
	out       []Match
	truncated bool
}

// searchFile is a file to search: clean path p, named name in dir (a
// reference the search gives back; nil: open p from the root).
type searchFile struct {
	p, name string
	dir     *openDir
}

// file searches sf, reusing buf; it returns buf for reuse.
func (s *searcher) file(sf searchFile, buf []byte) []byte {
	p := sf.p
	var file *os.File
	var err error
	if sf.dir != nil {
		file, err = sf.dir.root.OpenFile(sf.name, readFlags, 0)
		sf.dir.unref()
	} else {
		file, err = s.f.root.OpenFile(native(p), readFlags, 0)
	}
	if err != nil {
		return buf
	}
	defer file.Close()
	fi, err := file.Stat()
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > MaxSearchFileSize {
		return buf
	}
	if int64(cap(buf)) < fi.Size()+1 {
		buf = make([]byte, 0, fi.Size()+1)
	}
	data := buf[:fi.Size()]
	n, err := io.ReadFull(file, data)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		return buf
	}
	data = data[:n]
	if bytes.IndexByte(data[:min(len(data), binarySniff)], 0) >= 0 {
		return buf
	}
	var found []Match
	for off := 0; off < len(data); {
		i, ok := s.next(data[off:])
		if !ok {
			break
		}
		at := off + i
		start := bytes.LastIndexByte(data[:at], '\n') + 1
		end := bytes.IndexByte(data[at:], '\n')
		if end < 0 {
			end = len(data)
		} else {
			end += at
		}
		found = append(found, Match{Path: p, Line: bytes.Count(data[:start], []byte{'\n'}) + 1, Column: at - start + 1, Text: lineText(data[start:end])})
		off = end + 1
	}
	if len(found) > 0 {
		s.add(found)
	}
	return buf
}

// next finds the first match in b.
func (s *searcher) next(b []byte) (int, bool) {
	if s.re != nil {
		loc := s.re.FindIndex(b)
		if loc == nil {
			return 0, false
		}
		return loc[0], true
	}
	i := bytes.Index(b, s.lit)
	return i, i >= 0
}

// add records one file's matches, up to the limit.
func (s *searcher) add(ms []Match) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.truncated {
		return
	}
	if room := s.max - len(s.out); len(ms) > room {
		ms = ms[:room]
		s.truncated = true
		s.cancel()
	}
	s.out = append(s.out, ms...)
}

// lineText is a line as text: a trailing CR dropped, cut at maxMatchText
// on a rune boundary, invalid UTF-8 replaced.
func lineText(b []byte) string {
	b = bytes.TrimSuffix(b, []byte{'\r'})
	if len(b) > maxMatchText {
		b = b[:maxMatchText]
		for len(b) > 0 && !utf8.Valid(b[len(b)-min(len(b), utf8.UTFMax):]) {
			b = b[:len(b)-1]
		}
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

// Find lists the entries under p (p itself excluded) whose path matches
// glob (see compileGlob), sorted by path, at most max of them (truncated
// says more matched). It does not descend into .git or through symlinks;
// it does not apply .gitignore (a find is often for ignored files).
func (f *FS) Find(ctx context.Context, p, glob string, max int) ([]Entry, bool, error) {
	c, err := Clean(p)
	if err != nil {
		return nil, false, err
	}
	g, err := compileGlob(glob)
	if err != nil {
		return nil, false, err
	}
	if g == nil {
		return nil, false, errorf(iofs.ErrInvalid, "find: the glob is empty")
	}
	var out []Entry
	err = f.walk(ctx, c, false, func(q string, _ iofs.DirEntry) error {
		if !g.match(q, c) {
			return nil
		}
		e, err := f.lstatEntry("find", q)
		if err != nil {
			return nil
		}
		out = append(out, e)
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	slices.SortFunc(out, func(a, b Entry) int { return strings.Compare(a.Path, b.Path) })
	truncated := len(out) > max
	if truncated {
		out = out[:max]
	}
	return out, truncated, nil
}

// walk calls fn for every entry under clean directory c (or c itself when
// it is a file), depth first, never through symlinks, never into .git,
// skipping the agent's temporary files and, with gitignore, what
// .gitignore files exclude.
func (f *FS) walk(ctx context.Context, c string, gitignore bool, fn func(p string, e iofs.DirEntry) error) error {
	return f.walkIn(ctx, c, gitignore, func(p string, e iofs.DirEntry, _ *openDir) error { return fn(p, e) })
}

// openDir is a directory a walk holds open, shared by whoever reads the
// entries in it: each holder takes a reference (ref) and gives it back
// (unref); the last one closes it. Opening an entry by name in it is one
// call, where a path from the FS's root is a walk through every
// directory on the way (os.Root opens and closes each).
type openDir struct {
	root *os.Root
	refs atomic.Int32
}

func (d *openDir) ref() { d.refs.Add(1) }

func (d *openDir) unref() {
	if d.refs.Add(-1) == 0 {
		d.root.Close()
	}
}

// walkIn is walk whose fn is also given the open directory the entry is
// in (nil when c is a file); fn takes a reference to keep it past its
// return.
func (f *FS) walkIn(ctx context.Context, c string, gitignore bool, fn func(p string, e iofs.DirEntry, dir *openDir) error) error {
	fi, err := f.root.Lstat(native(c))
	if err != nil {
		return mapErr("walk", c, err)
	}
	if !fi.IsDir() {
		return fn(c, iofs.FileInfoToDirEntry(fi), nil)
	}
	var ig *ignorer
	if gitignore {
		ig = f.ancestorIgnores(c)
	}
	r, err := f.root.OpenRoot(native(c))
	if err != nil {
		return mapErr("walk", c, err)
	}
	return f.walkDir(ctx, c, r, ig, fn)
}

// walkDir walks directory c, open as r (which it closes once every
// holder is done with it).
func (f *FS) walkDir(ctx context.Context, c string, r *os.Root, ig *ignorer, fn func(p string, e iofs.DirEntry, dir *openDir) error) error {
	dir := &openDir{root: r}
	dir.ref()
	defer dir.unref()
	if err := ctx.Err(); err != nil {
		return err
	}
	if ig != nil {
		ig = ig.loadFrom(r, c)
	}
	es, err := readDir(r)
	if err != nil {
		return nil // vanished or unreadable: skipped
	}
	for _, e := range es {
		n := e.Name()
		if strings.HasPrefix(n, TempPrefix) || (n == ".git" && e.IsDir()) {
			continue
		}
		p := join(c, n)
		if f.hidden(p) || ig != nil && ig.ignored(p, e.IsDir()) {
			continue
		}
		if err := fn(p, e, dir); err != nil {
			return err
		}
		if e.IsDir() {
			sub, err := r.OpenRoot(n)
			if err != nil {
				continue // vanished or unreadable: skipped
			}
			if err := f.walkDir(ctx, p, sub, ig, fn); err != nil {
				return err
			}
		}
	}
	return nil
}

// ignoreRule is one .gitignore pattern.
type ignoreRule struct {
	base    string // the directory of its .gitignore, clean
	re      *regexp.Regexp
	neg     bool
	dirOnly bool
	anchor  bool // matched against the path from base, else the base name
}

// ignorer is the rules in force in a directory; a child's adds its own
// .gitignore's after its parent's (later rules win, as in git).
type ignorer struct{ rules []ignoreRule }

// ancestorIgnores loads the .gitignore files of the root and every
// directory between it and c (c's own is loaded by walkDir).
func (f *FS) ancestorIgnores(c string) *ignorer {
	ig := &ignorer{}
	if c == "." {
		return ig
	}
	ig = ig.load(f, ".")
	parts := strings.Split(c, "/")
	for i := 1; i < len(parts); i++ {
		ig = ig.load(f, strings.Join(parts[:i], "/"))
	}
	return ig
}

// load returns ig with dir/.gitignore's rules added, if it has one.
func (ig *ignorer) load(f *FS, dir string) *ignorer {
	b, err := f.root.ReadFile(native(join(dir, ".gitignore")))
	return ig.add(dir, b, err)
}

// loadFrom is load for directory dir open as r.
func (ig *ignorer) loadFrom(r *os.Root, dir string) *ignorer {
	b, err := r.ReadFile(".gitignore")
	return ig.add(dir, b, err)
}

// add returns ig with the rules of dir's .gitignore b (read with err).
func (ig *ignorer) add(dir string, b []byte, err error) *ignorer {
	if err != nil || len(b) > 1<<20 {
		return ig
	}
	rules := slices.Clip(ig.rules)
	for _, line := range strings.Split(string(b), "\n") {
		if r, ok := parseIgnore(dir, line); ok {
			rules = append(rules, r)
		}
	}
	return &ignorer{rules: rules}
}

// parseIgnore reads one .gitignore line: blank lines and # comments are
// skipped; ! negates; a trailing / matches directories only; a / at the
// start or in the middle anchors the pattern to base; *, ?, [...] and **
// are globs.
func parseIgnore(base, line string) (ignoreRule, bool) {
	line = strings.TrimRight(line, "\r")
	if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
		return ignoreRule{}, false
	}
	line = strings.TrimRight(line, " ")
	r := ignoreRule{base: base}
	if strings.HasPrefix(line, "!") {
		r.neg, line = true, line[1:]
	} else if strings.HasPrefix(line, "\\") {
		line = line[1:]
	}
	if strings.HasSuffix(line, "/") {
		r.dirOnly, line = true, strings.TrimRight(line, "/")
	}
	if strings.Contains(line, "/") {
		r.anchor, line = true, strings.TrimPrefix(line, "/")
	}
	if line == "" {
		return ignoreRule{}, false
	}
	re, err := regexp.Compile(globRegexp(line))
	if err != nil {
		return ignoreRule{}, false
	}
	r.re = re
	return r, true
}

// ignored reports whether clean path p is excluded: the last rule that
// matches decides.
func (ig *ignorer) ignored(p string, isDir bool) bool {
	out := false
	for i := range ig.rules {
		r := &ig.rules[i]
		if r.dirOnly && !isDir {
			continue
		}
		rel := p
		if r.base != "." {
			var ok bool
			if rel, ok = strings.CutPrefix(p, r.base+"/"); !ok {
				continue
			}
		}
		if !r.anchor {
			rel = path.Base(rel)
		}
		if r.re.MatchString(rel) {
			out = !r.neg
		}
	}
	return out
}

// globRegexp turns a glob into an anchored regular expression: ** spans
// directories, * and ? stay within one, [...] is a class.
func globRegexp(g string) string {
	var b strings.Builder
	b.WriteString("^")
	for i := 0; i < len(g); i++ {
		switch c := g[i]; {
		case strings.HasPrefix(g[i:], "**/"):
			b.WriteString("(?:.*/)?")
			i += 2
		case strings.HasPrefix(g[i:], "/**") && i+3 == len(g):
			b.WriteString("/.*")
			i += 2
		case strings.HasPrefix(g[i:], "**"):
			b.WriteString(".*")
			i++
		case c == '*':
			b.WriteString("[^/]*")
		case c == '?':
			b.WriteString("[^/]")
		case c == '[':
			j := strings.IndexByte(g[i+1:], ']')
			if j < 0 {
				b.WriteString(`\[`)
				continue
			}
			class := g[i+1 : i+1+j]
			if strings.HasPrefix(class, "!") {
				class = "^" + class[1:]
			}
			b.WriteString("[" + strings.ReplaceAll(class, `\`, `\\`) + "]")
			i += j + 1
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	b.WriteString("$")
	return b.String()
}

// pathGlob is a compiled glob: one with a / matches the path relative to
// the searched directory, one without matches the base name.
type pathGlob struct {
	re    *regexp.Regexp
	whole bool
}

// compileGlob compiles g; nil for an empty glob.
func compileGlob(g string) (*pathGlob, error) {
	if g == "" {
		return nil, nil
	}
	re, err := regexp.Compile(globRegexp(strings.TrimPrefix(g, "/")))
	if err != nil {
		return nil, errorf(iofs.ErrInvalid, "bad glob %q: %v", g, err)
	}
	return &pathGlob{re: re, whole: strings.Contains(g, "/")}, nil
}

// match reports whether clean path p, found under clean dir base, matches.
func (g *pathGlob) match(p, base string) bool {
	if !g.whole {
		return g.re.MatchString(path.Base(p))
	}
	rel := p
	if base != "." {
		rel = strings.TrimPrefix(p, base+"/")
	}
	return g.re.MatchString(rel)
}
