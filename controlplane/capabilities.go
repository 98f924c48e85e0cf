package controlplane

import (
	"net/http"
	"time"

	"github.com/outposthq/outpost/controlplane/client"
	"github.com/outposthq/outpost/rpc"
	"github.com/outposthq/outpost/wire"
)

// capabilitiesTimeout bounds GET {target}/capabilities.
const capabilitiesTimeout = 10 * time.Second

// handleCapabilities asks the target's agent what it is: a read, cheap,
// and through a session the answer to "which machine am I on now".
func (s *Server) handleCapabilities(w http.ResponseWriter, r *http.Request, t target) error {
	var h wire.Hello
	if err := t.Call(r.Context(), wire.OpCapabilities, nil, &h, rpc.CallOptions{Timeout: capabilitiesTimeout}); err != nil {
		return err
	}
	caps := h.Capabilities
	if caps == nil {
		caps = map[string]bool{}
	}
	writeJSON(w, http.StatusOK, client.Capabilities{
		Workspace: h.Workspace, Agent: h.Agent, Instance: h.Instance, PID: h.PID,
		Version: h.Version, Protocol: h.Protocol, OS: h.OS, Arch: h.Arch, Hostname: h.Hostname,
		Root: h.Root, GitVersion: h.GitVersion, Capabilities: caps, StartedAt: h.StartedAt.UTC(), Policy: h.Policy,
	})
	return nil
}
