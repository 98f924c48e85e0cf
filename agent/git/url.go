package git

import (
	"os"
	"path/filepath"
	"strings"
)

// URLKind says how git would reach a remote.
type URLKind int

const (
	// URLNetwork is https, ssh (URL or scp-like host:path) or git://.
	URLNetwork URLKind = iota
	// URLLocal is a path on this machine (a plain path or file:///path).
	URLLocal
)

// allowedSchemes are the URL schemes git may use. Plain http is left out
// (a credential helper would send the machine's credentials in clear), and so
// is every remote helper (ext::, fd::, file:: and the like): they run
// programs or reach places the root does not confine.
var allowedSchemes = map[string]bool{"https": true, "ssh": true, "git+ssh": true, "ssh+git": true, "git": true, "file": true}

// allowProtocol is GIT_ALLOW_PROTOCOL for remote commands: git itself
// refuses any other transport, in redirects and submodules too.
const allowProtocol = "https:ssh:git:file"

// ClassifyURL checks a remote URL and says what it is; for a local one it
// returns the path (file:// stripped). Refused, as os.ErrInvalid: an empty
// or over-long URL, one starting with '-' or holding a space or control
// character, a transport::address remote helper, a scheme not in
// https/ssh/git/file, a host starting with '-', a file URL naming a host.
func ClassifyURL(u string) (URLKind, string, error) {
	switch {
	case u == "":
		return 0, "", errorf(os.ErrInvalid, "empty URL")
	case len(u) > maxArgLen:
		return 0, "", errorf(os.ErrInvalid, "URL longer than %d bytes", maxArgLen)
	case strings.HasPrefix(u, "-"):
		return 0, "", errorf(os.ErrInvalid, "URL %q starts with '-'", u)
	case strings.ContainsFunc(u, isControlOrSpace):
		return 0, "", errorf(os.ErrInvalid, "URL %q holds a space or control character", u)
	}
	// git's own test (transport.c): [alnum.+-]* followed by "::" is a
	// remote helper.
	if i := strings.IndexFunc(u, func(r rune) bool { return !isSchemeRune(r) }); i >= 0 && strings.HasPrefix(u[i:], "::") {
		return 0, "", errorf(os.ErrInvalid, "URL %q names a remote helper (transport::address); use https, ssh, git or a path", u)
	}
	if scheme, rest, ok := strings.Cut(u, "://"); ok && scheme != "" && !strings.ContainsFunc(scheme, func(r rune) bool { return !isSchemeRune(r) }) {
		scheme = strings.ToLower(scheme)
		if !allowedSchemes[scheme] {
			return 0, "", errorf(os.ErrInvalid, "URL scheme %q is not allowed (https, ssh, git, file)", scheme)
		}
		if scheme == "file" {
			if !strings.HasPrefix(rest, "/") || strings.Contains(rest, "%") {
				return 0, "", errorf(os.ErrInvalid, "file URL %q must be file:///path, unescaped", u)
			}
			return URLLocal, rest, nil
		}
		host := rest
		if at := strings.LastIndex(strings.SplitN(rest, "/", 2)[0], "@"); at >= 0 {
			host = rest[at+1:]
		}
		if host == "" || strings.HasPrefix(host, "-") || strings.HasPrefix(host, "/") {
			return 0, "", errorf(os.ErrInvalid, "URL %q has no host, or one starting with '-'", u)
		}
		return URLNetwork, "", nil
	}
	// scp-like [user@]host:path: a ':' before any '/'.
	if colon := strings.IndexByte(u, ':'); colon > 0 && !strings.Contains(u[:colon], "/") {
		host := u[:colon]
		if at := strings.LastIndexByte(host, '@'); at >= 0 {
			host = host[at+1:]
		}
		if host == "" || strings.HasPrefix(host, "-") {
			return 0, "", errorf(os.ErrInvalid, "URL %q has no host, or one starting with '-'", u)
		}
		return URLNetwork, "", nil
	}
	return URLLocal, u, nil
}

// isSchemeRune reports the runes of a URL scheme or helper name.
func isSchemeRune(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '+' || r == '-' || r == '.'
}

// checkURL refuses u unless ClassifyURL allows it and, for a local one,
// it is an absolute path that resolves (links included) under the ceiling:
// a remote on this machine may not read or write outside the root.
func (g *Git) checkURL(u string) error {
	kind, p, err := ClassifyURL(u)
	if err != nil || kind == URLNetwork {
		return err
	}
	if !filepath.IsAbs(p) {
		return errorf(os.ErrInvalid, "local remote %q must be a path under the root", u)
	}
	if g.Ceiling == "" {
		return nil
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return errorf(os.ErrNotExist, "local remote %q: %v", u, err)
	}
	rel, err := filepath.Rel(filepath.Clean(g.Ceiling), real)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return errorf(ErrOutsideRoot, "local remote %q is outside the root", u)
	}
	return nil
}
