package agent

import (
	"context"
	"time"

	"github.com/outposthq/outpost/agent/proc"
	"github.com/outposthq/outpost/internal/hoptrace"
	"github.com/outposthq/outpost/wire"
)

// readMargin is kept between the end of a read's wait and the request's
// deadline, so that the reply arrives in time.
const readMargin = 2 * time.Second

// registerProcOps serves the streaming process ops (wire/PROTOCOL.md).
func (a *Agent) registerProcOps() {
	a.Register(wire.OpProcStart, a.procStart)
	a.Register(wire.OpProcList, a.procList)
	a.Register(wire.OpProcGet, a.procGet)
	a.Register(wire.OpProcRead, a.procRead)
	a.Register(wire.OpProcWrite, a.procWrite)
	a.Register(wire.OpProcSignal, a.procSignal)
	a.Register(wire.OpProcResize, a.procResize)
	a.Register(wire.OpProcTerminate, a.procTerminate)
	a.Register(wire.OpProcAttach, a.procAttach)
}

func (a *Agent) procStart(_ context.Context, req *wire.Request) (any, error) {
	b, err := decode[wire.ProcStartRequest](req)
	if err != nil {
		return nil, err
	}
	id, pid, err := a.procs.Start(proc.StartRequest{
		ID: b.ID, Argv: b.Argv, Command: b.Command, Cwd: b.Cwd, Env: b.Env,
		TTY: b.TTY, Cols: b.Cols, Rows: b.Rows, Stdin: b.Stdin, Detached: b.Detached,
		Hangup: b.Hangup, Timeout: time.Duration(b.TimeoutMs) * time.Millisecond,
	})
	if err != nil {
		return nil, err
	}
	return &wire.ProcStartResult{ID: id, PID: pid}, nil
}

func (a *Agent) procList(context.Context, *wire.Request) (any, error) {
	infos := a.procs.List()
	out := &wire.ProcListResult{Processes: make([]wire.ProcInfo, len(infos))}
	for i, in := range infos {
		out.Processes[i] = procInfo(in)
	}
	return out, nil
}

func (a *Agent) procGet(_ context.Context, req *wire.Request) (any, error) {
	b, err := decode[wire.ProcRef](req)
	if err != nil {
		return nil, err
	}
	in, err := a.procs.Get(b.ID)
	if err != nil {
		return nil, err
	}
	info := procInfo(in)
	return &info, nil
}

func procInfo(in proc.Info) wire.ProcInfo {
	return wire.ProcInfo{
		ID: in.ID, PID: in.PID, Argv: in.Argv, TTY: in.TTY, Detached: in.Detached,
		Running: in.Running, ExitCode: in.ExitCode, TimedOut: in.TimedOut, Closed: in.Closed,
		StartedAt: in.StartedAt.UTC(), ExitedAt: in.ExitedAt.UTC(),
	}
}

// procRead waits at most until readMargin before the request's deadline.
func (a *Agent) procRead(ctx context.Context, req *wire.Request) (any, error) {
	b, err := decode[wire.ProcReadRequest](req)
	if err != nil {
		return nil, err
	}
	wait := time.Duration(b.WaitMs) * time.Millisecond
	if d, ok := ctx.Deadline(); ok {
		wait = min(wait, time.Until(d)-readMargin)
	}
	asked := b.MaxBytes
	if asked <= 0 {
		asked = wire.DefaultReadBytes
	}
	res, err := a.procs.Read(ctx, b.ID, b.After, a.uplink.limit(b.ID, time.Now(), asked), max(wait, 0))
	if err != nil {
		return nil, err
	}
	out, n := wireRead(res)
	if res.ClosedSeq != 0 {
		a.uplink.forget(b.ID)
	} else {
		a.uplink.sent(b.ID, time.Now(), n)
	}
	if n > 0 {
		hoptrace.Mark(hoptrace.AgentSent)
	}
	return out, nil
}

func (a *Agent) procWrite(ctx context.Context, req *wire.Request) (any, error) {
	hoptrace.Mark(hoptrace.AgentStdin)
	b, err := decode[wire.ProcWriteRequest](req)
	if err != nil {
		return nil, err
	}
	return nil, a.procs.Write(ctx, b.ID, b.WriteID, b.Data, b.EOF)
}

func (a *Agent) procSignal(_ context.Context, req *wire.Request) (any, error) {
	b, err := decode[wire.ProcSignalRequest](req)
	if err != nil {
		return nil, err
	}
	return nil, a.procs.Signal(b.ID, b.Signal)
}

func (a *Agent) procResize(_ context.Context, req *wire.Request) (any, error) {
	b, err := decode[wire.ProcResizeRequest](req)
	if err != nil {
		return nil, err
	}
	return nil, a.procs.Resize(b.ID, b.Cols, b.Rows)
}

func (a *Agent) procTerminate(_ context.Context, req *wire.Request) (any, error) {
	b, err := decode[wire.ProcRef](req)
	if err != nil {
		return nil, err
	}
	was, err := a.procs.Terminate(b.ID)
	if err != nil {
		return nil, err
	}
	return &wire.ProcTerminateResult{WasRunning: was}, nil
}

// wireRead is res as proc.read and attach streams send it, and the bytes
// of output it carries.
func wireRead(res proc.ReadResult) (*wire.ProcReadResult, int) {
	out := &wire.ProcReadResult{
		Chunks: make([]wire.ProcChunk, len(res.Chunks)), NextSeq: res.NextSeq,
		ExitSeq: res.ExitSeq, ExitCode: res.ExitCode, TimedOut: res.TimedOut,
		ClosedSeq: res.ClosedSeq, Dropped: res.Dropped,
	}
	n := 0
	for i, c := range res.Chunks {
		out.Chunks[i] = wire.ProcChunk{Seq: c.Seq, Stream: c.Stream, Data: c.Data}
		n += len(c.Data)
	}
	return out, n
}
