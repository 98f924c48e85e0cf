package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// AttachTicket is the result of POST {target}/processes/{id}/attach-tickets:
// a single-use ?ticket= for the attach WebSocket, for clients that cannot
// set the Authorization header.
type AttachTicket struct {
	Ticket    string    `json:"ticket"`
	ExpiresAt time.Time `json:"expiresAt"`
}

// AttachURL is the URL of process id's attach WebSocket, resuming after
// seq after (0: from the start). Open it with the Authorization header of
// AuthHeader, or with a ticket.
func (t *Target) AttachURL(id string, after uint64) string {
	u := t.c.BaseURL + t.prefix + "/processes/" + url.PathEscape(id) + "/attach"
	if after > 0 {
		u += "?after=" + strconv.FormatUint(after, 10)
	}
	return u
}

// AuthHeader is the header that authenticates a request of this client.
func (c *Client) AuthHeader() http.Header {
	h := http.Header{}
	if c.Token != "" {
		h.Set("Authorization", "Bearer "+c.Token)
	}
	return h
}

// HTTPClient is the *http.Client requests go through: HTTP, or when it is
// nil the package's shared default (see Client).
func (c *Client) HTTPClient() *http.Client {
	if c.HTTP != nil {
		return c.HTTP
	}
	return defaultHTTP()
}

// Client is the client the target's calls go through.
func (t *Target) Client() *Client { return t.c }

// CreateAttachTicket calls POST {target}/processes/{id}/attach-tickets.
func (t *Target) CreateAttachTicket(ctx context.Context, id string) (*AttachTicket, error) {
	var out AttachTicket
	return &out, t.c.do(ctx, http.MethodPost, t.prefix+"/processes/"+url.PathEscape(id)+"/attach-tickets", nil, &out)
}
