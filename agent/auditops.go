package agent

import (
	"encoding/json"
	"time"

	"github.com/outposthq/outpost/agent/audit"
	"github.com/outposthq/outpost/subjects"
	"github.com/outposthq/outpost/wire"
)

// unaudited ops are the agent's own chatter, not operations on the machine.
var unaudited = map[string]bool{wire.OpPing: true, wire.OpProbe: true}

// dataOps carry bulk data in their request; the audit log counts its bytes.
var dataOps = map[string]bool{wire.OpFsWrite: true, wire.OpFsUploadChunk: true, wire.OpFsUnpackChunk: true, wire.OpSnapRestoreChunks: true, wire.OpProcWrite: true}

// record appends one operation to the audit log and publishes it to the
// control plane (agent.<ws>.<agent>.audit). What it records is the event's
// fields only: never a body's data, stdin or environment values.
func (a *Agent) record(req *wire.Request, call *callFields, start time.Time, out outcome) {
	if a.cfg.Audit == nil || unaudited[req.Op] {
		return
	}
	e := audit.Event{
		ID: req.ID, Time: start.UTC(), Agent: a.id.ID, Op: req.Op, Session: req.Session, Epoch: req.Epoch,
		Result: "ok", Bytes: out.bytes, DurationMs: time.Since(start).Milliseconds(),
	}
	if out.err != nil {
		e.Result = string(out.err.Code)
		if out.err.Reason != "" {
			e.Result += "/" + out.err.Reason
		}
	}
	if dataOps[req.Op] {
		e.Bytes += int64(len(req.Body))
	}
	if call != nil {
		e.Path = call.Path
		if call.From != "" {
			e.Path, e.To = call.From, call.To
		}
		switch {
		case call.Command != "":
			e.Argv = []string{"sh", "-c", call.Command}
		case len(call.Argv) > 0:
			e.Argv = call.Argv
		}
		if e.Path == "" && call.Cwd != "" {
			e.Path = call.Cwd
		}
	}
	if err := a.cfg.Audit.Append(e); err != nil {
		a.log.Warn("audit log", "err", err)
	}
	a.publishAudit(e)
}

// publishAudit sends e to the control plane, which keeps a copy; the
// local log is the record, so a lost copy is only logged.
func (a *Agent) publishAudit(e audit.Event) {
	nc := a.conn.Load()
	if nc == nil {
		return
	}
	subj, err := a.id.Subject(subjects.KindAudit)
	if err != nil {
		return
	}
	b, err := json.Marshal(e)
	if err != nil {
		return
	}
	if err := nc.Publish(subj, b); err != nil {
		a.log.Debug("publish audit", "err", err)
	}
}

// resultBytes are the bytes of data a result carries.
func resultBytes(res any) int64 {
	switch r := res.(type) {
	case *wire.FsReadResult:
		return int64(len(r.Data))
	case *wire.InPlace:
		return int64(r.N)
	case *wire.FsOpenResult:
		return int64(len(r.Data))
	case *wire.FsArchiveReadResult:
		return int64(len(r.Data))
	case *wire.ExecResult:
		return int64(len(r.Stdout) + len(r.Stderr))
	case *wire.ProcReadResult:
		var n int
		for _, c := range r.Chunks {
			n += len(c.Data)
		}
		return int64(n)
	case *wire.FsWriteResult:
		return r.Size
	}
	return 0
}
