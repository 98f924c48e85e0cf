package git

import (
	"os"
	"strings"
)

// maxArgLen bounds a ref or path argument.
const maxArgLen = 4096

// checkRef refuses a revision that git could read as an option or that holds
// bytes no ref may hold.
func checkRef(ref string) error {
	switch {
	case ref == "":
		return errorf(os.ErrInvalid, "empty ref")
	case len(ref) > maxArgLen:
		return errorf(os.ErrInvalid, "ref longer than %d bytes", maxArgLen)
	case strings.HasPrefix(ref, "-"):
		return errorf(os.ErrInvalid, "ref %q starts with '-'", ref)
	case strings.ContainsFunc(ref, isControlOrSpace):
		return errorf(os.ErrInvalid, "ref %q holds a space or control character", ref)
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
			return errorf(os.ErrInvalid, "empty path")
		case len(p) > maxArgLen:
			return errorf(os.ErrInvalid, "path longer than %d bytes", maxArgLen)
		case strings.IndexByte(p, 0) >= 0:
			return errorf(os.ErrInvalid, "path %q holds a NUL byte", p)
		}
	}
	return nil
}
