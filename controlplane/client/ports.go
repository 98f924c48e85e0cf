package client

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/outposthq/outpost/wire"
)

// Link is a preview link (POST {target}/ports/{port}/links): a URL a
// browser opens without a bearer, reaching one port of one target until
// ExpiresAt or until it is deleted.
type Link struct {
	ID        string    `json:"id"`
	URL       string    `json:"url"`
	Port      int       `json:"port"`
	CreatedAt time.Time `json:"createdAt"`
	ExpiresAt time.Time `json:"expiresAt"`
}

// LinkList is the body of GET {target}/ports/{port}/links.
type LinkList struct {
	Links []Link `json:"links"`
}

// CreateLinkRequest is the body of POST {target}/ports/{port}/links; a
// zero TTLSeconds means the default (an hour).
type CreateLinkRequest struct {
	TTLSeconds int64 `json:"ttlSeconds,omitempty"`
}

func (t *Target) portPath(port int) string { return t.prefix + "/ports/" + strconv.Itoa(port) }

// Ports calls GET {target}/ports: the TCP listeners of the target's machine.
func (t *Target) Ports(ctx context.Context) ([]wire.Port, error) {
	var out wire.PortListResult
	return out.Ports, t.c.do(ctx, http.MethodGet, t.prefix+"/ports", nil, &out)
}

// PortURL is the reverse proxy's URL of port: {target}/ports/{port}/http/.
func (t *Target) PortURL(port int) string { return t.c.BaseURL + t.portPath(port) + "/http/" }

// PortStreamURL is the WebSocket URL of a raw TCP connection to port.
func (t *Target) PortStreamURL(port int) string { return t.c.BaseURL + t.portPath(port) + "/tcp" }

// CreateLink calls POST {target}/ports/{port}/links.
func (t *Target) CreateLink(ctx context.Context, port int, req CreateLinkRequest) (*Link, error) {
	var out Link
	return &out, t.c.do(ctx, http.MethodPost, t.portPath(port)+"/links", req, &out)
}

// Links calls GET {target}/ports/{port}/links: the live links of port.
func (t *Target) Links(ctx context.Context, port int) ([]Link, error) {
	var out LinkList
	return out.Links, t.c.do(ctx, http.MethodGet, t.portPath(port)+"/links", nil, &out)
}

// DeleteLink calls DELETE {target}/ports/{port}/links/{id}: the link
// stops working at once.
func (t *Target) DeleteLink(ctx context.Context, port int, id string) error {
	return t.c.do(ctx, http.MethodDelete, t.portPath(port)+"/links/"+id, nil, nil)
}
