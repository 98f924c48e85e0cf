package controlplane

import (
	"net/http"
	"strconv"
	"time"

	"github.com/outposthq/outpost/controlplane/client"
	"github.com/outposthq/outpost/rpc"
	"github.com/outposthq/outpost/wire"
)

// Process call limits.
const (
	// procCallTimeout bounds every process call but reads.
	procCallTimeout = 15 * time.Second
	// readGrace is added to a read's wait for its call.
	readGrace = 10 * time.Second
	// maxStdinBody bounds a stdin body (base64 of 4 MiB and change).
	maxStdinBody = 6 << 20
	// payloadReserve is left of the NATS max payload for a read reply's
	// envelope and per-chunk overhead.
	payloadReserve = 64 << 10
)

// procID is the {id} of a process path, validated.
func procID(r *http.Request) (string, error) {
	id := r.PathValue("id")
	if err := wire.ValidProcID(id); err != nil {
		return "", err
	}
	return id, nil
}

func (s *Server) handleStartProcess(w http.ResponseWriter, r *http.Request, t target) error {
	body := new(wire.ProcStartRequest)
	if err := decodeJSON(w, r, maxJSONBody, body); err != nil {
		return err
	}
	if err := body.Validate(); err != nil {
		return err
	}
	var res wire.ProcStartResult
	if err := t.Call(r.Context(), wire.OpProcStart, body, &res, rpc.CallOptions{Timeout: procCallTimeout}); err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, client.ProcessStarted{ID: res.ID, PID: res.PID})
	return nil
}

func (s *Server) handleListProcesses(w http.ResponseWriter, r *http.Request, t target) error {
	var res wire.ProcListResult
	if err := t.Call(r.Context(), wire.OpProcList, nil, &res, rpc.CallOptions{Timeout: procCallTimeout}); err != nil {
		return err
	}
	out := client.ProcessList{Processes: make([]client.Process, len(res.Processes))}
	for i := range res.Processes {
		out.Processes[i] = renderProcess(&res.Processes[i])
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) handleGetProcess(w http.ResponseWriter, r *http.Request, t target) error {
	id, err := procID(r)
	if err != nil {
		return err
	}
	var res wire.ProcInfo
	if err := t.Call(r.Context(), wire.OpProcGet, &wire.ProcRef{ID: id}, &res, rpc.CallOptions{Timeout: procCallTimeout}); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, renderProcess(&res))
	return nil
}

func renderProcess(p *wire.ProcInfo) client.Process {
	out := client.Process{
		ID: p.ID, PID: p.PID, Argv: p.Argv, TTY: p.TTY, Detached: p.Detached, Running: p.Running,
		ExitCode: p.ExitCode, TimedOut: p.TimedOut, Closed: p.Closed, StartedAt: p.StartedAt.UTC(),
	}
	if !p.ExitedAt.IsZero() && p.ExitedAt.Unix() > 0 {
		out.ExitedAt = p.ExitedAt.UTC()
	}
	if out.Argv == nil {
		out.Argv = []string{}
	}
	return out
}

// readCap is the most output one read asks for: wire.MaxReadBytes, less
// on a NATS server with a smaller max payload.
func (s *Server) readCap() int {
	n := wire.MaxReadBytes
	if mp := s.nc.MaxPayload(); mp > 0 {
		n = min(n, int(mp)*3/4-payloadReserve)
	}
	return max(n, 4<<10)
}

// readProc runs one proc.read.
func (s *Server) readProc(r *http.Request, t target, req *wire.ProcReadRequest) (*wire.ProcReadResult, error) {
	if req.MaxBytes == 0 || req.MaxBytes > s.readCap() {
		req.MaxBytes = min(s.readCap(), max(req.MaxBytes, wire.DefaultReadBytes))
	}
	var res wire.ProcReadResult
	err := t.Call(r.Context(), wire.OpProcRead, req, &res, rpc.CallOptions{
		Timeout: time.Duration(req.WaitMs)*time.Millisecond + readGrace,
	})
	return &res, err
}

func (s *Server) handleProcessOutput(w http.ResponseWriter, r *http.Request, t target) error {
	id, err := procID(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	req := &wire.ProcReadRequest{ID: id}
	if req.After, err = queryUint(q.Get("after"), "after"); err != nil {
		return err
	}
	maxBytes, err := queryUint(q.Get("maxBytes"), "maxBytes")
	if err != nil {
		return err
	}
	wait, err := queryUint(q.Get("waitMs"), "waitMs")
	if err != nil {
		return err
	}
	req.MaxBytes, req.WaitMs = int(min(maxBytes, 1<<30)), int64(min(wait, 1<<40))
	if err := req.Validate(); err != nil {
		return err
	}
	res, err := s.readProc(r, t, req)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, renderOutput(res))
	return nil
}

func queryUint(v, name string) (uint64, error) {
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return 0, wire.Errorf(wire.CodeInvalidArgument, "", "%s must be a non-negative integer, not %q", name, v)
	}
	return n, nil
}

func renderOutput(res *wire.ProcReadResult) client.ProcessOutput {
	out := client.ProcessOutput{
		Chunks: make([]client.ProcessChunk, len(res.Chunks)), NextSeq: res.NextSeq,
		Exited: res.ExitSeq != 0, TimedOut: res.TimedOut, Closed: res.ClosedSeq != 0, Dropped: res.Dropped,
	}
	for i, c := range res.Chunks {
		out.Chunks[i] = client.ProcessChunk{Seq: c.Seq, Stream: c.Stream, Data: c.Data}
	}
	if out.Exited {
		code := res.ExitCode
		out.ExitCode = &code
	}
	return out
}

func (s *Server) handleProcessStdin(w http.ResponseWriter, r *http.Request, t target) error {
	id, err := procID(r)
	if err != nil {
		return err
	}
	var req client.StdinRequest
	if err := decodeJSON(w, r, maxStdinBody, &req); err != nil {
		return err
	}
	if len(req.Data) > 0 && req.Text != "" {
		return wire.Errorf(wire.CodeInvalidArgument, "", "give data or text, not both")
	}
	body := &wire.ProcWriteRequest{ID: id, WriteID: req.WriteID, Data: req.Data, EOF: req.EOF}
	if req.Text != "" {
		body.Data = []byte(req.Text)
	}
	if err := body.Validate(); err != nil {
		return err
	}
	if err := t.Call(r.Context(), wire.OpProcWrite, body, nil, rpc.CallOptions{Timeout: procCallTimeout}); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, client.StdinResult{Status: "accepted"})
	return nil
}

func (s *Server) handleProcessSignal(w http.ResponseWriter, r *http.Request, t target) error {
	id, err := procID(r)
	if err != nil {
		return err
	}
	var req client.SignalRequest
	if err := decodeJSON(w, r, maxJSONBody, &req); err != nil {
		return err
	}
	body := &wire.ProcSignalRequest{ID: id, Signal: req.Signal}
	if err := body.Validate(); err != nil {
		return err
	}
	if err := t.Call(r.Context(), wire.OpProcSignal, body, nil, rpc.CallOptions{Timeout: procCallTimeout}); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) handleProcessResize(w http.ResponseWriter, r *http.Request, t target) error {
	id, err := procID(r)
	if err != nil {
		return err
	}
	var req client.ResizeRequest
	if err := decodeJSON(w, r, maxJSONBody, &req); err != nil {
		return err
	}
	body := &wire.ProcResizeRequest{ID: id, Cols: req.Cols, Rows: req.Rows}
	if err := body.Validate(); err != nil {
		return err
	}
	if err := t.Call(r.Context(), wire.OpProcResize, body, nil, rpc.CallOptions{Timeout: procCallTimeout}); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) handleTerminateProcess(w http.ResponseWriter, r *http.Request, t target) error {
	id, err := procID(r)
	if err != nil {
		return err
	}
	var res wire.ProcTerminateResult
	if err := t.Call(r.Context(), wire.OpProcTerminate, &wire.ProcRef{ID: id}, &res, rpc.CallOptions{Timeout: procCallTimeout}); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, client.TerminateResult{WasRunning: res.WasRunning})
	return nil
}

// routeProcesses mounts API.md's Processes table under every target prefix.
func (s *Server) routeProcesses(mux *http.ServeMux) {
	s.handleTarget(mux, "POST", "/processes", s.handleStartProcess)
	s.handleTarget(mux, "GET", "/processes", s.handleListProcesses)
	s.handleTarget(mux, "GET", "/processes/{id}", s.handleGetProcess)
	s.handleTarget(mux, "GET", "/processes/{id}/output", s.handleProcessOutput)
	s.handleTarget(mux, "GET", "/processes/{id}/events", s.handleProcessEvents)
	s.handleTarget(mux, "POST", "/processes/{id}/stdin", s.handleProcessStdin)
	s.handleTarget(mux, "POST", "/processes/{id}/signal", s.handleProcessSignal)
	s.handleTarget(mux, "POST", "/processes/{id}/resize", s.handleProcessResize)
	s.handleTarget(mux, "DELETE", "/processes/{id}", s.handleTerminateProcess)
	s.handleTarget(mux, "GET", "/processes/{id}/attach", s.handleAttach)
	s.handleTarget(mux, "POST", "/processes/{id}/attach-tickets", s.handleAttachTicket)
}
