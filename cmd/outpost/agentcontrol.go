package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/outposthq/outpost/agent"
	"github.com/outposthq/outpost/agent/audit"
	"github.com/outposthq/outpost/agent/control"
	"github.com/outposthq/outpost/agent/policy"
)

// auditPath is where the agent with config file config keeps its audit log.
func auditPath(config string) string { return config + ".audit.jsonl" }

// policyReloadEvery is how often agent run looks for a changed policy file.
const policyReloadEvery = 2 * time.Second

// ownerControls are what agent run sets up for the machine's owner: the
// policy file (reloaded on SIGHUP or a change), the audit log, and the
// control socket beside the config. start serves the socket once the agent
// exists; stop undoes all of it.
type ownerControls struct {
	policy *policy.File
	audit  *audit.Log
	sock   *control.Server
	cancel context.CancelFunc
	done   chan struct{}
}

// openOwnerControls reads the policy file (if any) and opens the audit log.
func openOwnerControls(config, policyFile string, log *slog.Logger) (*ownerControls, error) {
	oc := &ownerControls{}
	if policyFile != "" {
		pf, err := policy.Open(policyFile, log)
		if err != nil {
			return nil, err
		}
		oc.policy = pf
	}
	l, err := audit.Open(auditPath(config), 0)
	if err != nil {
		return nil, err
	}
	oc.audit = l
	return oc, nil
}

// start serves the control socket for a and watches the policy file.
func (oc *ownerControls) start(config string, a *agent.Agent, takeover bool, log *slog.Logger) error {
	sock, err := control.Listen(control.SocketPath(config), a, takeover, log)
	if err != nil {
		return err
	}
	oc.sock = sock
	ctx, cancel := context.WithCancel(context.Background())
	oc.cancel, oc.done = cancel, make(chan struct{})
	go func() {
		defer close(oc.done)
		if oc.policy == nil {
			<-ctx.Done()
			return
		}
		hup := make(chan os.Signal, 1)
		signal.Notify(hup, syscall.SIGHUP)
		defer signal.Stop(hup)
		oc.policy.Watch(ctx, policyReloadEvery, hup)
	}()
	return nil
}

// stop closes the socket, ends the watch and closes the audit log.
func (oc *ownerControls) stop() {
	if oc.sock != nil {
		oc.sock.Close()
	}
	if oc.cancel != nil {
		oc.cancel()
		<-oc.done
	}
	oc.audit.Close()
}

// runAgentControl serves outpost agent status|pause|resume|audit.
func runAgentControl(ctx context.Context, cmd string, args []string, stdout, stderr io.Writer) error {
	usage := "--config FILE [--json]"
	if cmd == "audit" {
		usage = "--config FILE [-f]"
	}
	fs := newFlags("agent "+cmd, usage, stderr)
	config := fs.String("config", "", "the agent's config file (its control socket is FILE.sock)")
	var follow, asJSON *bool
	if cmd == "audit" {
		follow = fs.Bool("f", false, "keep printing new events, like tail -f")
	} else {
		asJSON = jsonFlag(fs)
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := exactly(fs, 0, "no arguments"); err != nil {
		return err
	}
	if *config == "" {
		fs.Usage()
		return fmt.Errorf("--config is required")
	}
	sock := control.SocketPath(*config)
	if cmd == "audit" {
		return control.Audit(ctx, sock, stdout, *follow)
	}
	st, err := control.Call(ctx, sock, cmd)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(stdout, st)
	}
	printAgentStatus(stdout, st)
	return nil
}

func printAgentStatus(w io.Writer, st *control.Status) {
	state := "running"
	if st.Paused {
		state = "running, PAUSED (every call answers agent_paused; outpost agent resume)"
	}
	fmt.Fprintf(w, "agent:         %s/%s (pid %d, version %s)\n", st.Workspace, st.Agent, st.PID, st.Version)
	fmt.Fprintf(w, "daemon:        %s\n", state)
	fmt.Fprintf(w, "connection:    %s %s\n", st.Connection, st.NATSServer)
	fmt.Fprintf(w, "control plane: %s\n", st.URL)
	fmt.Fprintf(w, "root:          %s\n", st.Root)
	if st.LastError != "" {
		fmt.Fprintf(w, "last error:    %s (%s)\n", st.LastError, st.LastErrorAt.Format(time.RFC3339))
	}
	if st.PolicyFile != "" {
		fmt.Fprintf(w, "policy:        %s\n", st.PolicyFile)
	}
}
