// The owner's restrictions on running programs (exec, processes,
// commands) against the ways around them that the rest of the API opens:
// git runs hooks and programs named in its configuration, and an allowed
// command name is looked up in PATH, whose directories may lie under the
// root the API writes.

package agent

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/outposthq/outpost/agent/policy"
)

// gitOverrides are settings given to every git command while the policy
// restricts programs, over every configuration file: no hooks, no
// fsmonitor program, and no repository found in a directory that merely
// looks like a bare one (whose config the API could have written).
func (a *Agent) gitOverrides() []string {
	if a.cfg.Policy.Current().ProgramsRestricted() == "" {
		return nil
	}
	return []string{"core.hooksPath=" + os.DevNull, "core.fsmonitor=false", "safe.bareRepository=explicit"}
}

// isGitName reports whether path element e names git's repository
// directory (or a .git file pointing at one): on darwin and windows without
// regard to case, and on windows with the trailing dots and spaces the
// system drops.
func isGitName(e string) bool {
	switch runtime.GOOS {
	case "windows":
		return strings.EqualFold(strings.TrimRight(e, ". "), ".git")
	case "darwin":
		return strings.EqualFold(e, ".git")
	}
	return e == ".git"
}

// checkGitWrite refuses a write to clean path c when it is one of git's
// own files while the policy restricts programs: a repository's .git
// (its hooks and config name programs that git.* ops would run) or the
// user's git configuration when it lies under the root.
func (a *Agent) checkGitWrite(p *policy.Policy, c string) error {
	rule := p.ProgramsRestricted()
	if rule == "" {
		return nil
	}
	for _, e := range strings.Split(c, "/") {
		if isGitName(e) {
			return &policy.Denial{Rule: rule, Detail: c + " is inside a .git directory, whose hooks and config git would run as programs; " + policy.RestrictedBecause(rule)}
		}
	}
	for _, g := range a.gitConfigs {
		// Writing a parent (a move onto it) could put a prepared one in place.
		if c == g || strings.HasPrefix(c, g+"/") || strings.HasPrefix(g, c+"/") {
			return &policy.Denial{Rule: rule, Detail: c + " is git's configuration, which names programs git would run; " + policy.RestrictedBecause(rule)}
		}
	}
	return nil
}

// userGitConfigs are the user's git configuration files and directory
// that lie under the root (clean slash paths relative to it): ~/.gitconfig
// and $XDG_CONFIG_HOME/git (~/.config/git).
func userGitConfigs(realRoot string) []string {
	var hosts []string
	home, _ := os.UserHomeDir()
	if home != "" {
		hosts = append(hosts, filepath.Join(home, ".gitconfig"))
	}
	if x := os.Getenv("XDG_CONFIG_HOME"); x != "" && filepath.IsAbs(x) {
		hosts = append(hosts, filepath.Join(x, "git"))
	} else if home != "" {
		hosts = append(hosts, filepath.Join(home, ".config", "git"))
	}
	if g := os.Getenv("GIT_CONFIG_GLOBAL"); g != "" && filepath.IsAbs(g) {
		hosts = append(hosts, g)
	}
	var out []string
	for _, h := range hosts {
		if rel, ok := underRoot(realRoot, h); ok {
			out = append(out, rel)
		}
	}
	return out
}

// underRoot is host path h relative to realRoot as a clean slash path,
// with h's existing part's links resolved ("." for the root itself); false
// when it is not under it.
func underRoot(realRoot, h string) (string, bool) {
	h = filepath.Clean(h)
	// Resolve the longest existing prefix: a directory the API may still
	// create is judged by where its parent is.
	rest := ""
	for cur := h; ; {
		if real, err := filepath.EvalSymlinks(cur); err == nil {
			h = filepath.Join(real, rest)
			break
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			break
		}
		rest = filepath.Join(filepath.Base(cur), rest)
		cur = parent
	}
	rel, err := filepath.Rel(realRoot, h)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return "", false
	}
	return filepath.ToSlash(rel), true
}

// checkSearchPath refuses a command while commands are restricted and a
// directory of the PATH it is looked up in lies under the root where the
// API may write it: a file written there under an allowed name would run.
// The owner closes it with denyPaths over that directory or fs read-only.
func (a *Agent) checkSearchPath(p *policy.Policy) error {
	if p.Commands == nil || a.files == nil {
		return nil
	}
	if acc := p.FS; acc == policy.ReadOnly || acc == policy.None {
		return nil
	}
	for _, d := range filepath.SplitList(os.Getenv("PATH")) {
		if d == "" || !filepath.IsAbs(d) {
			continue // never searched (see proc's lookPath)
		}
		rel, ok := underRoot(a.files.realRoot, d)
		if !ok || p.Hidden(rel) {
			continue
		}
		return &policy.Denial{Rule: "commands", Detail: "the PATH directory " + d + " is under the root, where this API can write a file named like an allowed command; deny it in denyPaths (" + rel + ") or make fs read-only"}
	}
	return nil
}
