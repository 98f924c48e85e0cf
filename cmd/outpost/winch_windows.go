package main

import (
	"context"

	"github.com/outposthq/outpost/controlplane/client"
)

// watchResize does nothing: Windows has no SIGWINCH; the size is set at start.
func watchResize(context.Context, *client.Target, string, int) {}
