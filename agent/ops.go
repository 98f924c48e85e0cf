package agent

import (
	"context"
	"os"
	"time"

	"github.com/outposthq/outpost/agent/proc"
	"github.com/outposthq/outpost/wire"
)

func (a *Agent) registerBuiltins() error {
	a.Register(wire.OpPing, a.ping)
	a.Register(wire.OpCapabilities, a.capabilities)
	a.Register(wire.OpProbe, a.probeOp)
	a.Register(wire.OpExec, a.exec)
	a.registerProcOps()
	a.registerPortOps()
	return a.registerFiles()
}

func (a *Agent) ping(context.Context, *wire.Request) (any, error) {
	return &wire.PingResult{Instance: a.instance, Time: time.Now().UTC()}, nil
}

func (a *Agent) capabilities(context.Context, *wire.Request) (any, error) {
	h := a.Hello()
	return &h, nil
}

// probeOp answers a starting daemon with the same identity; a takeover
// request makes this daemon stop once the answer is out.
func (a *Agent) probeOp(_ context.Context, req *wire.Request) (any, error) {
	var body wire.ProbeRequest
	if err := req.DecodeBody(&body); err != nil {
		return nil, err
	}
	host, _ := os.Hostname()
	if body.Takeover && body.Instance != a.instance {
		a.log.Warn("another daemon takes over this identity", "instance", body.Instance)
		time.AfterFunc(50*time.Millisecond, func() { a.fatal(ErrTakenOver) })
	}
	return &wire.ProbeResult{Instance: a.instance, PID: os.Getpid(), Hostname: host}, nil
}

// exec is the agent's trust boundary for a buffered run: the request is
// validated and given its defaults here, once (wire.ExecRequest.Normalize),
// with the output cap lowered to what one reply on the serving connection
// can carry (wire.MaxExecOutput).
func (a *Agent) exec(ctx context.Context, req *wire.Request) (any, error) {
	var body wire.ExecRequest
	if err := req.DecodeBody(&body); err != nil {
		return nil, err
	}
	var maxPayload int64
	if nc := a.conn.Load(); nc != nil {
		maxPayload = nc.MaxPayload()
	}
	if err := body.Normalize(wire.MaxExecOutput(maxPayload)); err != nil {
		return nil, err
	}
	res, err := a.procs.Exec(ctx, proc.ExecRequest{
		Argv:      body.Argv,
		Command:   body.Command,
		Cwd:       body.Cwd,
		Env:       body.Env,
		Stdin:     body.Stdin,
		Timeout:   time.Duration(body.TimeoutMs) * time.Millisecond,
		OutputCap: body.OutputCap,
	})
	if err != nil {
		return nil, err
	}
	return &wire.ExecResult{
		ExitCode:   res.ExitCode,
		Stdout:     res.Stdout,
		Stderr:     res.Stderr,
		TimedOut:   res.TimedOut,
		Truncated:  res.Truncated,
		DurationMs: res.Duration.Milliseconds(),
	}, nil
}
