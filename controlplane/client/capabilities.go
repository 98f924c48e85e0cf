package client

import (
	"context"
	"net/http"
	"time"

	"github.com/outposthq/outpost/wire"
)

// Capabilities is the body of GET {target}/capabilities: the facts of the
// agent serving the target, from the agent itself. Through a session it
// says which machine the session is on now.
type Capabilities struct {
	Workspace    string          `json:"workspace"`
	Agent        string          `json:"agent"`
	Instance     string          `json:"instance"`
	PID          int             `json:"pid"`
	Version      string          `json:"version"`
	Protocol     int             `json:"protocol"`
	OS           string          `json:"os"`
	Arch         string          `json:"arch"`
	Hostname     string          `json:"hostname"`
	Root         string          `json:"root"`
	GitVersion   string          `json:"gitVersion,omitempty"`
	Capabilities map[string]bool `json:"capabilities"`
	StartedAt    time.Time       `json:"startedAt"`
	// Policy summarizes the machine owner's policy file, when it has one.
	Policy *wire.PolicySummary `json:"policy,omitempty"`
}

// Capabilities calls GET {target}/capabilities, a read: through a session
// it is retried on the new backend when it races a swap.
func (t *Target) Capabilities(ctx context.Context) (*Capabilities, error) {
	var out Capabilities
	return &out, t.c.do(ctx, http.MethodGet, t.prefix+"/capabilities", nil, &out)
}
