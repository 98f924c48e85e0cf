package controlplane

import (
	"encoding/base64"
	"net/http"
	"strings"
	"time"

	"github.com/outposthq/outpost/controlplane/client"
	"github.com/outposthq/outpost/rpc"
	"github.com/outposthq/outpost/wire"
)

// execGrace is added to the command's timeout for the call: the agent
// enforces the timeout itself (answering exit 124), the call only needs to
// outlast it.
const execGrace = 15 * time.Second

func (s *Server) handleExec(w http.ResponseWriter, r *http.Request, t target) error {
	encoding := r.URL.Query().Get("encoding")
	if encoding != "" && encoding != "text" && encoding != "base64" {
		return wire.Errorf(wire.CodeInvalidArgument, "", "encoding must be text or base64, not %q", encoding)
	}
	var req client.ExecRequest
	if err := decodeJSON(w, r, maxExecBody, &req); err != nil {
		return err
	}
	body, err := execBody(&req, s.maxOutputCap())
	if err != nil {
		return err
	}
	var res wire.ExecResult
	err = t.Call(r.Context(), wire.OpExec, body, &res, rpc.CallOptions{
		Timeout: time.Duration(body.TimeoutMs)*time.Millisecond + execGrace,
	})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, renderExec(&res, encoding == "base64"))
	return nil
}

// maxOutputCap is the largest outputCap one exec reply can carry: both
// streams at the cap within the NATS max payload, less the reply's
// envelope. A larger cap only makes the agent hold output it can never
// send (a 400 MB cap grew an agent to 2 GiB).
func (s *Server) maxOutputCap() int {
	return max((int(s.nc.MaxPayload())-payloadReserve)/2, 0)
}

// execBody turns the HTTP body into the wire body, with API.md's defaults
// (wire.ExecRequest.Normalize); maxCap bounds outputCap (the default is
// lowered to it, a larger one asked for is invalid_argument). Only the
// stdin forms are HTTP's own.
func execBody(req *client.ExecRequest, maxCap int) (*wire.ExecRequest, error) {
	body := &wire.ExecRequest{
		Argv:      req.Argv,
		Command:   req.Command,
		Cwd:       req.Cwd,
		Env:       req.Env,
		TimeoutMs: req.TimeoutMs,
		OutputCap: req.OutputCap,
	}
	switch {
	case req.Stdin != "" && req.StdinBase64 != "":
		return nil, wire.Errorf(wire.CodeInvalidArgument, "", "give stdin or stdinBase64, not both")
	case req.StdinBase64 != "":
		b, err := base64.StdEncoding.DecodeString(req.StdinBase64)
		if err != nil {
			return nil, wire.Errorf(wire.CodeInvalidArgument, "", "stdinBase64 is not valid base64: %v", err)
		}
		body.Stdin = b
	case req.Stdin != "":
		body.Stdin = []byte(req.Stdin)
	}
	if body.OutputCap > maxCap {
		return nil, wire.Errorf(wire.CodeInvalidArgument, "", "outputCap must be at most %d bytes (what one reply can carry: both streams within the NATS max payload)", maxCap)
	}
	if err := body.Normalize(maxCap); err != nil {
		return nil, err
	}
	return body, nil
}

// renderExec renders output as UTF-8 text (invalid bytes become U+FFFD) or,
// for base64, as the wire result itself (its JSON is base64 of the exact
// bytes).
func renderExec(res *wire.ExecResult, b64 bool) any {
	if b64 {
		return res
	}
	text := func(b []byte) string { return strings.ToValidUTF8(string(b), "\uFFFD") }
	return &client.ExecResult{
		ExitCode: res.ExitCode, Stdout: text(res.Stdout), Stderr: text(res.Stderr),
		TimedOut: res.TimedOut, Truncated: res.Truncated, DurationMs: res.DurationMs,
	}
}
