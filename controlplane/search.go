package controlplane

import (
	"net/http"
	"net/url"
	"strconv"

	"github.com/outposthq/outpost/controlplane/client"
	"github.com/outposthq/outpost/wire"
)

// routeSearch mounts GET {target}/fs/search and /fs/find.
func (s *Server) routeSearch(mux *http.ServeMux) {
	s.handleTarget(mux, "GET", "/fs/search", s.handleSearch)
	s.handleTarget(mux, "GET", "/fs/find", s.handleFind)
}

// maxResultsParam reads maxResults: default wire.DefaultSearchResults,
// 1 to wire.MaxSearchResults.
func maxResultsParam(q url.Values) (int, error) {
	v := q.Get("maxResults")
	if v == "" {
		return wire.DefaultSearchResults, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > wire.MaxSearchResults {
		return 0, wire.Errorf(wire.CodeInvalidArgument, "", "maxResults must be 1 to %d, not %q", wire.MaxSearchResults, v)
	}
	return n, nil
}

// handleSearch serves GET {target}/fs/search?path=&query=&regex=&glob=&maxResults=.
func (s *Server) handleSearch(w http.ResponseWriter, r *http.Request, t target) error {
	q := r.URL.Query()
	re, err := boolParam(q, "regex", false)
	if err != nil {
		return err
	}
	max, err := maxResultsParam(q)
	if err != nil {
		return err
	}
	if q.Get("query") == "" {
		return wire.Errorf(wire.CodeInvalidArgument, "", "query is required")
	}
	req := &wire.FsSearchRequest{Path: q.Get("path"), Query: q.Get("query"), Regex: re, Glob: q.Get("glob"), MaxResults: max}
	var res wire.FsSearchResult
	if err := t.Call(r.Context(), wire.OpFsSearch, req, &res, fileCall()); err != nil {
		return err
	}
	out := client.SearchResult{Matches: make([]client.SearchMatch, len(res.Matches)), Truncated: res.Truncated}
	for i, m := range res.Matches {
		out.Matches[i] = client.SearchMatch{Path: m.Path, Line: m.Line, Column: m.Column, Text: m.Text}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// handleFind serves GET {target}/fs/find?path=&glob=&maxResults=.
func (s *Server) handleFind(w http.ResponseWriter, r *http.Request, t target) error {
	q := r.URL.Query()
	max, err := maxResultsParam(q)
	if err != nil {
		return err
	}
	if q.Get("glob") == "" {
		return wire.Errorf(wire.CodeInvalidArgument, "", "glob is required")
	}
	var res wire.FsFindResult
	if err := t.Call(r.Context(), wire.OpFsFind, &wire.FsFindRequest{Path: q.Get("path"), Glob: q.Get("glob"), MaxResults: max}, &res, fileCall()); err != nil {
		return err
	}
	out := client.FindResult{Entries: make([]client.FileStat, len(res.Entries)), Truncated: res.Truncated}
	for i, e := range res.Entries {
		out.Entries[i] = fileStat(e)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
