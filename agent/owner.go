// The machine owner's side of the daemon: the pause switch, the status the
// control socket serves, the audit log it shows, the limits it applies.

package agent

import (
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"time"

	"github.com/outposthq/outpost/agent/audit"
	"github.com/outposthq/outpost/agent/control"
	"github.com/outposthq/outpost/agent/proc"
)

// Audit copies the audit log to w (the control socket's audit command).
func (a *Agent) Audit(ctx context.Context, w io.Writer, follow bool) error {
	if a.cfg.Audit == nil {
		return errors.New("this agent keeps no audit log")
	}
	return audit.Copy(ctx, a.cfg.Audit.Path(), w, follow)
}

// Pause makes the agent answer every call 503 agent_paused until Resume;
// it stays connected and says "paused" in its heartbeats. What was under
// way ends at once (endForPause): requests in flight, open handles, port
// pipes.
func (a *Agent) Pause() { a.setPaused(true) }

// Resume ends a Pause.
func (a *Agent) Resume() { a.setPaused(false) }

// Paused reports whether the agent is paused.
func (a *Agent) Paused() bool { return a.paused.Load() }

func (a *Agent) setPaused(on bool) {
	if a.paused.Swap(on) != on {
		a.log.Info("agent paused by its owner", "paused", on)
		if on {
			a.endForPause()
		}
		a.beatNow()
	}
}

// beatNow asks the heartbeat loop for a beat now, so that the control
// plane learns a changed pause switch at once.
func (a *Agent) beatNow() {
	select {
	case a.beat <- struct{}{}:
	default:
	}
}

// limitsBy is how the policy's limits are applied on this machine.
func (a *Agent) limitsBy() string { return a.procs.LimitsBy() }

// resources are the per-process limits of the policy in force.
func (a *Agent) resources() proc.Resources {
	l := a.cfg.Policy.Current().LimitsOrZero()
	return proc.Resources{MemoryBytes: l.MemoryBytes, CPUPercent: l.CPUPercent, Processes: l.Processes}
}

// lastError is the latest connection error and when it happened.
type lastError struct {
	msg  string
	time time.Time
}

func (a *Agent) noteErr(what string, err error) {
	if err != nil {
		a.lastErr.Store(&lastError{msg: what + ": " + err.Error(), time: time.Now().UTC()})
	}
}

// Status is the daemon's state for its owner (outpost agent status).
func (a *Agent) Status() control.Status {
	st := control.Status{
		Workspace: a.id.Workspace, Agent: a.id.ID, Instance: a.instance, PID: os.Getpid(),
		Version: a.cfg.Version, URL: a.cfg.Identity.URL, Root: a.cfg.Root,
		Connection: "starting", Paused: a.paused.Load(), StartedAt: a.started,
	}
	if nc := a.conn.Load(); nc != nil {
		st.Connection = strings.ToLower(nc.Status().String())
		st.NATSServer = nc.ConnectedUrlRedacted()
	}
	if e := a.lastErr.Load(); e != nil {
		st.LastError, st.LastErrorAt = e.msg, e.time
	}
	if a.cfg.Policy != nil {
		st.Policy = a.cfg.Policy.Current().Summary(a.limitsBy())
		st.PolicyFile = a.cfg.Policy.Path()
	}
	return st
}
