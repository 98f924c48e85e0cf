// The owner's denyPaths in git: the files a patch names, what status and
// diff show, what staging takes in.

package agent

import (
	"errors"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/outposthq/outpost/agent/policy"
	"github.com/outposthq/outpost/wire"
)

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

// gitGuard is the check of the paths a checkout, pull or clone would
// change in the work tree whose top is the host directory top
// (git.Git.Guard): each is a write of that path under the root, denied
// when denyPaths denies it as named or with the links along it resolved.
// Nil when no path is denied.
func (a *Agent) gitGuard(top string) func(paths []string) error {
	p := a.cfg.Policy.Current()
	if p == nil || len(p.DenyPaths) == 0 {
		return nil
	}
	rel, err := filepath.Rel(a.files.realRoot, top)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return nil // git's ceiling keeps work trees under the root
	}
	rel = filepath.ToSlash(rel)
	return func(paths []string) error {
		for _, name := range paths {
			if err := a.checkPath(p, path.Join(rel, name), false); err != nil {
				var d *policy.Denial
				if errors.As(err, &d) {
					d.Detail += " (the git operation would change it)"
				}
				return err
			}
		}
		return nil
	}
}
