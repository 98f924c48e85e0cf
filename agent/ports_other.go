//go:build !linux

package agent

import (
	"context"

	"github.com/outposthq/outpost/wire"
)

// portsListable: listing listeners is Linux-only for now; pipes work
// everywhere.
const portsListable = false

func listPorts(context.Context) ([]wire.Port, error) {
	return nil, wire.Errorf(wire.CodeUnsupported, "", "this agent cannot list ports on its system; forwarding a known port works")
}
