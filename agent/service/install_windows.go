package service

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"golang.org/x/sys/windows/registry"
	"golang.org/x/sys/windows/svc"
	"golang.org/x/sys/windows/svc/mgr"
)

// Path names the service: Windows keeps its definition in the registry.
func Path(s *Spec) (string, error) {
	return `HKLM\SYSTEM\CurrentControlSet\Services\` + s.Name, nil
}

// Install registers the service (automatic, delayed start, running as
// s.Account, restarted by recovery actions after any failure) and starts
// it. It needs an elevated prompt.
func Install(ctx context.Context, s *Spec, out io.Writer) error {
	if err := s.Validate(); err != nil {
		return err
	}
	if s.Account == "" {
		return errors.New("service: no account to run as: the agent never runs as LocalSystem")
	}
	m, err := mgr.Connect()
	if err != nil {
		return fmt.Errorf("service: connect to the service manager (run as administrator): %w", err)
	}
	defer m.Disconnect()
	sv, err := m.CreateService(s.Name, s.Executable, mgr.Config{
		DisplayName:      "Outpost agent (" + s.Name + ")",
		Description:      s.Description,
		StartType:        mgr.StartAutomatic,
		DelayedAutoStart: true,
		ServiceStartName: s.Account,
		Password:         s.Password,
	}, s.Args...)
	if err != nil {
		return fmt.Errorf("service: create %s: %w", s.Name, err)
	}
	defer sv.Close()
	restart := mgr.RecoveryAction{Type: mgr.ServiceRestart, Delay: windowsRestartDelayMs * time.Millisecond}
	if err := sv.SetRecoveryActions([]mgr.RecoveryAction{restart, restart, restart}, windowsResetPeriodS); err != nil {
		return fmt.Errorf("service: recovery actions: %w", err)
	}
	if err := sv.SetRecoveryActionsOnNonCrashFailures(true); err != nil {
		return fmt.Errorf("service: recovery actions: %w", err)
	}
	if len(s.Env) > 0 {
		k, err := registry.OpenKey(registry.LOCAL_MACHINE, `SYSTEM\CurrentControlSet\Services\`+s.Name, registry.SET_VALUE)
		if err != nil {
			return fmt.Errorf("service: environment: %w", err)
		}
		var env []string
		for _, key := range s.envKeys() {
			env = append(env, key+"="+s.Env[key])
		}
		err = k.SetStringsValue("Environment", env)
		k.Close()
		if err != nil {
			return fmt.Errorf("service: environment: %w", err)
		}
	}
	if err := sv.Start(); err != nil {
		return fmt.Errorf("service: start %s: %w", s.Name, err)
	}
	fmt.Fprintf(out, "installed and started the service %s (sc.exe query %s)\n", s.Name, s.Name)
	return nil
}

// Uninstall stops the service named name and deletes it.
func Uninstall(ctx context.Context, name string, out io.Writer) error {
	m, err := mgr.Connect()
	if err != nil {
		return fmt.Errorf("service: connect to the service manager (run as administrator): %w", err)
	}
	defer m.Disconnect()
	sv, err := m.OpenService(name)
	if err != nil {
		return fmt.Errorf("service: %s is not installed: %w", name, err)
	}
	defer sv.Close()
	if st, err := sv.Control(svc.Stop); err == nil {
		for i := 0; i < 60 && st.State != svc.Stopped; i++ {
			time.Sleep(500 * time.Millisecond)
			if st, err = sv.Query(); err != nil {
				break
			}
		}
	}
	if err := sv.Delete(); err != nil {
		return fmt.Errorf("service: delete %s: %w", name, err)
	}
	fmt.Fprintf(out, "stopped and removed the service %s\n", name)
	return nil
}

// RunAsService runs run under the service control manager when this
// process is a Windows service: Stop and Shutdown cancel run's ctx; run's
// error is a service-specific failure, which the recovery actions answer
// with a restart. It reports false, doing nothing, when not a service.
func RunAsService(run func(context.Context) error) (bool, error) {
	is, err := svc.IsWindowsService()
	if err != nil || !is {
		return false, err
	}
	return true, svc.Run("", &handler{run: run})
}

type handler struct {
	run func(context.Context) error
	err error
}

func (h *handler) Execute(_ []string, req <-chan svc.ChangeRequest, status chan<- svc.Status) (bool, uint32) {
	status <- svc.Status{State: svc.StartPending}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- h.run(ctx) }()
	status <- svc.Status{State: svc.Running, Accepts: svc.AcceptStop | svc.AcceptShutdown}
	for {
		select {
		case c := <-req:
			switch c.Cmd {
			case svc.Interrogate:
				status <- c.CurrentStatus
			case svc.Stop, svc.Shutdown:
				status <- svc.Status{State: svc.StopPending}
				cancel()
				h.err = <-done
				return false, 0
			}
		case err := <-done:
			h.err = err
			if err != nil {
				return true, 1
			}
			return false, 0
		}
	}
}
