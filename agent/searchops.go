package agent

import (
	"context"

	"github.com/outposthq/outpost/agent/files"
	"github.com/outposthq/outpost/wire"
)

// registerSearch serves fs.search and fs.find on root.
func registerSearch(a *Agent, root *files.FS) {
	a.Register(wire.OpFsSearch, func(ctx context.Context, req *wire.Request) (any, error) {
		body, err := decode[wire.FsSearchRequest](req)
		if err != nil {
			return nil, err
		}
		ms, trunc, err := root.Search(ctx, files.SearchOptions{Path: body.Path, Query: body.Query, Regex: body.Regex, Glob: body.Glob, MaxResults: body.MaxResults})
		if err != nil {
			return nil, err
		}
		out := &wire.FsSearchResult{Matches: make([]wire.FsSearchMatch, len(ms)), Truncated: trunc}
		for i, m := range ms {
			out.Matches[i] = wire.FsSearchMatch{Path: m.Path, Line: m.Line, Column: m.Column, Text: m.Text}
		}
		return out, nil
	})
	a.Register(wire.OpFsFind, func(ctx context.Context, req *wire.Request) (any, error) {
		body, err := decode[wire.FsFindRequest](req)
		if err != nil {
			return nil, err
		}
		es, trunc, err := root.Find(ctx, body.Path, body.Glob, body.MaxResults)
		if err != nil {
			return nil, err
		}
		out := &wire.FsFindResult{Entries: make([]wire.FileEntry, len(es)), Truncated: trunc}
		for i, e := range es {
			out.Entries[i] = wireEntry(e)
		}
		return out, nil
	})
}
