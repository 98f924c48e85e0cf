package agent

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/outposthq/outpost/agent/files"
	"github.com/outposthq/outpost/agent/git"
	"github.com/outposthq/outpost/agent/policy"
	"github.com/outposthq/outpost/wire"
)

// callFields are the fields of a request body that the owner's policy
// looks at, under the names every op's body uses (wire): the paths a call
// names and the command it would start. Decoding into it skips the rest
// (a chunk's data is not copied).
type callFields struct {
	Path    string            `msgpack:"path"`
	From    string            `msgpack:"from"`
	To      string            `msgpack:"to"`
	Paths   []string          `msgpack:"paths"`
	Cwd     string            `msgpack:"cwd"`
	Argv    []string          `msgpack:"argv"`
	Command string            `msgpack:"cmd"`
	Env     map[string]string `msgpack:"env"`
	TTY     bool              `msgpack:"tty"`
	// Patch is git.apply's patch, whose file names are checked too.
	Patch []byte `msgpack:"patch"`
	// URL is git.clone's source, a path under the root when local.
	URL string `msgpack:"url"`

	// undecodable is set for a body that does not decode into these
	// fields: under a policy it is refused, since what its handler would
	// make of it was not checked.
	undecodable bool
}

// archiveReads are ops that read the machine but count as mutations for
// retries (an archive stream cannot be replayed): to the policy they read.
var archiveReads = map[string]bool{wire.OpFsArchiveOpen: true, wire.OpFsArchiveRead: true, wire.OpFsArchiveClose: true}

// writes reports whether op changes the machine, as the fs and git rules see it.
func writes(op string) bool { return wire.Mutates(op) && !archiveReads[op] }

// workTreeWrites are the git ops that write a work tree's files: to the
// fs rule they write (policy.Policy.WorkTree).
var workTreeWrites = map[string]bool{wire.OpGitApply: true, wire.OpGitCheckout: true, wire.OpGitPull: true, wire.OpGitClone: true}

// commandOps start a command: the commands and tty rules apply.
var commandOps = map[string]bool{wire.OpExec: true, wire.OpProcStart: true}

// checkPolicy is the one place where the machine owner's policy meets a
// request, before its handler runs: the op's area (exec, processes, fs,
// git), the command it would start, and every path it names, as given and
// with symbolic links resolved. Walks below those paths leave denied
// paths out (files.FS.SetHidden, applied in applyPolicy); the files a git
// checkout or pull would change are only known from the repository, so
// git asks gitGuard (gitguard.go) for them before it writes any.
func (a *Agent) checkPolicy(req *wire.Request, f *callFields) error {
	return a.checkCall(a.cfg.Policy.Current(), req.Op, f)
}

// checkCall is checkPolicy under policy p for op with fields f: for a
// request at dispatch, and again for the work under way when p was just
// put in force (live.go).
func (a *Agent) checkCall(p *policy.Policy, op string, f *callFields) error {
	if p == nil {
		return nil
	}
	if err := p.Op(op, writes(op)); err != nil {
		return err
	}
	if workTreeWrites[op] {
		if err := p.WorkTree(op); err != nil {
			return err
		}
	}
	area, _, _ := strings.Cut(op, ".")
	if f == nil {
		return nil
	}
	if f.undecodable {
		return wire.Errorf(wire.CodeInvalidArgument, "", "the request body of %s does not decode, so the machine owner's policy cannot check it", op)
	}
	if commandOps[op] {
		if f.TTY {
			if err := p.Terminal(); err != nil {
				return err
			}
		}
		if err := p.Command(f.Argv, f.Command, f.Env); err != nil {
			return err
		}
		if err := a.checkSearchPath(p); err != nil {
			return err
		}
	}
	write := writes(op)
	if len(p.DenyPaths) == 0 && !(write && p.ProgramsRestricted() != "") {
		return nil
	}
	names := f.paths(area == "git")
	if op == wire.OpGitApply {
		names = append(names, patchPaths(f.Path, f.Patch)...)
	}
	if op == wire.OpGitClone {
		if kind, local, err := git.ClassifyURL(f.URL); err == nil && kind == git.URLLocal {
			names = append(names, local) // a clone reads the repository there
		}
	}
	for _, rel := range names {
		if err := a.checkPath(p, rel, write); err != nil {
			return err
		}
	}
	return nil
}

// inspect decodes the fields the policy and the audit log look at, for
// ops that name paths or commands; nil for the others. A body that does
// not decode gives fields marked undecodable: the policy refuses it rather
// than let its handler read what was not checked.
func (a *Agent) inspect(req *wire.Request) *callFields {
	if a.cfg.Policy == nil && a.cfg.Audit == nil {
		return nil // nobody looks
	}
	area, _, _ := strings.Cut(req.Op, ".")
	if area != "fs" && area != "git" && !commandOps[req.Op] {
		return nil
	}
	var f callFields
	if err := req.DecodeBody(&f); err != nil {
		return &callFields{undecodable: true}
	}
	return &f
}

// paths are the paths f names: git's file paths are relative to its
// repository directory (Path).
func (f *callFields) paths(git bool) []string {
	out := []string{f.Path, f.From, f.To, f.Cwd}
	for _, p := range f.Paths {
		if git {
			p = path.Join(strings.TrimLeft(f.Path, "/"), p)
		}
		out = append(out, p)
	}
	return out
}

// checkPath checks one path as given (cleaned: ".." is resolved) and with
// the symbolic links of its existing part resolved inside the root. A path
// that leaves the root is left to the handler, which refuses it
// (outside_root). For a call that writes, git's own files are checked too
// (checkGitWrite).
func (a *Agent) checkPath(p *policy.Policy, rel string, write bool) error {
	c, err := files.Clean(rel)
	if err != nil || c == "." {
		return nil
	}
	check := func(c string) error {
		if err := p.Path(c); err != nil {
			return err
		}
		if write {
			return a.checkGitWrite(p, c)
		}
		return nil
	}
	if err := check(c); err != nil {
		return err
	}
	if r, ok := a.resolve(c); ok && r != c {
		if err := check(r); err != nil {
			var d *policy.Denial
			if errors.As(err, &d) {
				d.Detail = c + " resolves to " + r + ": " + d.Detail
			}
			return err
		}
	}
	return nil
}

// resolve evaluates the symbolic links of the longest existing prefix of
// clean path c and returns the result relative to the root; false when it
// leaves the root or cannot be evaluated. It looks at the path's elements
// below the root one by one and hands over to filepath.EvalSymlinks only
// when one of them is a link (the root's own path is taken as resolved).
func (a *Agent) resolve(c string) (string, bool) {
	root := a.files.realRoot
	cur := root
	elems := strings.Split(c, "/")
	for i, e := range elems {
		cur = filepath.Join(cur, e)
		fi, err := os.Lstat(cur)
		if errors.Is(err, fs.ErrNotExist) {
			return c, true // the rest does not exist: nothing to follow
		}
		if err != nil {
			return "", false
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return a.resolveLinked(strings.Join(elems[:i+1], "/"), strings.Join(elems[i+1:], "/"))
		}
	}
	return c, true
}

// resolveLinked resolves head, which holds a symbolic link, and joins the
// rest to it, resolving that too.
func (a *Agent) resolveLinked(head, rest string) (string, bool) {
	root := a.files.realRoot
	real, err := filepath.EvalSymlinks(filepath.Join(root, filepath.FromSlash(head)))
	if errors.Is(err, fs.ErrNotExist) {
		return path.Join(head, rest), true // a dangling link: a write replaces it
	}
	if err != nil {
		return "", false
	}
	rel, err := filepath.Rel(root, real)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", false
	}
	r := filepath.ToSlash(rel)
	if rest == "" {
		return r, true
	}
	return a.resolve(path.Join(r, rest))
}

// applyPolicy puts p in force for walks and for what archives and
// snapshot restores write: the file ops hide its denied paths, and refuse
// git's own files while programs are restricted. Work under way that p
// refuses then ends (endForPolicy).
func (a *Agent) applyPolicy(p *policy.Policy) {
	if old := a.policyInForce.Swap(p); old != nil && old != p {
		defer a.endForPolicy(old, p)
	}
	if p == nil || p.ProgramsRestricted() == "" {
		a.files.fs.SetWriteCheck(nil)
	} else {
		a.files.fs.SetWriteCheck(func(c string) error { return a.checkGitWrite(p, c) })
	}
	if p == nil || len(p.DenyPaths) == 0 {
		a.files.fs.SetHidden(nil)
		return
	}
	a.files.fs.SetHidden(p.Hidden)
}
