package controlplane

import (
	"context"
	"strconv"

	"github.com/outposthq/outpost/wire"
)

// manifestFeed sends a carry's manifest on to the restore on dst page by
// page as the pages come in from the scan, so the two transfers overlap.
// Every page but the last only accumulates on the agent; the last (sent
// by finish, once the snapshot is known to fit its quota) makes it plan.
// Its goroutine ends on finish or stop.
type manifestFeed struct {
	s      *Server
	t      target
	h      string
	ctx    context.Context
	cancel context.CancelCauseFunc
	pages  chan []wire.SnapEntry
	done   chan struct{}
	sent   int   // entries sent, read after done
	err    error // the first failure, read after done
	closed bool  // pages closed (by the caller's goroutine)
}

func (s *Server) feedManifest(ctx context.Context, t target, h string) *manifestFeed {
	ctx, cancel := context.WithCancelCause(ctx)
	f := &manifestFeed{s: s, t: t, h: h, ctx: ctx, cancel: cancel, pages: make(chan []wire.SnapEntry, 16), done: make(chan struct{})}
	go f.run()
	return f
}

func (f *manifestFeed) run() {
	defer close(f.done)
	for page := range f.pages {
		if f.err != nil {
			continue
		}
		body := &wire.SnapRestoreManifestRequest{Handle: f.h, Entries: page}
		var plan wire.SnapRestorePlan
		if err := f.t.Call(f.ctx, wire.OpSnapRestoreManifest, body, &plan, snapCall(snapScanTimeout, f.h+"@m"+strconv.Itoa(f.sent))); err != nil {
			f.err = err
			continue
		}
		f.sent += len(page)
	}
}

// add queues a page (non-last) for the agent.
func (f *manifestFeed) add(page []wire.SnapEntry) {
	select {
	case f.pages <- page:
	case <-f.ctx.Done():
	}
}

// finish waits for the pages queued, sends the last (empty) page and
// returns the chunks the agent lacks of entries, the whole manifest;
// sizes holds the sizes by name of some of its chunks (the tally's).
func (f *manifestFeed) finish(entries []wire.SnapEntry, sizes map[[wire.SumSize]byte]uint32) ([]chunkRef, error) {
	f.closed = true
	close(f.pages)
	<-f.done
	if f.err != nil {
		return nil, f.err
	}
	if err := context.Cause(f.ctx); err != nil {
		return nil, err
	}
	if f.sent != len(entries) {
		return nil, wire.Errorf(wire.CodeInternal, "", "manifest feed: %d of %d entries sent", f.sent, len(entries))
	}
	return f.s.sendManifestFrom(f.ctx, f.t, f.h, entries, f.sent, sizes)
}

// stop ends the feed without finishing it (a failure elsewhere); after
// finish it does nothing.
func (f *manifestFeed) stop() {
	f.cancel(context.Canceled)
	if !f.closed {
		f.closed = true
		close(f.pages)
	}
	<-f.done
}
