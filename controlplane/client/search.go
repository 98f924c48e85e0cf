package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
)

// Search calls GET {target}/fs/search.
func (t *Target) Search(ctx context.Context, o SearchOptions) (*SearchResult, error) {
	q := url.Values{"path": {o.Path}, "query": {o.Query}}
	if o.Regex {
		q.Set("regex", "true")
	}
	if o.Glob != "" {
		q.Set("glob", o.Glob)
	}
	if o.MaxResults > 0 {
		q.Set("maxResults", strconv.Itoa(o.MaxResults))
	}
	var out SearchResult
	err := t.c.do(ctx, http.MethodGet, t.prefix+"/fs/search?"+q.Encode(), nil, &out)
	return &out, err
}

// Find calls GET {target}/fs/find; maxResults 0 is the server's default.
func (t *Target) Find(ctx context.Context, path, glob string, maxResults int) (*FindResult, error) {
	q := url.Values{"path": {path}, "glob": {glob}}
	if maxResults > 0 {
		q.Set("maxResults", strconv.Itoa(maxResults))
	}
	var out FindResult
	err := t.c.do(ctx, http.MethodGet, t.prefix+"/fs/find?"+q.Encode(), nil, &out)
	return &out, err
}
