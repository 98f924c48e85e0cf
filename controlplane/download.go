package controlplane

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/outposthq/outpost/controlplane/client"
	"github.com/outposthq/outpost/wire"
)

// handleGetFile serves GET {target}/fs/file?path=: the raw bytes, streamed
// in chunks read ahead from one open file on the agent; a single
// "Range: bytes=a-b" (also "a-" and "-n") gives 206. A download that fails
// after the headers went out is cut short (the client sees fewer bytes than
// Content-Length), never padded or mixed with an error body.
func (s *Server) handleGetFile(w http.ResponseWriter, r *http.Request, t target) error {
	path := r.URL.Query().Get("path")
	x := s.newRelay(t).withBulk(s, r)
	rangeHdr := r.Header.Get("Range")
	first := int64(x.chunk)
	if rangeHdr != "" || r.Method == http.MethodHead {
		first = 0
	}
	var open wire.FsOpenResult
	if err := t.Call(r.Context(), wire.OpFsOpen, &wire.FsOpenRequest{Path: path, Length: first}, &open, fileCall()); err != nil {
		return err
	}
	if open.Handle != "" {
		defer x.cleanup(r.Context(), wire.OpFsClose, open.Handle)
	}
	size := open.Entry.Size
	from, to, partial, err := parseRange(rangeHdr, size)
	if err != nil {
		return rangeNotSatisfiable(w, size, err)
	}
	h := w.Header()
	h.Set("Content-Type", "application/octet-stream")
	h.Set("Accept-Ranges", "bytes")
	h.Set("Last-Modified", open.Entry.ModTime.UTC().Format(http.TimeFormat))
	h.Set("Content-Length", strconv.FormatInt(to-from, 10))
	status := http.StatusOK
	if partial {
		status = http.StatusPartialContent
		h.Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", from, to-1, size))
	}
	w.WriteHeader(status)
	if r.Method == http.MethodHead || to == from {
		return nil
	}
	var out io.Writer = w
	if g, ok := r.Context().Value(gatherKey{}).(*gatherConn); ok && r.ProtoMajor == 1 {
		out = gatheredWriter{w: w, g: g}
	}
	if n := int64(len(open.Data)); n > 0 && from == 0 {
		if _, err := out.Write(open.Data[:min(n, to)]); err != nil {
			panic(http.ErrAbortHandler)
		}
		from = min(n, to)
	}
	if from < to {
		if err := x.download(r.Context(), out, open.Handle, from, to); err != nil {
			if !errors.Is(err, r.Context().Err()) {
				s.log.Warn("download cut short", "path", path, "err", err)
			}
			panic(http.ErrAbortHandler)
		}
	}
	return nil
}

// errRange is a Range header that names no byte of the file.
var errRange = errors.New("range not satisfiable")

// parseRange reads a "bytes=" Range header against a file of size bytes and
// returns the half-open range [from, to). No header, a malformed one or
// several ranges give the whole file (RFC 9110 lets a server ignore Range);
// a range starting past the end is errRange.
func parseRange(hdr string, size int64) (from, to int64, partial bool, err error) {
	spec, ok := strings.CutPrefix(hdr, "bytes=")
	if !ok || strings.Contains(spec, ",") {
		return 0, size, false, nil
	}
	a, b, ok := strings.Cut(strings.TrimSpace(spec), "-")
	if !ok {
		return 0, size, false, nil
	}
	if a == "" { // suffix: the last b bytes
		n, err := strconv.ParseInt(b, 10, 64)
		if err != nil || n < 0 {
			return 0, size, false, nil
		}
		if n == 0 || size == 0 {
			return 0, 0, false, errRange
		}
		return max(size-n, 0), size, true, nil
	}
	start, err := strconv.ParseInt(a, 10, 64)
	if err != nil || start < 0 {
		return 0, size, false, nil
	}
	end := size - 1
	if b != "" {
		if end, err = strconv.ParseInt(b, 10, 64); err != nil || end < start {
			return 0, size, false, nil
		}
	}
	if start >= size {
		return 0, 0, false, errRange
	}
	return start, min(end, size-1) + 1, true, nil
}

// rangeNotSatisfiable answers 416 with the file's size, in the usual error
// body (code invalid_argument, reason range_not_satisfiable).
func rangeNotSatisfiable(w http.ResponseWriter, size int64, err error) error {
	w.Header().Set("Content-Range", fmt.Sprintf("bytes */%d", size))
	we := wire.Errorf(wire.CodeInvalidArgument, wire.ReasonRangeNotSatisfiable, "%v: the file has %d bytes", err, size)
	writeJSON(w, we.HTTPStatus(), client.NewErrorBody(we)) // 416, from the table
	return nil
}
