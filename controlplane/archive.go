package controlplane

import (
	"context"
	"errors"
	"io"
	"net/http"

	"github.com/outposthq/outpost/controlplane/client"
	"github.com/outposthq/outpost/wire"
)

// routeArchive mounts GET and PUT {target}/fs/archive.
func (s *Server) routeArchive(mux *http.ServeMux) {
	s.handleTarget(mux, "GET", "/fs/archive", s.handleGetArchive)
	s.handleTarget(mux, "PUT", "/fs/archive", s.handlePutArchive)
}

// handleGetArchive serves GET {target}/fs/archive?path=: the tree as a tar
// stream (application/x-tar), names relative to path. The agent makes the
// tar ahead in pieces; each fs.archive.read takes the next. A failure after
// the headers went out cuts the stream short (the tar then lacks its end
// marker, which tar readers report), never mixes in an error body.
func (s *Server) handleGetArchive(w http.ResponseWriter, r *http.Request, t target) error {
	path := r.URL.Query().Get("path")
	x := s.newRelay(t)
	var open wire.FsArchiveOpenResult
	req := &wire.FsArchiveOpenRequest{Path: path, Chunk: int64(x.chunk)}
	if err := t.Call(r.Context(), wire.OpFsArchiveOpen, req, &open, fileCall()); err != nil {
		return err
	}
	defer x.cleanup(r.Context(), wire.OpFsArchiveClose, open.Handle)
	w.Header().Set("Content-Type", "application/x-tar")
	w.WriteHeader(http.StatusOK)
	// The next piece is asked for while the last one is written to the
	// client: a writer goroutine takes them, in order, until pieces is
	// closed. A failed write ends the reads too (ctx), and the writer then
	// only drains what was already read.
	ctx, cancel := context.WithCancelCause(r.Context())
	defer cancel(nil)
	pieces := make(chan []byte, 2)
	werr := make(chan error, 1)
	go func() {
		var err error
		for p := range pieces {
			if err == nil {
				if _, err = w.Write(p); err != nil {
					cancel(err)
				}
			}
		}
		werr <- err
	}()
	for {
		var res wire.FsArchiveReadResult
		err := x.t.Concurrent().Call(ctx, wire.OpFsArchiveRead, &wire.FsHandleRequest{Handle: open.Handle}, &res, fileCall())
		if err == nil && len(res.Data) > 0 {
			pieces <- res.Data // it aliases its reply, which nothing reuses
		}
		if err != nil || res.EOF {
			close(pieces)
			if werr := <-werr; werr != nil {
				err = werr // the cause; the read's error is its echo
			}
			if err == nil {
				return nil
			}
			if !errors.Is(err, r.Context().Err()) {
				s.log.Warn("archive download cut short", "path", path, "err", err)
			}
			panic(http.ErrAbortHandler)
		}
	}
}

// handlePutArchive serves PUT {target}/fs/archive?path=: the body is a tar
// stream, unpacked under path (created when missing) with each file
// written atomically. The body goes to the agent in order, in chunks, up
// to the window the agent gives at fs.unpack.begin in flight at once (one
// at a time for agents that give none); the agent validates every entry
// (confinement, links, limits). On a failure the agent stops at the
// failing entry: entries before it stay, nothing of it is written. 200
// with the counts.
func (s *Server) handlePutArchive(w http.ResponseWriter, r *http.Request, t target) error {
	path := r.URL.Query().Get("path")
	if path == "" {
		return wire.Errorf(wire.CodeInvalidArgument, "", "path is required")
	}
	x := s.newRelay(t)
	var begun wire.FsArchiveOpenResult
	if err := t.Call(r.Context(), wire.OpFsUnpackBegin, &wire.FsUnpackBeginRequest{Path: path}, &begun, fileCall()); err != nil {
		return err
	}
	res, err := x.sendArchive(r.Context(), begun.Handle, max(1, min(begun.Window, x.window)), r.Body)
	if err != nil {
		x.cleanup(r.Context(), wire.OpFsUnpackAbort, begun.Handle)
		return err
	}
	writeJSON(w, http.StatusOK, client.UnpackResult{Path: res.Path, Files: res.Files, Dirs: res.Dirs, Links: res.Links, Bytes: res.Bytes})
	return nil
}

// sendArchive sends body to the unpack handle in order, up to window
// chunks in flight (the agent unpacks as it receives; its replies pace
// the sender), and commits it.
func (x *fileRelay) sendArchive(ctx context.Context, handle string, window int, body io.Reader) (*wire.FsUnpackResult, error) {
	first := x.getChunk()
	n, _, err := readChunk(body, (*first)[wire.Headroom:])
	if err != nil {
		x.putChunk(first)
		return nil, err
	}
	send := chunkSend{op: wire.OpFsUnpackChunk, handle: handle, window: window,
		mk: func(off int64) wire.InPlaceBody { return &wire.FsUnpackChunkRequest{Handle: handle, Offset: off} }}
	if _, err := x.sendChunks(ctx, send, body, first, n); err != nil {
		return nil, err
	}
	var res wire.FsUnpackResult
	if err := x.t.Concurrent().Call(ctx, wire.OpFsUnpackCommit, &wire.FsHandleRequest{Handle: handle}, &res, fileCall()); err != nil {
		return nil, err
	}
	return &res, nil
}
