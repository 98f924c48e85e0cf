package agent

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/outposthq/outpost/agent/audit"
	"github.com/outposthq/outpost/agent/control"
	"github.com/outposthq/outpost/agent/files"
	"github.com/outposthq/outpost/agent/policy"
	"github.com/outposthq/outpost/agent/proc"
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
}

// archiveReads are ops that read the machine but count as mutations for
// retries (an archive stream cannot be replayed): to the policy they read.
var archiveReads = map[string]bool{wire.OpFsArchiveOpen: true, wire.OpFsArchiveRead: true, wire.OpFsArchiveClose: true}

// writes reports whether op changes the machine, as the fs and git rules see it.
func writes(op string) bool { return wire.Mutates(op) && !archiveReads[op] }

// commandOps start a command: the commands and tty rules apply.
var commandOps = map[string]bool{wire.OpExec: true, wire.OpProcStart: true}

// checkPolicy is the one place where the machine owner's policy meets a
// request, before its handler runs: the op's area (exec, processes, fs,
// git), the command it would start, and every path it names, as given and
// with symbolic links resolved. Walks below those paths leave denied
// paths out (files.FS.SetHidden, applied in applyPolicy).
func (a *Agent) checkPolicy(req *wire.Request, f *callFields) error {
	p := a.cfg.Policy.Current()
	if p == nil {
		return nil
	}
	if err := p.Op(req.Op, writes(req.Op)); err != nil {
		return err
	}
	area, _, _ := strings.Cut(req.Op, ".")
	if f == nil {
		return nil
	}
	if commandOps[req.Op] {
		if f.TTY {
			if err := p.Terminal(); err != nil {
				return err
			}
		}
		if err := p.Command(f.Argv, f.Command, f.Env); err != nil {
			return err
		}
	}
	if len(p.DenyPaths) == 0 {
		return nil
	}
	names := f.paths(area == "git")
	if req.Op == wire.OpGitApply {
		names = append(names, patchPaths(f.Path, f.Patch)...)
	}
	for _, rel := range names {
		if err := a.checkPath(p, rel); err != nil {
			return err
		}
	}
	return nil
}

// inspect decodes the fields the policy and the audit log look at, for
// ops that name paths or commands; nil for the others and for a body
// that does not decode (its handler refuses it).
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
		return nil
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
// (outside_root).
func (a *Agent) checkPath(p *policy.Policy, rel string) error {
	c, err := files.Clean(rel)
	if err != nil || c == "." {
		return nil
	}
	if err := p.Path(c); err != nil {
		return err
	}
	if r, ok := a.resolve(c); ok && r != c {
		if err := p.Path(r); err != nil {
			var d *policy.Denial
			if errors.As(err, &d) {
				d.Detail = c + " resolves to " + r + ", a denied path"
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

// applyPolicy puts p in force for walks: the file ops hide its denied paths.
func (a *Agent) applyPolicy(p *policy.Policy) {
	if p == nil || len(p.DenyPaths) == 0 {
		a.files.fs.SetHidden(nil)
		return
	}
	a.files.fs.SetHidden(p.Hidden)
}

// Audit copies the audit log to w (the control socket's audit command).
func (a *Agent) Audit(ctx context.Context, w io.Writer, follow bool) error {
	if a.cfg.Audit == nil {
		return errors.New("this agent keeps no audit log")
	}
	return audit.Copy(ctx, a.cfg.Audit.Path(), w, follow)
}

// Pause makes the agent answer every call 503 agent_paused until Resume;
// it stays connected and says "paused" in its heartbeats.
func (a *Agent) Pause() { a.setPaused(true) }

// Resume ends a Pause.
func (a *Agent) Resume() { a.setPaused(false) }

// Paused reports whether the agent is paused.
func (a *Agent) Paused() bool { return a.paused.Load() }

func (a *Agent) setPaused(on bool) {
	if a.paused.Swap(on) != on {
		a.log.Info("agent paused by its owner", "paused", on)
		a.beatNow()
	}
}

// beatNow asks the heartbeat loop for a beat now, so that the control
// plane learns a changed pause switch at once.
func (a *Agent) beatNow() {
	select {
	case a.beat <- struct{}{}:
	default:
	}
}

// limitsBy is how the policy's limits are applied on this machine.
func (a *Agent) limitsBy() string { return a.procs.LimitsBy() }

// resources are the per-process limits of the policy in force.
func (a *Agent) resources() proc.Resources {
	l := a.cfg.Policy.Current().LimitsOrZero()
	return proc.Resources{MemoryBytes: l.MemoryBytes, CPUPercent: l.CPUPercent, Processes: l.Processes}
}

// lastError is the latest connection error and when it happened.
type lastError struct {
	msg  string
	time time.Time
}

func (a *Agent) noteErr(what string, err error) {
	if err != nil {
		a.lastErr.Store(&lastError{msg: what + ": " + err.Error(), time: time.Now().UTC()})
	}
}

// Status is the daemon's state for its owner (outpost agent status).
func (a *Agent) Status() control.Status {
	st := control.Status{
		Workspace: a.id.Workspace, Agent: a.id.ID, Instance: a.instance, PID: os.Getpid(),
		Version: a.cfg.Version, URL: a.cfg.Identity.URL, Root: a.cfg.Root,
		Connection: "starting", Paused: a.paused.Load(), StartedAt: a.started,
	}
	if nc := a.conn.Load(); nc != nil {
		st.Connection = strings.ToLower(nc.Status().String())
		st.NATSServer = nc.ConnectedUrlRedacted()
	}
	if e := a.lastErr.Load(); e != nil {
		st.LastError, st.LastErrorAt = e.msg, e.time
	}
	if a.cfg.Policy != nil {
		st.Policy = a.cfg.Policy.Current().Summary(a.limitsBy())
		st.PolicyFile = a.cfg.Policy.Path()
	}
	return st
}

// patchPaths are the file names a patch touches (its diff --git, ---, +++,
// rename and copy lines), under the repository directory dir; quoted names
// are taken as they stand, which can only deny more.
func patchPaths(dir string, patch []byte) []string {
	var out []string
	add := func(name string) {
		name = strings.Trim(strings.TrimSpace(name), `"`)
		if name == "" || name == "/dev/null" {
			return
		}
		if len(name) > 2 && (name[:2] == "a/" || name[:2] == "b/") {
			name = name[2:]
		}
		out = append(out, path.Join(strings.TrimLeft(dir, "/"), name))
	}
	for _, line := range strings.Split(string(patch), "\n") {
		switch {
		case strings.HasPrefix(line, "diff --git "):
			for _, f := range strings.Fields(line[len("diff --git "):]) {
				add(f)
			}
		case strings.HasPrefix(line, "--- "), strings.HasPrefix(line, "+++ "):
			name, _, _ := strings.Cut(line[4:], "\t")
			add(name)
		case strings.HasPrefix(line, "rename to "), strings.HasPrefix(line, "rename from "),
			strings.HasPrefix(line, "copy to "), strings.HasPrefix(line, "copy from "):
			_, name, _ := strings.Cut(line, " ")
			_, name, _ = strings.Cut(name, " ")
			add(name)
		}
	}
	return out
}

// filterResult leaves out of git's answers what denyPaths hides: status
// entries and diff files (with their part of the patch) under a denied
// path. Git names paths from the repository's top; a name is hidden when
// it, or it under the directory the call named, is denied.
func (a *Agent) filterResult(call *callFields, res any) any {
	p := a.cfg.Policy.Current()
	if p == nil || len(p.DenyPaths) == 0 || call == nil {
		return res
	}
	hidden := func(name string) bool {
		return name != "" && (p.Hidden(path.Clean(name)) || p.Hidden(path.Join(strings.TrimLeft(call.Path, "/"), name)))
	}
	switch r := res.(type) {
	case *wire.GitStatus:
		r.Entries = slices.DeleteFunc(r.Entries, func(e wire.GitStatusEntry) bool { return hidden(e.Path) || hidden(e.OrigPath) })
	case *wire.GitDiff:
		var gone []string
		r.Files = slices.DeleteFunc(r.Files, func(f wire.GitDiffFile) bool {
			if hidden(f.Path) || hidden(f.OldPath) {
				gone = append(gone, f.Path, f.OldPath)
				return true
			}
			return false
		})
		if len(gone) > 0 {
			r.Patch = dropPatchFiles(r.Patch, gone)
		}
	}
	return res
}

// dropPatchFiles removes from a unified diff the sections whose header
// names one of names.
func dropPatchFiles(patch string, names []string) string {
	sections := strings.SplitAfter(patch, "\n")
	var out strings.Builder
	keep := true
	for _, line := range sections {
		if strings.HasPrefix(line, "diff --git ") {
			keep = true
			for _, n := range names {
				if n != "" && (strings.Contains(line, " a/"+n) || strings.Contains(line, " b/"+n) || strings.Contains(line, `"a/`+n) || strings.Contains(line, `"b/`+n)) {
					keep = false
				}
			}
		}
		if keep {
			out.WriteString(line)
		}
	}
	return out.String()
}

// gitExcludes are the pathspecs that keep git's staging away from the
// denied paths of the policy in force, in the work tree whose top is the
// host directory top: each glob as it applies below that top, and
// everything under it. A glob that cannot reach into the work tree is
// left out.
func (a *Agent) gitExcludes(top string) []string {
	p := a.cfg.Policy.Current()
	if p == nil || len(p.DenyPaths) == 0 {
		return nil
	}
	rel, err := filepath.Rel(a.files.realRoot, top)
	if err != nil || strings.HasPrefix(rel, "..") {
		return nil
	}
	rel = filepath.ToSlash(rel)
	magic := ":(top,exclude,glob)"
	if runtime.GOOS == "darwin" || runtime.GOOS == "windows" {
		magic = ":(top,exclude,glob,icase)"
	}
	var out []string
	for _, g := range p.DenyPaths {
		g = strings.TrimSuffix(g, "/")
		switch {
		case rel == ".", strings.HasPrefix(g, "**/"):
		case strings.HasPrefix(g, rel+"/"):
			g = g[len(rel)+1:]
		default:
			continue
		}
		out = append(out, magic+g, magic+g+"/**")
	}
	return out
}
