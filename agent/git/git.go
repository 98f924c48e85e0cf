// Package git runs the machine's git binary and parses what it prints.
//
// Every command is an argument list run with exec (never a shell), in a
// directory the caller has already confined, with an environment that cannot
// prompt, page or be redirected to another repository. Output that git prints
// for machines (porcelain v2, numstat, log formats, all NUL-separated) is parsed
// by pure functions. Errors are domain errors classified with errors.Is (see
// ErrNotRepository): a patch that does not apply is ErrPatchFailed, carrying
// git's message. This package knows nothing of the wire; the agent maps its
// errors at its dispatch.
package git

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Git runs one git executable. The zero value runs "git" from PATH with no
// ceiling; a Git is safe for concurrent use and must not be changed once used.
type Git struct {
	// Path is the git executable; empty means "git" looked up in PATH.
	Path string
	// Ceiling, when set, is the directory repository discovery must not leave
	// (the agent's root): a directory under it whose repository lies above it
	// is not a repository. It must be absolute.
	Ceiling string
	// Env is appended to the process environment of every command; later
	// entries win.
	Env []string
	// Exclude, when set, is asked for the pathspecs (":(exclude,...)"
	// magic) that staging must leave out in the work tree whose top is the
	// host directory top: Add (paths and all) and Commit's All and
	// IncludeUntracked never take those files in. The agent's denied paths.
	Exclude func(top string) []string
	// Guard, when set, is asked for a check of the work tree whose top is
	// the host directory top, before a Checkout, Pull or Clone changes files
	// there: the check gets every path (from the top, slash-separated)
	// the op would write, create or delete, and an error from it refuses
	// the op, unchanged, before anything is written. A nil check means
	// nothing to check (the diff is then not computed). The agent's
	// denied paths.
	Guard func(top string) func(paths []string) error
	// Overrides, when set, is asked before every command for settings
	// ("key=value") given with -c, over every configuration file: the
	// agent turns off what would run programs a repository names.
	Overrides func() []string
}

// MaxOutput bounds what one git command may print; a command that prints more
// fails with ErrOutputTooLarge.
const MaxOutput = 64 << 20

// waitDelay bounds the wait for output pipes after git exits or is killed (a
// hook may leave a child holding them).
const waitDelay = 2 * time.Second

// scrubbed are inherited variables that would point git at another
// repository than the one in the directory given.
var scrubbed = []string{
	"GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY",
	"GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_COMMON_DIR", "GIT_NAMESPACE",
	"GIT_PREFIX", "GIT_CEILING_DIRECTORIES", "GIT_EXTERNAL_DIFF",
	"GIT_ASKPASS", "SSH_ASKPASS", "GIT_ALLOW_PROTOCOL", // remote commands never ask
}

// env is the environment for a command; extra comes last.
func (g *Git) env(extra []string) []string {
	var out []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if !isScrubbed(name) {
			out = append(out, kv)
		}
	}
	out = append(out,
		"GIT_TERMINAL_PROMPT=0", // never ask for credentials
		"GIT_OPTIONAL_LOCKS=0",  // reads do not take index.lock
		"LC_ALL=C",              // stable messages
	)
	if g.Ceiling != "" {
		// Git never enters a ceiling directory while searching upward, so
		// the ceiling is the root's parent: the root itself is searched.
		out = append(out, "GIT_CEILING_DIRECTORIES="+filepath.Dir(filepath.Clean(g.Ceiling)))
	}
	out = append(out, g.Env...)
	return append(out, extra...)
}

// isScrubbed reports whether an inherited variable is dropped.
func isScrubbed(name string) bool {
	for _, s := range scrubbed {
		if strings.EqualFold(name, s) {
			return true
		}
	}
	return false
}

// result is what a finished git command printed and how it exited.
type result struct {
	stdout, stderr []byte
	code           int // exit code; 0 is success
}

// call is one git command.
type call struct {
	dir   string
	args  []string
	stdin []byte
	env   []string
}

// run runs c. A non-zero exit is not an error: it is in result.code. Errors
// are failures to run git at all, a cancelled ctx or too much output.
func (g *Git) run(ctx context.Context, c call) (result, error) {
	if err := checkDir(c); err != nil {
		return result{}, err
	}
	bin := g.Path
	if bin == "" {
		bin = "git"
	}
	args := []string{"--no-pager"}
	if g.Overrides != nil {
		for _, kv := range g.Overrides() {
			args = append(args, "-c", kv)
		}
	}
	cmd := exec.CommandContext(ctx, bin, append(args, c.args...)...)
	cmd.Dir = c.dir
	cmd.Env = g.env(c.env)
	cmd.WaitDelay = waitDelay
	if c.stdin != nil {
		cmd.Stdin = bytes.NewReader(c.stdin)
	}
	stdout, stderr := &limitedBuffer{max: MaxOutput}, &limitedBuffer{max: 64 << 10}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	err := cmd.Run()
	res := result{stdout: stdout.buf.Bytes(), stderr: stderr.buf.Bytes()}
	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil:
		return res, ctxErr(ctx, c.args)
	case errors.As(err, &exit):
		res.code = exit.ExitCode()
	case err != nil:
		return res, runErr(c, err)
	}
	if stdout.over {
		return res, errorf(ErrOutputTooLarge, "git %s: output over %d bytes", verb(c.args), MaxOutput)
	}
	return res, nil
}

// verb is the git subcommand of args, for messages.
func verb(args []string) string {
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "-c":
			i++ // its value
		case !strings.HasPrefix(a, "-"):
			return a
		}
	}
	return strings.Join(args, " ")
}

// ctxErr reports a command stopped by its context: of the context's error's
// kind (context.DeadlineExceeded or context.Canceled).
func ctxErr(ctx context.Context, args []string) error {
	return errorf(ctx.Err(), "git %s: %v", verb(args), ctx.Err())
}

// checkDir fails unless c.dir is empty (the current directory) or an
// existing directory, so that a failure to start is the binary's.
func checkDir(c call) error {
	if c.dir == "" {
		return nil
	}
	fi, err := os.Stat(c.dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return errorf(os.ErrNotExist, "git %s: no directory %s", verb(c.args), filepath.Base(c.dir))
	case err != nil:
		return errorf(nil, "git %s: %v", verb(c.args), err)
	case !fi.IsDir():
		return errorf(os.ErrInvalid, "git %s: %s is not a directory", verb(c.args), filepath.Base(c.dir))
	}
	return nil
}

// runErr reports git failing to start.
func runErr(c call, err error) error {
	if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
		return errorf(ErrNoGit, "git: %v", err)
	}
	return errorf(nil, "git %s: %v", verb(c.args), err)
}

// gitErr reports a command that exited non-zero: an error of kind (nil for
// none) with git's own message.
func gitErr(kind error, args []string, res result) error {
	msg := strings.TrimSpace(string(res.stderr))
	if msg == "" {
		msg = strings.TrimSpace(string(res.stdout))
	}
	return errorf(kind, "git %s: exit %d: %s", verb(args), res.code, msg)
}

// output runs args in dir and returns stdout; a non-zero exit is an error of
// kind (nil for none).
func (g *Git) output(ctx context.Context, dir string, kind error, args ...string) ([]byte, error) {
	res, err := g.run(ctx, call{dir: dir, args: args})
	if err != nil {
		return nil, err
	}
	if res.code != 0 {
		return nil, gitErr(kind, args, res)
	}
	return res.stdout, nil
}

// limitedBuffer keeps the first max bytes written and notes the rest.
type limitedBuffer struct {
	buf  bytes.Buffer
	max  int
	over bool
}

// Write keeps what fits and never fails, so git is not killed by a pipe.
func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.buf.Len(); len(p) > room {
		b.over = true
		b.buf.Write(p[:max(room, 0)])
		return len(p), nil
	}
	return b.buf.Write(p)
}

// Version is the version of git, such as "2.43.0".
func (g *Git) Version(ctx context.Context) (string, error) {
	out, err := g.output(ctx, "", nil, "version")
	if err != nil {
		return "", err
	}
	v := strings.TrimSpace(string(out))
	return strings.TrimPrefix(v, "git version "), nil
}
