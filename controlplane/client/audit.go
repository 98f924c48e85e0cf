package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"github.com/outposthq/outpost/wire"
)

// AuditEvent is one operation an agent ran, from the control plane's copy
// of its audit log (API.md, "The owner's control of their machine").
type AuditEvent = wire.AuditEvent

// AuditPage is the body of GET /v1/workspaces/{ws}/audit: events oldest
// first, and Next, the cursor of the following page.
type AuditPage struct {
	Events []AuditEvent `json:"events"`
	Next   string       `json:"next"`
}

// AuditOptions select a page: one agent's events (all when empty), after a
// cursor from a previous page's Next, at most Limit (default 100).
type AuditOptions struct {
	Agent string
	After string
	Limit int
}

// Audit calls GET /v1/workspaces/{ws}/audit.
func (c *Client) Audit(ctx context.Context, ws string, opts AuditOptions) (*AuditPage, error) {
	q := url.Values{}
	if opts.Agent != "" {
		q.Set("agent", opts.Agent)
	}
	if opts.After != "" {
		q.Set("after", opts.After)
	}
	if opts.Limit > 0 {
		q.Set("limit", strconv.Itoa(opts.Limit))
	}
	p := c.wsPath(ws) + "/audit"
	if len(q) > 0 {
		p += "?" + q.Encode()
	}
	var out AuditPage
	return &out, c.do(ctx, http.MethodGet, p, nil, &out)
}
