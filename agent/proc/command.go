package proc

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"github.com/outposthq/outpost/wire"
)

// command builds the *exec.Cmd for argv or a shell command, run in cwd (as a
// request names it) with the agent's environment plus env, bound to ctx. It
// resolves the executable up front, so a missing one is
// executable_not_found before anything starts. The process gets its own
// process group; stdio and Cancel are left to the caller.
func (m *Manager) command(ctx context.Context, argv []string, shell, cwd string, env map[string]string) (*exec.Cmd, error) {
	dir, err := m.resolveCwd(cwd)
	if err != nil {
		return nil, err
	}
	environ, err := mergeEnv(loginEnv(inheritedEnv(os.Environ())), dir, env)
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, "")
	cmd.Dir, cmd.Env, cmd.SysProcAttr = dir, environ, sysProcAttr()
	if shell != "" {
		setShell(cmd, shell)
		return cmd, nil
	}
	path, err := lookPath(argv[0], dir, environ)
	if err != nil {
		return nil, startError(argv[0], err)
	}
	cmd.Path = path
	cmd.Args = argv
	return cmd, nil
}

// ScrubbedPrefix starts the names of the agent's own variables (tokens,
// URLs, the admin token of a control plane on the same machine): commands
// never inherit them. A request's env may still set such a variable.
const ScrubbedPrefix = "OUTPOST_"

// inheritedEnv is what commands inherit of the agent's environment: all of
// it but the variables named ScrubbedPrefix*.
func inheritedEnv(environ []string) []string {
	out := make([]string, 0, len(environ))
	for _, kv := range environ {
		if k, _, _ := strings.Cut(kv, "="); len(k) >= len(ScrubbedPrefix) && envKeyEqual(k[:len(ScrubbedPrefix)], ScrubbedPrefix) {
			continue
		}
		out = append(out, kv)
	}
	return out
}

// mergeEnv is base, then PWD=dir, then env in key order. exec.Cmd keeps the
// last value of a repeated key, so env overrides everything before it.
func mergeEnv(base []string, dir string, env map[string]string) ([]string, error) {
	keys := make([]string, 0, len(env))
	for k, v := range env {
		if k == "" || strings.ContainsAny(k, "=\x00") || strings.ContainsRune(v, 0) {
			return nil, wire.Errorf(wire.CodeInvalidArgument, "", "invalid environment variable %q", k)
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]string, 0, len(base)+1+len(keys))
	out = append(out, base...)
	out = append(out, "PWD="+dir)
	for _, k := range keys {
		out = append(out, k+"="+env[k])
	}
	return out, nil
}

// lookupEnv is the last value of key in environ (key compared as the
// platform does).
func lookupEnv(environ []string, key string) string {
	for i := len(environ) - 1; i >= 0; i-- {
		k, v, ok := strings.Cut(environ[i], "=")
		if ok && envKeyEqual(k, key) {
			return v
		}
	}
	return ""
}

// lookPath finds file the way a shell would, using the PATH of environ.
// A name with a path separator is taken as is, relative to dir; otherwise
// only absolute PATH entries are searched (like exec.ErrDot, a relative entry
// never resolves against the working directory).
func lookPath(file, dir string, environ []string) (string, error) {
	exts := executableExts(environ)
	if strings.ContainsAny(file, pathSeparators) {
		if !filepath.IsAbs(file) {
			file = filepath.Join(dir, file)
		}
		return findExecutable(file, exts)
	}
	var firstErr error
	for _, d := range filepath.SplitList(lookupEnv(environ, "PATH")) {
		if d == "" || !filepath.IsAbs(d) {
			continue
		}
		p, err := findExecutable(filepath.Join(d, file), exts)
		if err == nil {
			return p, nil
		}
		if firstErr == nil && !errors.Is(err, fs.ErrNotExist) {
			firstErr = err
		}
	}
	if firstErr != nil {
		return "", firstErr
	}
	return "", fs.ErrNotExist
}

// startFailed maps a failure of cmd.Start to a wire error. Arguments and
// environment the system refuses are invalid_argument, described by their
// size only: the message carries neither the agent's environment nor the
// executable's resolved path.
func startFailed(cmd *exec.Cmd, err error) error {
	name := cmd.Args[0]
	switch {
	case isArgsTooLong(err):
		return wire.Errorf(wire.CodeInvalidArgument, "",
			"start %s: the arguments (%d bytes) and environment (%d bytes) are more than the system lets a program be started with",
			name, argSize(cmd.Args), argSize(cmd.Env))
	case errors.Is(err, syscall.EINVAL):
		return wire.Errorf(wire.CodeInvalidArgument, "", "start %s: the system refused the arguments or environment as invalid", name)
	}
	return startError(name, err)
}

// argSize is the bytes a list of strings takes when passed to a program.
func argSize(list []string) int {
	n := 0
	for _, s := range list {
		n += len(s) + 1
	}
	return n
}

// startError maps a failure to find or start name to a wire error.
func startError(name string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return wire.Errorf(wire.CodeNotFound, wire.ReasonExecutableNotFound, "%s: executable not found", name)
	case errors.Is(err, fs.ErrPermission):
		return wire.Errorf(wire.CodePermissionDenied, "", "%s: %v", name, err)
	default:
		return wire.Errorf(wire.CodeInternal, "", "start %s: %v", name, err)
	}
}
