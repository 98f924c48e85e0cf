package proc

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/windows"
)

// pathSeparators are the characters that make an executable name a path.
const pathSeparators = `\/`

// sysProcAttr starts the child in a new process group, suspended: newGroup
// puts it in its job object before it runs, so nothing it starts escapes.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{CreationFlags: syscall.CREATE_NEW_PROCESS_GROUP | windows.CREATE_SUSPENDED}
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

// group is what a kill reaches: a job object holding the leader and every
// process it starts, however deep. The job kills them all when it is
// terminated or its last handle closes (so also when the agent dies).
type group struct {
	leader *os.Process
	job    windows.Handle
}

// newGroup puts the started, suspended leader p in a new job object and
// lets it run. On failure p is killed.
func newGroup(p *os.Process) (group, error) {
	job, err := newJob(p.Pid)
	if err == nil {
		err = resume(p.Pid)
	}
	if err != nil {
		_ = p.Kill()
		if job != 0 {
			_ = windows.CloseHandle(job)
		}
		return group{}, err
	}
	return group{leader: p, job: job}, nil
}

// newJob creates a job that kills its processes when closed and assigns
// process pid to it.
func newJob(pid int) (windows.Handle, error) {
	job, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		return 0, fmt.Errorf("create job object: %w", err)
	}
	limit := windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION{}
	limit.BasicLimitInformation.LimitFlags = windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE
	if _, err := windows.SetInformationJobObject(job, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&limit)), uint32(unsafe.Sizeof(limit))); err != nil {
		return job, fmt.Errorf("set job object limits: %w", err)
	}
	h, err := windows.OpenProcess(windows.PROCESS_SET_QUOTA|windows.PROCESS_TERMINATE, false, uint32(pid))
	if err != nil {
		return job, fmt.Errorf("open process %d: %w", pid, err)
	}
	defer windows.CloseHandle(h)
	if err := windows.AssignProcessToJobObject(job, h); err != nil {
		return job, fmt.Errorf("assign process %d to a job object: %w", pid, err)
	}
	return job, nil
}

// resume starts the threads of the suspended process pid (os/exec closes
// the handle of its main thread, so they are found by a snapshot).
func resume(pid int) error {
	snap, err := windows.CreateToolhelp32Snapshot(windows.TH32CS_SNAPTHREAD, 0)
	if err != nil {
		return fmt.Errorf("resume process %d: %w", pid, err)
	}
	defer windows.CloseHandle(snap)
	te := windows.ThreadEntry32{Size: uint32(unsafe.Sizeof(windows.ThreadEntry32{}))}
	resumed := 0
	for err = windows.Thread32First(snap, &te); err == nil; err = windows.Thread32Next(snap, &te) {
		if te.OwnerProcessID != uint32(pid) {
			continue
		}
		h, err := windows.OpenThread(windows.THREAD_SUSPEND_RESUME, false, te.ThreadID)
		if err != nil {
			return fmt.Errorf("resume process %d: %w", pid, err)
		}
		_, err = windows.ResumeThread(h)
		windows.CloseHandle(h)
		if err != nil {
			return fmt.Errorf("resume process %d: %w", pid, err)
		}
		resumed++
	}
	if !errors.Is(err, windows.ERROR_NO_MORE_FILES) {
		return fmt.Errorf("resume process %d: %w", pid, err)
	}
	if resumed == 0 {
		return fmt.Errorf("resume process %d: no thread found", pid)
	}
	return nil
}

// signal kills the job: Windows has no signals to send (see signals).
func (g group) signal(os.Signal) error { return g.kill() }

// kill terminates every process in the job with exit code 1, as
// os.Process.Kill does.
func (g group) kill() error {
	if err := windows.TerminateJobObject(g.job, 1); err != nil {
		return fmt.Errorf("terminate job object: %w", err)
	}
	return nil
}

// close releases the job's handle; whatever is still in it is killed.
func (g group) close() { _ = windows.CloseHandle(g.job) }

// exitCode is the process's exit code.
func exitCode(ps *os.ProcessState) int { return ps.ExitCode() }

// waitExit is unsupported here: the caller reaps the leader with cmd.Wait
// as soon as it exits (the job, not the pid, names the group).
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
