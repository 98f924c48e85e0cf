package git

import (
	"strings"

	"github.com/outposthq/outpost/wire"
)

// maxArgLen bounds a ref or path argument.
const maxArgLen = 4096

// checkRef refuses a revision that git could read as an option or that holds
// bytes no ref may hold.
func checkRef(ref string) error {
	switch {
	case ref == "":
		return wire.Errorf(wire.CodeInvalidArgument, "", "empty ref")
	case len(ref) > maxArgLen:
		return wire.Errorf(wire.CodeInvalidArgument, "", "ref longer than %d bytes", maxArgLen)
	case strings.HasPrefix(ref, "-"):
		return wire.Errorf(wire.CodeInvalidArgument, "", "ref %q starts with '-'", ref)
	case strings.ContainsFunc(ref, isControlOrSpace):
		return wire.Errorf(wire.CodeInvalidArgument, "", "ref %q holds a space or control character", ref)
	}
	return nil
}

// isControlOrSpace reports runes no ref may hold.
func isControlOrSpace(r rune) bool { return r <= ' ' || r == 0x7f }

// checkPaths refuses empty paths and NUL bytes. Paths always follow "--" and
// are taken literally, so a leading '-' or '*' is a plain name.
func checkPaths(paths []string) error {
	for _, p := range paths {
		switch {
		case p == "":
			return wire.Errorf(wire.CodeInvalidArgument, "", "empty path")
		case len(p) > maxArgLen:
			return wire.Errorf(wire.CodeInvalidArgument, "", "path longer than %d bytes", maxArgLen)
		case strings.IndexByte(p, 0) >= 0:
			return wire.Errorf(wire.CodeInvalidArgument, "", "path %q holds a NUL byte", p)
		}
	}
	return nil
}
