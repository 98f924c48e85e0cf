package controlplane

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/outposthq/outpost/controlplane/client"
	"github.com/outposthq/outpost/rpc"
	"github.com/outposthq/outpost/wire"
)

// fileCallTimeout bounds one file call (a stat, a chunk, a commit).
const fileCallTimeout = 2 * time.Minute

// handleStat serves GET {target}/fs/stat?path=.
func (s *Server) handleStat(w http.ResponseWriter, r *http.Request, t target) error {
	var e wire.FileEntry
	if err := t.Call(r.Context(), wire.OpFsStat, &wire.FsPathRequest{Path: r.URL.Query().Get("path")}, &e, fileCall()); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, fileStat(e))
	return nil
}

// handleList serves GET {target}/fs/list?path=&recursive=.
func (s *Server) handleList(w http.ResponseWriter, r *http.Request, t target) error {
	q := r.URL.Query()
	rec, err := boolParam(q, "recursive", false)
	if err != nil {
		return err
	}
	var res wire.FsListResult
	if err := t.Call(r.Context(), wire.OpFsList, &wire.FsListRequest{Path: q.Get("path"), Recursive: rec}, &res, fileCall()); err != nil {
		return err
	}
	out := client.FileList{Entries: make([]client.FileStat, len(res.Entries))}
	for i, e := range res.Entries {
		out.Entries[i] = fileStat(e)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// handleMkdir serves POST {target}/fs/mkdir: 201 with the directory's stat.
func (s *Server) handleMkdir(w http.ResponseWriter, r *http.Request, t target) error {
	var req client.MkdirRequest
	if err := decodeJSON(w, r, maxJSONBody, &req); err != nil {
		return err
	}
	if req.Path == "" {
		return wire.Errorf(wire.CodeInvalidArgument, "", "path is required")
	}
	var e wire.FileEntry
	if err := t.Call(r.Context(), wire.OpFsMkdir, &wire.FsMkdirRequest{Path: req.Path, Parents: req.Parents}, &e, fileCall()); err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, fileStat(e))
	return nil
}

// handleMove serves POST {target}/fs/move: 200 with the stat at "to".
func (s *Server) handleMove(w http.ResponseWriter, r *http.Request, t target) error {
	var req client.MoveRequest
	if err := decodeJSON(w, r, maxJSONBody, &req); err != nil {
		return err
	}
	if req.From == "" || req.To == "" {
		return wire.Errorf(wire.CodeInvalidArgument, "", "from and to are required")
	}
	var e wire.FileEntry
	body := &wire.FsMoveRequest{From: req.From, To: req.To, Overwrite: req.Overwrite}
	if err := t.Call(r.Context(), wire.OpFsMove, body, &e, fileCall()); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, fileStat(e))
	return nil
}

// handleRemove serves DELETE {target}/fs?path=&recursive=: 204.
func (s *Server) handleRemove(w http.ResponseWriter, r *http.Request, t target) error {
	q := r.URL.Query()
	rec, err := boolParam(q, "recursive", false)
	if err != nil {
		return err
	}
	if q.Get("path") == "" {
		return wire.Errorf(wire.CodeInvalidArgument, "", "path is required")
	}
	if err := t.Call(r.Context(), wire.OpFsRemove, &wire.FsRemoveRequest{Path: q.Get("path"), Recursive: rec}, nil, fileCall()); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// handlePutFile serves PUT {target}/fs/file?path=&mode=&overwrite=: the raw
// body becomes the file, atomically; parents are created. overwrite
// defaults to true, as PUT replaces.
func (s *Server) handlePutFile(w http.ResponseWriter, r *http.Request, t target) error {
	opts, err := writeOptions(r.URL.Query())
	if err != nil {
		return err
	}
	res, err := s.newRelay(t).withBulk(s, r).upload(r.Context(), r.Body, opts)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, client.WriteResult{Path: res.Path, Size: res.Size, SHA256: res.SHA256})
	return nil
}

// writeOptions reads path, mode (octal) and overwrite.
func writeOptions(q url.Values) (wire.FsWriteOptions, error) {
	o := wire.FsWriteOptions{Path: q.Get("path"), Parents: true}
	if o.Path == "" {
		return o, wire.Errorf(wire.CodeInvalidArgument, "", "path is required")
	}
	if m := q.Get("mode"); m != "" {
		v, err := strconv.ParseUint(m, 8, 32)
		if err != nil || v&^0o777 != 0 {
			return o, wire.Errorf(wire.CodeInvalidArgument, "", "mode must be octal permission bits such as 0644, not %q", m)
		}
		o.Mode = uint32(v)
	}
	ow, err := boolParam(q, "overwrite", true)
	o.Overwrite = ow
	return o, err
}

// boolParam parses query parameter name; absent means def.
func boolParam(q url.Values, name string, def bool) (bool, error) {
	v := q.Get(name)
	if v == "" {
		return def, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return def, wire.Errorf(wire.CodeInvalidArgument, "", "%s must be true or false, not %q", name, v)
	}
	return b, nil
}

// fileCall is the options of one file call.
func fileCall() rpc.CallOptions { return rpc.CallOptions{Timeout: fileCallTimeout} }

// fileStat renders an entry for the API.
func fileStat(e wire.FileEntry) client.FileStat {
	return client.FileStat{Name: e.Name, Path: e.Path, Type: e.Type, Size: e.Size,
		Mode: fmt.Sprintf("%04o", e.Mode), ModTime: e.ModTime.UTC(), LinkTarget: e.Link}
}

// routeFiles mounts the Files and Git calls of API.md under every target.
func (s *Server) routeFiles(mux *http.ServeMux) {
	s.handleTarget(mux, "GET", "/fs/stat", s.handleStat)
	s.handleTarget(mux, "GET", "/fs/list", s.handleList)
	s.handleTarget(mux, "GET", "/fs/file", s.handleGetFile)
	s.handleTarget(mux, "PUT", "/fs/file", s.handlePutFile)
	s.handleTarget(mux, "POST", "/fs/mkdir", s.handleMkdir)
	s.handleTarget(mux, "POST", "/fs/move", s.handleMove)
	s.handleTarget(mux, "DELETE", "/fs", s.handleRemove)
	s.handleTarget(mux, "GET", "/git/status", s.handleGitStatus)
	s.handleTarget(mux, "GET", "/git/diff", s.handleGitDiff)
	s.handleTarget(mux, "POST", "/git/apply", s.handleGitApply)
	s.handleTarget(mux, "POST", "/git/commit", s.handleGitCommit)
	s.handleTarget(mux, "GET", "/git/log", s.handleGitLog)
}
