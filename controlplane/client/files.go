package client

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// Stat calls GET {target}/fs/stat. A final symbolic link is described, not
// followed.
func (t *Target) Stat(ctx context.Context, path string) (*FileStat, error) {
	var out FileStat
	return &out, t.c.do(ctx, http.MethodGet, t.prefix+"/fs/stat?"+url.Values{"path": {path}}.Encode(), nil, &out)
}

// List calls GET {target}/fs/list: the entries of a directory (and its
// subdirectories with recursive), sorted by path.
func (t *Target) List(ctx context.Context, path string, recursive bool) ([]FileStat, error) {
	var out FileList
	q := url.Values{"path": {path}, "recursive": {strconv.FormatBool(recursive)}}
	if err := t.c.do(ctx, http.MethodGet, t.prefix+"/fs/list?"+q.Encode(), nil, &out); err != nil {
		return nil, err
	}
	return out.Entries, nil
}

// Mkdir calls POST {target}/fs/mkdir.
func (t *Target) Mkdir(ctx context.Context, path string, parents bool) (*FileStat, error) {
	var out FileStat
	return &out, t.c.do(ctx, http.MethodPost, t.prefix+"/fs/mkdir", MkdirRequest{Path: path, Parents: parents}, &out)
}

// Move calls POST {target}/fs/move.
func (t *Target) Move(ctx context.Context, from, to string, overwrite bool) (*FileStat, error) {
	var out FileStat
	return &out, t.c.do(ctx, http.MethodPost, t.prefix+"/fs/move", MoveRequest{From: from, To: to, Overwrite: overwrite}, &out)
}

// Remove calls DELETE {target}/fs; a non-empty directory needs recursive.
func (t *Target) Remove(ctx context.Context, path string, recursive bool) error {
	q := url.Values{"path": {path}, "recursive": {strconv.FormatBool(recursive)}}
	return t.c.do(ctx, http.MethodDelete, t.prefix+"/fs?"+q.Encode(), nil, nil)
}

// PutOptions control Put. The zero value replaces an existing file and
// keeps its mode (0644 for a new file).
type PutOptions struct {
	// Mode holds permission bits; 0 keeps the existing file's.
	Mode uint32
	// NoOverwrite makes an existing file a conflict.
	NoOverwrite bool
}

// Put calls PUT {target}/fs/file with the content of body, streamed; size
// is its length, or -1 when unknown. The file is replaced atomically.
func (t *Target) Put(ctx context.Context, path string, body io.Reader, size int64, opts PutOptions) (*WriteResult, error) {
	q := url.Values{"path": {path}, "overwrite": {strconv.FormatBool(!opts.NoOverwrite)}}
	if opts.Mode != 0 {
		q.Set("mode", fmt.Sprintf("%04o", opts.Mode))
	}
	resp, err := t.c.raw(ctx, http.MethodPut, t.prefix+"/fs/file?"+q.Encode(), body, size, nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var out WriteResult
	if err := decodeBody(resp, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// File is a download in progress: Body streams the bytes; Size is how many
// it carries and Total the file's size.
type File struct {
	Body    io.ReadCloser
	Size    int64
	Total   int64
	ModTime time.Time
}

// Get calls GET {target}/fs/file and returns the file as a stream; the
// caller closes Body.
func (t *Target) Get(ctx context.Context, path string) (*File, error) {
	return t.GetRange(ctx, path, 0, -1)
}

// GetRange calls GET {target}/fs/file with "Range: bytes=from-(from+n-1)",
// or bytes=from- when n < 0.
func (t *Target) GetRange(ctx context.Context, path string, from, n int64) (*File, error) {
	hdr := http.Header{}
	switch {
	case n >= 0:
		hdr.Set("Range", fmt.Sprintf("bytes=%d-%d", from, from+n-1))
	case from > 0:
		hdr.Set("Range", fmt.Sprintf("bytes=%d-", from))
	}
	resp, err := t.c.raw(ctx, http.MethodGet, t.prefix+"/fs/file?"+url.Values{"path": {path}}.Encode(), nil, 0, hdr)
	if err != nil {
		return nil, err
	}
	f := &File{Body: resp.Body, Size: resp.ContentLength, Total: resp.ContentLength}
	if cr := resp.Header.Get("Content-Range"); cr != "" {
		var a, b, total int64
		if _, err := fmt.Sscanf(cr, "bytes %d-%d/%d", &a, &b, &total); err == nil {
			f.Total = total
		}
	}
	f.ModTime, _ = http.ParseTime(resp.Header.Get("Last-Modified"))
	return f, nil
}

// raw sends body as is and returns a successful response; a status >= 400
// becomes a *wire.Error.
func (c *Client) raw(ctx context.Context, method, path string, body io.Reader, size int64, hdr http.Header) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.BaseURL+path, body)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	if body != nil {
		req.ContentLength = size
		req.Header.Set("Content-Type", "application/octet-stream")
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	resp, err := c.send(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	if resp.StatusCode >= 400 {
		defer resp.Body.Close()
		return nil, decodeError(resp)
	}
	return resp, nil
}

// decodeBody decodes a JSON response body into out.
func decodeBody(resp *http.Response, out any) error {
	if err := decodeJSON(resp, out); err != nil {
		return fmt.Errorf("%s %s: decode response: %w", resp.Request.Method, resp.Request.URL.Path, err)
	}
	return nil
}
