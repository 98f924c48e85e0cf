package proc

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
)

// pathSeparators are the characters that make an executable name a path.
const pathSeparators = `\/`

// sysProcAttr starts the child in a new process group.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{CreationFlags: syscall.CREATE_NEW_PROCESS_GROUP}
}

// setShell makes cmd run command with cmd.exe /C. The command line is passed
// verbatim (/S strips the outer quotes), since cmd.exe does not parse
// arguments the way exec.Cmd escapes them.
func setShell(cmd *exec.Cmd, command string) {
	comspec := os.Getenv("ComSpec")
	if comspec == "" {
		comspec = filepath.Join(os.Getenv("SystemRoot"), "System32", "cmd.exe")
	}
	cmd.Path = comspec
	cmd.Args = []string{"cmd.exe", "/S", "/C", command}
	cmd.SysProcAttr.CmdLine = `cmd.exe /S /C "` + command + `"`
}

// group is what a kill reaches. Windows has no process-group kill here:
// children that the leader started are not reached.
type group struct{ leader *os.Process }

// newGroup is the group of the started leader p.
func newGroup(p *os.Process) (group, error) { return group{p}, nil }

// signal kills the leader: Windows has no signals to send (see signals).
func (g group) signal(os.Signal) error { return g.kill() }

// kill kills the leader. A process already gone is not an error.
func (g group) kill() error {
	err := g.leader.Kill()
	if errors.Is(err, os.ErrProcessDone) {
		return nil
	}
	return err
}

// close releases nothing.
func (g group) close() {}

// exitCode is the process's exit code.
func exitCode(ps *os.ProcessState) int { return ps.ExitCode() }

// waitExit is unsupported here: the caller reaps the leader with cmd.Wait
// as soon as it exits.
func waitExit(*os.Process) (code int, ok bool) { return 0, false }

// envKeyEqual compares environment variable names; they are case-insensitive.
func envKeyEqual(a, b string) bool { return strings.EqualFold(a, b) }

// executableExts is the list from PATHEXT, lower-cased.
func executableExts(environ []string) []string {
	v := lookupEnv(environ, "PATHEXT")
	if v == "" {
		v = ".com;.exe;.bat;.cmd"
	}
	var exts []string
	for _, e := range strings.Split(strings.ToLower(v), ";") {
		if strings.HasPrefix(e, ".") {
			exts = append(exts, e)
		}
	}
	return exts
}

// findExecutable finds p, or p with one of exts appended when p has no
// executable extension of its own.
func findExecutable(p string, exts []string) (string, error) {
	ext := strings.ToLower(filepath.Ext(p))
	for _, e := range exts {
		if ext == e {
			return p, isFile(p)
		}
	}
	for _, e := range exts {
		if isFile(p+e) == nil {
			return p + e, nil
		}
	}
	return "", fs.ErrNotExist
}

func isFile(p string) error {
	fi, err := os.Stat(p)
	if err != nil {
		return err
	}
	if fi.IsDir() {
		return fs.ErrNotExist
	}
	return nil
}
