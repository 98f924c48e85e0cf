package client

import (
	"context"
	"io"
	"net/http"
	"net/url"
)

// GetArchive calls GET {target}/fs/archive?path= and returns the tree as a
// tar stream; the caller closes it. A stream cut short lacks the tar's end
// marker, which a tar reader reports as an unexpected EOF.
func (t *Target) GetArchive(ctx context.Context, path string) (io.ReadCloser, error) {
	resp, err := t.c.raw(ctx, http.MethodGet, t.prefix+"/fs/archive?"+url.Values{"path": {path}}.Encode(), nil, 0, nil)
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}

// PutArchive calls PUT {target}/fs/archive?path= with the tar stream in
// body; size is its length, or -1 when unknown.
func (t *Target) PutArchive(ctx context.Context, path string, body io.Reader, size int64) (*UnpackResult, error) {
	resp, err := t.c.raw(ctx, http.MethodPut, t.prefix+"/fs/archive?"+url.Values{"path": {path}}.Encode(), body, size, nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var out UnpackResult
	if err := decodeBody(resp, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
