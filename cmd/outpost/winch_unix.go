//go:build unix

package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/outposthq/outpost/controlplane/client"
	"golang.org/x/term"
)

// watchResize sends the local terminal's size to the remote PTY on every
// SIGWINCH until ctx ends.
func watchResize(ctx context.Context, t *client.Target, id string, fd int) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGWINCH)
	defer signal.Stop(ch)
	for {
		select {
		case <-ctx.Done():
			return
		case <-ch:
			if w, h, err := term.GetSize(fd); err == nil && w > 0 && h > 0 {
				cctx, cancel := context.WithTimeout(ctx, callTimeout)
				_ = t.Resize(cctx, id, w, h)
				cancel()
			}
		}
	}
}
