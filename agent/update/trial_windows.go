package update

import (
	"fmt"
	"os/exec"
	"unsafe"

	"golang.org/x/sys/windows"
)

// dieWithParent puts the trial in a job object that kills what it holds
// when its last handle closes: the agent's, which closes when the agent
// ends, however it ends (killed mid-trial, the old agent must not leave the
// new one serving beside whatever its service manager starts next).
// started assigns the trial (and so the processes it starts) to the job
// once cmd has started; release closes the job after the trial was waited
// for.
func dieWithParent(cmd *exec.Cmd) (started func() error, release func(), err error) {
	job, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("update: job object for the trial: %w", err)
	}
	info := windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION{
		BasicLimitInformation: windows.JOBOBJECT_BASIC_LIMIT_INFORMATION{LimitFlags: windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE},
	}
	if _, err := windows.SetInformationJobObject(job, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info))); err != nil {
		windows.CloseHandle(job)
		return nil, nil, fmt.Errorf("update: job object for the trial: %w", err)
	}
	started = func() error {
		p, err := windows.OpenProcess(windows.PROCESS_SET_QUOTA|windows.PROCESS_TERMINATE, false, uint32(cmd.Process.Pid))
		if err != nil {
			return fmt.Errorf("update: open the trial process: %w", err)
		}
		defer windows.CloseHandle(p)
		if err := windows.AssignProcessToJobObject(job, p); err != nil {
			return fmt.Errorf("update: put the trial in its job object: %w", err)
		}
		return nil
	}
	return started, func() { windows.CloseHandle(job) }, nil
}
