package proc

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/outposthq/outpost/wire"
)

// resolveCwd turns a request's cwd into an absolute directory inside the root,
// with symlinks evaluated. Empty means the root. An absolute cwd must already
// lie inside the root (as configured or with symlinks evaluated). Anything that
// leads out of the root, lexically or through a symlink, is
// permission_denied/outside_root.
func (m *Manager) resolveCwd(cwd string) (string, error) {
	if strings.ContainsRune(cwd, 0) {
		return "", wire.Errorf(wire.CodeInvalidArgument, "", "cwd contains NUL")
	}
	if cwd == "" {
		return m.realRoot, nil
	}
	p := cwd
	if !filepath.IsAbs(p) {
		p = filepath.Join(m.root, p)
	}
	p = filepath.Clean(p)
	if !within(m.root, p) && !within(m.realRoot, p) {
		return "", outsideRoot(cwd)
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return "", cwdError(cwd, err)
	}
	if !within(m.realRoot, real) {
		return "", outsideRoot(cwd)
	}
	fi, err := os.Stat(real)
	if err != nil {
		return "", cwdError(cwd, err)
	}
	if !fi.IsDir() {
		return "", wire.Errorf(wire.CodeInvalidArgument, "", "cwd %q is not a directory", cwd)
	}
	return real, nil
}

// within reports whether the clean absolute path p is root or below it.
func within(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	if err != nil || filepath.IsAbs(rel) {
		return false
	}
	return rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

func outsideRoot(cwd string) error {
	return wire.Errorf(wire.CodePermissionDenied, wire.ReasonOutsideRoot, "cwd %q is outside the root", cwd)
}

func cwdError(cwd string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return wire.Errorf(wire.CodeNotFound, "", "cwd %q does not exist", cwd)
	case errors.Is(err, fs.ErrPermission):
		return wire.Errorf(wire.CodePermissionDenied, "", "cwd %q: permission denied", cwd)
	default:
		return wire.Errorf(wire.CodeInvalidArgument, "", "cwd %q: %v", cwd, err)
	}
}
