// The control plane's half of snapshots: wire/PROTOCOL.md, "Snapshots,
// step by step", describes both halves; agent/snapshotops.go is the other.

package controlplane

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/outposthq/outpost/controlplane/client"
	"github.com/outposthq/outpost/internal/cdc"
	"github.com/outposthq/outpost/rpc"
	"github.com/outposthq/outpost/wire"
)

// Snapshot transfer sizing and bounds.
const (
	// snapWindow is how many chunk batches are in flight at once.
	snapWindow = 6
	// snapScanTimeout bounds a scan or a restore's plan, which read (and
	// the first time hash) the whole tree.
	snapScanTimeout = 10 * time.Minute
	// snapStoreWorkers read chunks from the store at once for a restore.
	snapStoreWorkers = 16
	// snapStallWait is how long a chunk's publish waits for room when
	// the store has its most unacknowledged publishes outstanding (4000,
	// nats.go's default): a loaded machine's JetStream falls that far
	// behind a first carry, and nats.go's own 200 ms made the carry
	// fail with "stalled with too many outstanding async published
	// messages" (seen at load ~9).
	snapStallWait = time.Minute
)

// storeIngestQueue is nats-server's default bound on the bytes a
// stream's ingest queue holds (StreamMaxBufferedSize 0): the publishes
// past it are dropped (429, refusedBusy).
const storeIngestQueue = 128 << 20

// chunksInFlight bounds the chunk publishes awaiting the embedded
// store's acknowledgement on each of conns store connections, for an
// ingest queue of queue bytes (0: the default): as many of the largest
// chunks as fill seven eighths of it (the rest for settleRefused's
// publishes), 448 by default, shared out between the connections. A
// pull then waits for a slow store (snapStallWait) rather than have it
// drop its chunks; nats.go's default, 4000 (of 64 KiB on average, 256
// KiB at most), is twice the default queue and more.
func chunksInFlight(queue int64, conns int) int {
	if queue <= 0 {
		queue = storeIngestQueue
	}
	return max(1, int((queue-queue/8)/cdc.DefaultMax)/max(conns, 1))
}

// storeConns is how many in-process connections the chunks of the
// embedded store are published on, a pull batch's on one (chunkPublisher).
// nats.go writes a publish to its in-process pipe with the connection's
// lock held until the server has read it all, 64 KiB a read: on one
// connection the pull's batches waited for each other there (the first
// carry's execution trace: 3.9 s of 1.1 s × 6 pulls blocked in
// Conn.publish), not reading their bulk connections meanwhile.
const storeConns = 2

// chunkPublisher is the store publisher of the next pull batch: the
// store connections take turns.
func (s *Server) chunkPublisher() jetstream.JetStream {
	return s.snapPubs[int(s.snapNext.Add(1)-1)%len(s.snapPubs)]
}

// snapJS is the store publisher of chunk publishes outside pull batches
// (settleRefused's): the first store connection's.
func (s *Server) snapJS() jetstream.JetStream { return s.snapPubs[0] }

// Snapshot kinds.
const (
	snapManual   = "manual"
	snapPeriodic = "periodic"
	snapCarry    = "carry"
)

// snapCall is the options of one snapshot call; key names a mutation.
func snapCall(timeout time.Duration, key string) rpc.CallOptions {
	return rpc.CallOptions{Timeout: timeout, IdempotencyKey: key}
}

// batchBytes is the most chunk content one message carries: a quarter of
// the connection's max payload, at most defaultChunk (as file transfers).
func (s *Server) batchBytes() int {
	n := defaultChunk
	if mp := s.nc.MaxPayload(); mp > 0 {
		n = min(n, int(mp/4))
	}
	return max(n, wire.MaxSnapChunk)
}

// newSnapshotID makes a sortable, unique snapshot id.
func newSnapshotID(now time.Time) string {
	return "sn" + strconv.FormatInt(now.UnixMilli(), 36) + "-" + strings.ToLower(rand.Text()[:8])
}

// snapshotSpec is what to snapshot and why.
type snapshotSpec struct {
	ws, agent, session, backend, kind string
	req                               client.CreateSnapshotRequest
}

// takeSnapshot scans the tree on t, sends the chunks the store lacks to
// it, and records the snapshot. Nothing is recorded on a failure; chunks
// already stored stay for the next snapshot (or the next collection).
func (s *Server) takeSnapshot(ctx context.Context, t target, sp snapshotSpec) (*client.Snapshot, error) {
	sn, _, err := s.snapshotOnto(ctx, t, sp, nil)
	return sn, err
}

// snapshotOnto is takeSnapshot that, with dst set, also restores the
// snapshot onto dst's root (with delete) in the same pass, as a carry
// does: dst gets the manifest first and says which chunks it lacks; the
// chunks pulled from t go to the store and, when dst lacks them, straight
// on to dst; what dst still lacks afterwards (content the store had) is
// read from the store. The restore is committed while the snapshot is
// recorded, and the carry succeeds only when both did.
//
// What is sequential is only what must be: dst's restore begins (and
// lists what dst has) while t scans; the store's chunks and usage are
// looked up meanwhile; each manifest page goes on to dst and is tallied
// against the store as it comes; the restore plans once the snapshot is
// known to fit its quota (planning makes directories).
func (s *Server) snapshotOnto(ctx context.Context, t target, sp snapshotSpec, dst target) (_ *client.Snapshot, _ *client.RestoreResult, err error) {
	defer func() { err = restoreLost(err) }()
	ph := phases{start: time.Now()}
	// From here until the snapshot is recorded (and restored), no
	// collection on any replica frees the chunks it counts on.
	use, err := s.snaps.use(ctx, sp.ws)
	if err != nil {
		return nil, nil, err
	}
	defer use.release()
	// Which chunks the store holds is looked up while the agent scans:
	// those of the session's last snapshot when it is still recorded
	// (snapprev.go), else the store's whole list; so is the usage.
	looked := make(chan chunkLookup, 1)
	go func() {
		l := s.lookupChunks(ctx, sp)
		if l.err == nil {
			l.used, _, l.err = s.snaps.usage(ctx, sp.ws)
		}
		looked <- l
	}()
	pages, tallyDone := tallyPages(looked)
	tallyOpen := true
	defer func() {
		if tallyOpen {
			close(pages)
			<-tallyDone // the lookup and the tally end with this call
		}
	}()
	// A carry's restore begins at the same time as the scan: dst lists
	// what it has while t scans. It is aborted unless it is committed.
	var dstHandle string
	var fw *forwarder
	var begun chan error
	if dst != nil {
		begun = make(chan error, 1)
		go func() {
			h, err := s.beginRestore(ctx, dst, client.RestoreSnapshotRequest{Delete: true})
			dstHandle = h
			begun <- err
		}()
		defer func() {
			if begun != nil {
				<-begun
			}
			if dstHandle != "" && (fw == nil || !fw.committed) {
				s.newRelay(dst).cleanup(ctx, wire.OpSnapRestoreAbort, dstHandle)
			}
		}()
	}
	var scan wire.SnapScanResult
	err = t.Call(ctx, wire.OpSnapScan, &wire.SnapScanRequest{Path: sp.req.Path, Exclude: sp.req.Exclude, Gitignore: sp.req.Gitignore}, &scan, snapCall(snapScanTimeout, ""))
	if err != nil {
		return nil, nil, err
	}
	defer s.newRelay(t).cleanup(ctx, wire.OpSnapClose, scan.Handle)
	ph.scanned = time.Now()
	// A carry's manifest goes on to dst page by page as it comes in.
	var feed *manifestFeed
	// planCtx is the feed's and the plan's: a failed pull cuts the plan
	// short.
	planCtx, cancelPlan := context.WithCancel(ctx)
	defer cancelPlan()
	if dst != nil {
		err, begun = <-begun, nil
		if err != nil {
			return nil, nil, err
		}
		feed = s.feedManifest(planCtx, dst, dstHandle)
		defer feed.stop()
	}
	entries, err := s.readManifest(ctx, t, scan, func(page []wire.SnapEntry) {
		pages <- page
		if feed != nil {
			feed.add(page)
		}
	})
	if err != nil {
		return nil, nil, err
	}
	ph.manifest = time.Now()
	close(pages)
	tallyOpen = false
	td := <-tallyDone
	l := td.lookup
	if l.err != nil {
		return nil, nil, l.err
	}
	if s.afterChunkLookup != nil {
		s.afterChunkLookup()
	}
	// newBytes is at most what the snapshot adds to the store: with the
	// previous snapshot's chunks only, some of lack may be stored already.
	lack, newBytes, used := td.tally.lack, td.tally.newBytes, l.used
	if used+newBytes > s.snaps.quota && l.partial {
		// Over the limit by that bound: the store's whole list says
		// what it really lacks.
		if l = s.listChunks(ctx, sp.ws); l.err != nil {
			return nil, nil, l.err
		}
		lack, newBytes = lacking(entries, l.has)
	}
	if used+newBytes > s.snaps.quota {
		return nil, nil, wire.Errorf(wire.CodeInsufficientStorage, wire.ReasonSnapshotQuota,
			"the snapshot would add %d bytes to the %d workspace %s holds, over its limit of %d; delete snapshots to free space", newBytes, used, sp.ws, s.snaps.quota)
	}
	ph.tallied = time.Now()
	// A carry's restore plans (dst compares the manifest with what it
	// has) while the chunks are pulled from t; a chunk read before the
	// plan is in waits for it (snapWindow batches at most), then goes on
	// to dst if dst lacks it, and into the store (pullBatch).
	pullCtx, stopPull := context.WithCancelCause(ctx)
	defer stopPull(nil)
	var plan *carryPlan
	var take func(chunkRef, []byte, *pullLease) error
	if dst != nil {
		plan = s.startPlan(ctx, planCtx, dst, sp.ws, feed, dstHandle, entries, td.tally.sizes, stopPull)
		take = func(r chunkRef, data []byte, lease *pullLease) error {
			if err := plan.await(pullCtx); err != nil {
				return err
			}
			return plan.fw.take(r, data, lease)
		}
	}
	// The bytes stored are the new bytes: a chunk another snapshot
	// stored meanwhile, or one the lookup did not know of, is not.
	newBytes, err = s.pullChunks(pullCtx, t, sp.ws, scan.Handle, lack, take)
	if plan != nil {
		if err != nil {
			cancelPlan()
		}
		perr := plan.await(context.Background())
		dstHandle, fw = plan.handle, plan.fw
		if err == nil {
			err = perr
		}
	}
	if err != nil {
		fw.stop()
		return nil, nil, err
	}
	now := time.Now().UTC()
	ph.chunks = now
	if plan != nil {
		ph.planned = plan.at
	}
	// The restore's last chunks are delivered, and the restore is
	// committed, while the snapshot is recorded: every chunk it names is
	// in the store by now, and the carry fails (the pointer stays) unless
	// both are done.
	restored := make(chan restoreOutcome, 1)
	if fw != nil {
		go func() {
			var o restoreOutcome
			if o.err = fw.deliver(sp.ws); o.err == nil {
				o.delivered = time.Now()
				o.res, o.err = fw.commit(ctx)
			}
			restored <- o
		}()
	}
	fail := func(err error) (*client.Snapshot, *client.RestoreResult, error) {
		if fw != nil {
			fw.stop()
			<-restored
		}
		return nil, nil, err
	}
	sn := &client.Snapshot{ID: newSnapshotID(now), CreatedAt: now, Source: client.SnapshotSource{Agent: sp.agent, Path: cleanSnapPath(sp.req.Path)},
		Files: scan.Files, Bytes: scan.Bytes, NewBytes: newBytes, Session: sp.session, Backend: sp.backend, Kind: sp.kind}
	if s.beforeSnapRecord != nil {
		if err := s.beforeSnapRecord(); err != nil {
			return fail(err)
		}
	}
	if err := s.snaps.putManifest(ctx, sp.ws, sn.ID, entries); err != nil {
		return fail(err)
	}
	if err := use.held(); err != nil {
		return fail(err)
	}
	if err := s.snaps.setUsage(ctx, sp.ws, func(n int64) int64 { return n + newBytes }); err != nil {
		return fail(err)
	}
	if err := s.snaps.put(ctx, sp.ws, sn); err != nil {
		return fail(err)
	}
	ph.recorded = time.Now()
	// The session's next snapshot counts on this one's chunks; they
	// are remembered once the restore no longer waits.
	defer s.prevChunks.put(sp.ws, sp.session, sn.ID, entries)
	if fw == nil {
		s.log.Debug("snapshot phases", ph.attrs(sp.ws, newBytes)...)
		return sn, nil, nil
	}
	o := <-restored
	ph.delivered, ph.committed = o.delivered, time.Now()
	s.log.Debug("snapshot phases", ph.attrs(sp.ws, newBytes)...)
	if o.err != nil {
		return nil, nil, o.err
	}
	return sn, o.res, nil
}

// restoreOutcome is how a carry's restore ended.
type restoreOutcome struct {
	res       *client.RestoreResult
	err       error
	delivered time.Time
}

// carryPlan is a carry's restore planning on dst (startPlan) while the
// chunks are pulled.
type carryPlan struct {
	done   chan struct{}
	handle string     // the restore's handle (begun again, or none)
	fw     *forwarder // the forwarder of the planned restore
	err    error
	at     time.Time // when it ended
}

// startPlan sends the last manifest page to the restore begun on dst
// (handle h, fed the rest by feed) in a goroutine of its own, which ends
// with planCtx; a failed plan stops the pull (stopPull). Await its
// outcome before returning.
func (s *Server) startPlan(ctx, planCtx context.Context, dst target, ws string, feed *manifestFeed, h string, entries []wire.SnapEntry,
	sizes map[[wire.SumSize]byte]uint32, stopPull context.CancelCauseFunc) *carryPlan {
	p := &carryPlan{done: make(chan struct{}), handle: h}
	go func() {
		defer close(p.done)
		defer func() { p.at = time.Now() }()
		refs, err := feed.finish(entries, sizes)
		if errors.Is(err, wire.ErrNotFound) || errors.Is(err, wire.ErrUnavailable) {
			// The restore begun before the scan ended meanwhile (idle
			// for longer than the agent keeps a handle, or the agent
			// restarted or is away): it begins again, once; an agent
			// still away fails it as before. The first handle is
			// aborted first: unavailable may have been a call that
			// timed out while the handle lived on.
			s.newRelay(dst).cleanup(ctx, wire.OpSnapRestoreAbort, p.handle)
			p.handle = ""
			var h string
			if h, refs, err = s.planRestore(planCtx, dst, entries, client.RestoreSnapshotRequest{Delete: true}); err == nil {
				p.handle = h
			}
		}
		if err != nil {
			p.err = err
			stopPull(err)
			return
		}
		p.fw = s.newForwarder(ctx, dst, ws, p.handle, refs)
	}()
	return p
}

// await waits for the plan (or for ctx) and says how it ended.
func (p *carryPlan) await(ctx context.Context) error {
	select {
	case <-p.done:
		return p.err
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// phases are when a snapshot's steps ended, for the debug log (-cp-log in
// the bench): where a carry's wall time goes.
type phases struct {
	start, scanned, manifest, tallied, planned, chunks, recorded, delivered, committed time.Time
}

func (p *phases) attrs(ws string, newBytes int64) []any {
	out := []any{"ws", ws, "newBytes", newBytes}
	// Each step is timed from the end of the one it waited for: the
	// plan and the pull run at once, and so do the record and the
	// restore's delivery and commit.
	for _, ph := range []struct {
		name     string
		from, at time.Time
	}{{"scan", p.start, p.scanned}, {"manifest", p.scanned, p.manifest}, {"lookup", p.manifest, p.tallied},
		{"plan", p.tallied, p.planned}, {"chunks", p.tallied, p.chunks}, {"record", p.chunks, p.recorded},
		{"deliver", p.chunks, p.delivered}, {"commit", p.delivered, p.committed}} {
		if !ph.at.IsZero() && !ph.from.IsZero() {
			out = append(out, ph.name, ph.at.Sub(ph.from).Round(100*time.Microsecond))
		}
	}
	return append(out, "total", time.Since(p.start).Round(100*time.Microsecond))
}

// cleanSnapPath is a snapshot's directory as the API shows it.
func cleanSnapPath(p string) string {
	p = strings.Trim(p, "/")
	if p == "" {
		return "."
	}
	return p
}

// manifestWindow is how many manifest pages are asked for at once when
// the agent says where they begin (SnapScanResult.Pages).
const manifestWindow = 4

// readManifest pages the scan's manifest in; onPage gets each page in
// order. When the scan says where its pages begin, up to manifestWindow
// are asked for at once: the agent encodes one while the control plane
// decodes another, instead of a round trip per page one after the other.
func (s *Server) readManifest(ctx context.Context, t target, scan wire.SnapScanResult, onPage func([]wire.SnapEntry)) ([]wire.SnapEntry, error) {
	if scan.Entries < 0 {
		return nil, wire.Errorf(wire.CodeInternal, wire.ReasonBadReply, "a scan of %d entries", scan.Entries)
	}
	if starts := pageStarts(scan); len(starts) > 1 {
		return s.readManifestPages(ctx, t, scan, starts, onPage)
	}
	entries := make([]wire.SnapEntry, 0, manifestCap(scan))
	for len(entries) < scan.Entries {
		var page wire.SnapManifestPage
		if err := t.Call(ctx, wire.OpSnapManifest, &wire.SnapPageRequest{Handle: scan.Handle, Offset: len(entries)}, &page, fileCall()); err != nil {
			return nil, err
		}
		if err := page.Validate(); err != nil {
			return nil, wire.Errorf(wire.CodeInternal, wire.ReasonBadReply, "manifest page: %v", err)
		}
		if len(page.Entries) == 0 || page.Next != len(entries)+len(page.Entries) {
			return nil, wire.Errorf(wire.CodeInternal, wire.ReasonBadReply, "manifest page at %d: %d entries, next %d", len(entries), len(page.Entries), page.Next)
		}
		entries = append(entries, page.Entries...)
		if onPage != nil {
			onPage(page.Entries)
		}
	}
	return entries, nil
}

// manifestCap is the room made ahead for scan's entries: the agent's
// count, but no more than a page's worth (a hostile agent's count sizes
// nothing; its real pages do).
func manifestCap(scan wire.SnapScanResult) int {
	return min(max(scan.Entries, 0), wire.MaxSnapEntries)
}

// pageStarts is where each page of scan's manifest begins (0 first), when
// the agent said so in a usable way, else nil.
func pageStarts(scan wire.SnapScanResult) []int {
	if len(scan.Pages) == 0 {
		return nil
	}
	starts := make([]int, 0, len(scan.Pages)+1)
	starts = append(starts, 0)
	for _, p := range scan.Pages {
		if p <= starts[len(starts)-1] || p >= scan.Entries {
			return nil
		}
		starts = append(starts, p)
	}
	return starts
}

// readManifestPages is readManifest asking for the pages beginning at
// starts, manifestWindow at a time; a page read waits to be taken in
// order, so at most that many are held. Its goroutines end before it
// returns.
func (s *Server) readManifestPages(ctx context.Context, t target, scan wire.SnapScanResult, starts []int, onPage func([]wire.SnapEntry)) ([]wire.SnapEntry, error) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
	}()
	type got struct {
		page wire.SnapManifestPage
		err  error
	}
	// Page i's reply goes in res[i%manifestWindow]: it is asked for
	// only once page i-manifestWindow was taken (window), so a slot is
	// empty when its next page comes. What is held is the window's, not
	// a slot per page the agent says it has.
	res := make([]chan got, manifestWindow)
	for i := range res {
		res[i] = make(chan got, 1)
	}
	window := make(chan struct{}, manifestWindow)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i, off := range starts {
			select {
			case window <- struct{}{}:
			case <-ctx.Done():
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				var g got
				g.err = t.Concurrent().Call(ctx, wire.OpSnapManifest, &wire.SnapPageRequest{Handle: scan.Handle, Offset: off}, &g.page, fileCall())
				res[i%manifestWindow] <- g
			}()
		}
	}()
	entries := make([]wire.SnapEntry, 0, manifestCap(scan))
	for i, off := range starts {
		end := scan.Entries
		if i+1 < len(starts) {
			end = starts[i+1]
		}
		var g got
		select {
		case g = <-res[i%manifestWindow]:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		<-window
		if g.err != nil {
			return nil, g.err
		}
		if err := g.page.Validate(); err != nil {
			return nil, wire.Errorf(wire.CodeInternal, wire.ReasonBadReply, "manifest page: %v", err)
		}
		if len(g.page.Entries) != end-off || g.page.Next != end {
			return nil, wire.Errorf(wire.CodeInternal, wire.ReasonBadReply, "manifest page at %d: %d entries, next %d, not up to %d", off, len(g.page.Entries), g.page.Next, end)
		}
		entries = append(entries, g.page.Entries...)
		if onPage != nil {
			onPage(g.page.Entries)
		}
	}
	return entries, nil
}

// chunkRef is a chunk by name and size.
type chunkRef struct {
	sum  []byte
	size uint32
}

// lacking lists the manifest's chunks has says the store lacks, each
// once, in order, and their bytes.
func lacking(entries []wire.SnapEntry, has func(sum []byte) bool) ([]chunkRef, int64) {
	var t chunkTally
	t.add(entries, has)
	return t.lack, t.newBytes
}

// chunkTally is lacking taken page by page as a manifest comes in: the
// chunks has says the store lacks, each once, in order (lack), their
// bytes, and their sizes by name (sizes, which sizedRefs looks in first).
// A chunk the store has is only looked up: an incremental carry's
// manifest names tens of thousands, and the tally of its last pages is on
// the carry's critical path.
type chunkTally struct {
	sizes    map[[wire.SumSize]byte]uint32
	lack     []chunkRef
	newBytes int64
}

// add tallies the chunks of entries, the manifest's next ones.
func (t *chunkTally) add(entries []wire.SnapEntry, has func(sum []byte) bool) {
	if t.sizes == nil {
		t.sizes = map[[wire.SumSize]byte]uint32{}
	}
	for _, e := range entries {
		for i, size := range e.Sizes {
			sum := e.Sums[i*wire.SumSize : (i+1)*wire.SumSize]
			if has(sum) {
				continue
			}
			k := [wire.SumSize]byte(sum)
			if _, seen := t.sizes[k]; seen {
				continue
			}
			t.sizes[k] = size
			t.lack = append(t.lack, chunkRef{sum: sum, size: size})
			t.newBytes += int64(size)
		}
	}
}

// tallyPages tallies the pages sent on the channel it returns against
// the lookup it waits for (pages that come before it are held, so the
// manifest never waits for the lookup); the tally comes on done after the
// channel is closed and the lookup is in. Its goroutine ends then: the
// caller closes the channel and reads done before it returns.
func tallyPages(looked <-chan chunkLookup) (chan<- []wire.SnapEntry, <-chan tallied) {
	pages := make(chan []wire.SnapEntry, 16)
	done := make(chan tallied, 1)
	go func() {
		var out tallied
		var held [][]wire.SnapEntry
		in, lookedIn := pages, false
		for in != nil || !lookedIn {
			select {
			case page, ok := <-in:
				switch {
				case !ok:
					in = nil
				case !lookedIn:
					held = append(held, page)
				case out.lookup.err == nil:
					out.tally.add(page, out.lookup.has)
				}
			case out.lookup = <-looked:
				lookedIn, looked = true, nil
				for _, page := range held {
					if out.lookup.err == nil {
						out.tally.add(page, out.lookup.has)
					}
				}
				held = nil
			}
		}
		done <- out
	}()
	return pages, done
}

// tallied is a lookup and the tally of a manifest against it.
type tallied struct {
	lookup chunkLookup
	tally  chunkTally
}

// chunkLookup is what a snapshot knows of the chunks the store holds:
// has says whether it holds one; partial, that has knows only some of
// those it holds (the session's last snapshot's).
type chunkLookup struct {
	has     func(sum []byte) bool
	partial bool
	err     error
	used    int64 // the workspace's usage, read with the lookup
}

// lookupChunks looks up which chunks the store holds for snapshot sp,
// with the workspace's use lease held: the chunks of the session's last
// snapshot, when this replica remembers it and its record still exists
// (then the lease keeps every chunk it names), else the store's list.
func (s *Server) lookupChunks(ctx context.Context, sp snapshotSpec) chunkLookup {
	if prev := s.prevChunks.get(sp.ws, sp.session); prev != nil {
		if _, err := s.snaps.get(ctx, sp.ws, prev.id); err == nil {
			return chunkLookup{partial: true, has: func(sum []byte) bool {
				_, ok := prev.sums[string(sum)]
				return ok
			}}
		}
	}
	return s.listChunks(ctx, sp.ws)
}

// listChunks is the store's whole list of the workspace's chunks.
func (s *Server) listChunks(ctx context.Context, ws string) chunkLookup {
	s.chunkListings.Add(1)
	have, err := s.snaps.have(ctx, ws)
	if err != nil {
		return chunkLookup{err: err}
	}
	return chunkLookup{has: func(sum []byte) bool { return have[hex.EncodeToString(sum)] }}
}

// batches groups chunks into runs of at most limit bytes (and
// wire.MaxSnapSums names).
func batches(refs []chunkRef, limit int) [][]chunkRef {
	var out [][]chunkRef
	start, size := 0, 0
	for i, r := range refs {
		if i > start && (size+int(r.size) > limit || i-start >= wire.MaxSnapSums) {
			out = append(out, refs[start:i])
			start, size = i, 0
		}
		size += int(r.size)
	}
	if start < len(refs) {
		out = append(out, refs[start:])
	}
	return out
}

// snapBulkBatch is the content of one batch pulled on a bulk connection:
// larger than over NATS (a connection a batch, no reply to fit).
const snapBulkBatch = 8 << 20

// snapBulk says whether chunks refs move on bulk connections, a batch
// each (pulled from a scan, forwarded to a restore): when they come to
// bulkMin or more, unless tests turned it off (snapNoBulk).
func (s *Server) snapBulk(refs []chunkRef) bool {
	if s.snapNoBulk {
		return false
	}
	var total int64
	for _, r := range refs {
		total += int64(r.size)
	}
	return total >= bulkMin
}

// pullChunks reads the chunks from the scan on t, snapWindow batches at a
// time, checks each against its name and stores it unless the store has
// it already; it returns the bytes stored. When they come to bulkMin or
// more, the batches come on bulk connections (a batch each: fs.snap.read
// with a ticket), outside the NATS server; NATS carries them when the
// agent cannot make one (and, after the first bulk batch that failed, the
// rest of the pull). The store's acknowledgements of a batch are awaited
// (settled) while the next ones are pulled, by one goroutine, in order;
// a bulk batch's buffer is read into again once they all came (the
// pull's freeBufs).
func (s *Server) pullChunks(ctx context.Context, t target, ws, handle string, refs []chunkRef, onChunk func(chunkRef, []byte, *pullLease) error) (int64, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	sem := make(chan struct{}, snapWindow)
	var wg sync.WaitGroup
	limit := s.batchBytes()
	var bulk *atomic.Bool
	if s.snapBulk(refs) {
		bulk = new(atomic.Bool)
		bulk.Store(true)
		limit = snapBulkBatch
	}
	bs := batches(refs, limit)
	bufs := &freeBufs{size: snapBulkBatch}
	// Room for every batch: a puller never waits for the settler.
	pulled := make(chan pulledBatch, len(bs))
	settled := make(chan int64, 1)
	go func() {
		var stored int64
		failed := false
		for p := range pulled {
			if failed {
				continue // its buffer is dropped: publishes may hold it
			}
			n, err := s.settleBatch(ctx, p, bufs)
			if err != nil {
				cancel(err)
				failed = true
			}
			stored += n
		}
		settled <- stored
	}()
	for _, b := range bs {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			p, err := s.pullBatch(ctx, t, ws, handle, b, onChunk, bulk, bufs)
			if err != nil {
				cancel(err)
				return
			}
			pulled <- p
		}()
	}
	wg.Wait()
	close(pulled)
	stored := <-settled
	if err := context.Cause(ctx); err != nil {
		return 0, err
	}
	return stored, nil
}

// pulledBatch is a batch pulled and published: its chunks' publishes and,
// when it came on a bulk connection, the lease of the buffer the chunks
// were read into (which the publishes hold until they are acknowledged).
type pulledBatch struct {
	acks  []chunkAck
	lease *pullLease
}

// pullLease counts who holds a pull's bulk buffer: the pull until its
// batch is settled, and each forward batch with a chunk in it (a carry
// forwards the chunks from the buffer they were read into, not a copy:
// forwarder.take). The buffer goes back to its freeBufs, to be read into
// again, when the last lets go, and only if none said it must not (a
// publish from it failed: nats.go or settleRefused may publish from it
// again). Its methods are safe for concurrent use; a nil *pullLease
// holds nothing.
type pullLease struct {
	bufs *freeBufs
	buf  *[]byte
	mu   sync.Mutex
	n    int
	keep bool // never read into again
}

// newPullLease is buf's lease (from bufs), held once: by the pull.
func newPullLease(bufs *freeBufs, buf *[]byte) *pullLease {
	return &pullLease{bufs: bufs, buf: buf, n: 1}
}

// hold adds a holder.
func (l *pullLease) hold() {
	if l == nil {
		return
	}
	l.mu.Lock()
	l.n++
	l.mu.Unlock()
}

// release lets go of one hold; reuse false says the buffer must never be
// read into again.
func (l *pullLease) release(reuse bool) {
	if l == nil {
		return
	}
	l.mu.Lock()
	l.n--
	l.keep = l.keep || !reuse
	free := l.n == 0 && !l.keep
	l.mu.Unlock()
	if free {
		l.bufs.put(l.buf)
	}
}

// settleBatch waits for the store's acknowledgement of each chunk of p
// and returns the bytes stored (settleRefused for a refused one). p's
// buffer goes back to bufs only when every publish was acknowledged:
// one that failed (or timed out) may still be published again from it
// by nats.go (no responders) or by settleRefused, and a buffer read into
// again meanwhile would put a chunk in the store that is not its name.
func (s *Server) settleBatch(ctx context.Context, p pulledBatch, bufs *freeBufs) (int64, error) {
	var stored int64
	clean := true
	for _, a := range p.acks {
		select {
		case <-a.f.Ok():
			stored += int64(a.size)
		case err := <-a.f.Err():
			clean = false
			n, err := s.settleRefused(ctx, a, err)
			if err != nil {
				return stored, err
			}
			stored += n
		case <-ctx.Done():
			return stored, stateErr("store chunk", ctx.Err())
		}
	}
	p.lease.release(clean)
	return stored, nil
}

// freeBufs are buffers of one size that one transfer (a pull, a
// forwarder) fills again and again: it holds them until it ends. Not a
// sync.Pool: each collection empties one (a first carry of 1 GiB runs
// dozens), and the runtime hands what it frees back to the kernel, which
// faults in and zeroes every page of a new buffer again: a fresh 8 MiB
// buffer a batch cost a few percent of a first carry's CPU. Its methods
// are safe for concurrent use; a nil *freeBufs keeps no buffer.
type freeBufs struct {
	size int
	mu   sync.Mutex
	free []*[]byte
}

// get is a buffer of at least n bytes: of size bytes, a free one when
// there is one, unless n is larger.
func (l *freeBufs) get(n int) *[]byte {
	if l != nil && n <= l.size {
		l.mu.Lock()
		if k := len(l.free); k > 0 {
			b := l.free[k-1]
			l.free = l.free[:k-1]
			l.mu.Unlock()
			return b
		}
		l.mu.Unlock()
		n = l.size
	}
	b := make([]byte, n)
	return &b
}

// put gives back b, which nothing reads or writes any more.
func (l *freeBufs) put(b *[]byte) {
	if l == nil || len(*b) != l.size {
		return
	}
	l.mu.Lock()
	l.free = append(l.free, b)
	l.mu.Unlock()
}

// chunkRetries bounds the publishes of a chunk refused because another
// publish of it is in flight; chunkRetryWait is the pause before each.
const (
	chunkRetries   = 20
	chunkRetryWait = 50 * time.Millisecond
)

// settleRefused settles a chunk whose publish a's was refused with err:
// it returns the bytes stored, 0 when the store held the chunk already
// (chunkRefusal), or the error. A refusal because another publish of the
// chunk is in flight is published again, expecting no message still,
// until that one settles: counted on, a publish that then failed would
// leave the snapshot naming a chunk the store lacks. One the store
// dropped because its ingest queue was full is published again too: at
// once the first time (the queue has most likely drained by the time the
// publishes before it are settled), after chunkRetryWait when dropped
// again.
func (s *Server) settleRefused(ctx context.Context, a chunkAck, err error) (int64, error) {
	for i := range chunkRetries {
		why := chunkRefusal(err)
		switch why {
		case refusedStored:
			return 0, nil
		case refusedBusy:
			s.chunkDrops.Add(1)
		case refusedInFlight:
		default:
			return 0, stateErr("store chunk", err)
		}
		if why == refusedInFlight || i > 0 {
			select {
			case <-ctx.Done():
				return 0, stateErr("store chunk", ctx.Err())
			case <-time.After(chunkRetryWait):
			}
		}
		m := a.f.Msg()
		if _, err = s.snapJS().Publish(ctx, m.Subject, m.Data, jetstream.WithExpectLastSequencePerSubject(0)); err == nil {
			return int64(a.size), nil
		}
	}
	return 0, stateErr("store chunk", err)
}

// chunkAck is a chunk's publish, and its size.
type chunkAck struct {
	f    jetstream.PubAckFuture
	size uint32
}

// pullBatch reads one batch and publishes its chunks, each only if the
// stream has no message for it (chunkRefusal). With bulk set (and true),
// it reads the batch on a bulk connection (pullBulk); the chunks that did
// not come on it, when it failed, come over NATS in batches of at most
// batchBytes, and bulk is set false for the rest of the pull.
func (s *Server) pullBatch(ctx context.Context, t target, ws, handle string, b []chunkRef, onChunk func(chunkRef, []byte, *pullLease) error, bulk *atomic.Bool, bufs *freeBufs) (pulledBatch, error) {
	var acks []chunkAck
	var held *pullLease
	js := s.chunkPublisher()
	// store checks, forwards and publishes chunk r, data; lease is its
	// bulk buffer's (nil: data is a NATS reply's, read into nothing else).
	store := func(r chunkRef, data []byte, lease *pullLease) error {
		if sum := sha256.Sum256(data); string(sum[:]) != string(r.sum) {
			return wire.Errorf(wire.CodeConflict, wire.ReasonSourceChanged, "a chunk's content is not its name (%x): the tree changed during the snapshot; take it again", r.sum[:8])
		}
		// onChunk first: a carry's forwarder waits there for the
		// restore's plan, and a chunk stored before a plan that then
		// failed would be in the store uncounted (and the next
		// snapshot, finding it there, would not count it either).
		if onChunk != nil {
			if err := onChunk(r, data, lease); err != nil {
				return err
			}
		}
		f, err := js.PublishAsync(chunkSubject(ws, r.sum), data, jetstream.WithStallWait(snapStallWait),
			jetstream.WithExpectLastSequencePerSubject(0))
		if err != nil {
			return stateErr("store chunk", err)
		}
		acks = append(acks, chunkAck{f: f, size: r.size})
		return nil
	}
	if bulk != nil && bulk.Load() {
		var n int
		var fallback bool
		var err error
		n, held, fallback, err = s.pullBulk(ctx, t, ws, handle, b, store, bufs)
		switch {
		case !fallback && err != nil:
			return pulledBatch{}, err
		case !fallback:
			b = nil // every chunk came on the connection
		case ctx.Err() != nil:
			return pulledBatch{}, context.Cause(ctx)
		default:
			bulk.Store(false)
			s.snapBulkFallbacks.Add(1)
			s.log.Debug("snapshot pull: over NATS from here", "ws", ws, "err", err)
			b = b[n:]
		}
	}
	for _, sub := range batches(b, s.batchBytes()) {
		req := &wire.SnapReadRequest{Handle: handle, Sums: make([]byte, 0, len(sub)*wire.SumSize)}
		for _, r := range sub {
			req.Sums = append(req.Sums, r.sum...)
		}
		var res wire.SnapReadResult
		if err := t.Concurrent().Call(ctx, wire.OpSnapRead, req, &res, fileCall()); err != nil {
			return pulledBatch{}, err
		}
		off := 0
		for _, r := range sub {
			end := off + int(r.size)
			if end > len(res.Data) {
				return pulledBatch{}, wire.Errorf(wire.CodeInternal, wire.ReasonBadReply, "snap.read returned %d bytes, fewer than asked", len(res.Data))
			}
			if err := store(r, res.Data[off:end], nil); err != nil {
				return pulledBatch{}, err
			}
			off = end
		}
	}
	if s.afterChunkBatch != nil {
		s.afterChunkBatch()
	}
	// held is the lease of the buffer the chunks that came on a bulk
	// connection were read into (all of them, or those before it
	// broke): their publishes are settled with the rest.
	return pulledBatch{acks: acks, lease: held}, nil
}

// pullBulk reads the chunks b of the scan handle on t on a bulk connection
// (fs.snap.read with a ticket) and hands each to store as it comes, in
// order. It returns how many it handed, and the lease of the buffer they
// were read into (from bufs; settleBatch lets go of it), if any; fallback says
// the rest may come over NATS: the connection never came or broke, and
// the agent did not answer with an error of its own. A chunk store
// refuses (one not its name, from a hostile agent too) is store's error,
// with no fallback.
func (s *Server) pullBulk(ctx context.Context, t target, ws, handle string, b []chunkRef, store func(chunkRef, []byte, *pullLease) error, bufs *freeBufs) (n int, held *pullLease, fallback bool, err error) {
	ticket, wait, withdraw, err := s.bulkTicket(ctx, ws, t)
	if err != nil {
		return 0, nil, true, err
	}
	defer withdraw()
	req := &wire.SnapReadRequest{Handle: handle, Sums: make([]byte, 0, len(b)*wire.SumSize), Ticket: ticket}
	total := 0
	for _, r := range b {
		req.Sums = append(req.Sums, r.sum...)
		total += int(r.size)
	}
	callCtx, stopCall := context.WithCancel(ctx)
	defer stopCall()
	reply := make(chan error, 1)
	go func() {
		var res wire.SnapReadResult
		reply <- t.Concurrent().Call(callCtx, wire.OpSnapRead, req, &res, fileCall())
	}()
	var conn net.Conn
	select {
	case conn = <-wait.conn:
	case err := <-reply:
		if err != nil {
			// Its own error (the file changed, say) is the pull's: a
			// read over NATS would answer it again.
			return 0, nil, !bulkOwn(err), err
		}
		// It answered before its connection came (it closed it
		// first): the connection is on its way.
		if conn, err = arrived(ctx, wait.conn); err != nil {
			return 0, nil, true, err
		}
		reply <- nil
	case <-ctx.Done():
		stopCall()
		<-reply
		return 0, nil, true, context.Cause(ctx)
	}
	defer conn.Close()
	if h := s.bulk.pulled; h != nil {
		h(conn)
	}
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	// The batch takes at most what one over NATS may (its call's
	// timeout), however its bytes trickle in: an agent sending a byte a
	// little less often than bulkIdle does not hold the pull and buf.
	limit := s.snapBulkWait
	if limit <= 0 {
		limit = fileCallTimeout
	}
	deadline := time.Now().Add(limit)
	// Each read takes what has come (many chunks at once, most often),
	// and each chunk goes to store as soon as it is whole.
	bp := bufs.get(total)
	held = newPullLease(bufs, bp)
	buf := (*bp)[:total]
	got, off := 0, 0
	for _, r := range b {
		end := off + int(r.size)
		for got < end {
			next := time.Now().Add(bulkIdle)
			if next.After(deadline) {
				next = deadline
			}
			_ = conn.SetReadDeadline(next)
			m, rerr := conn.Read(buf[got:])
			got += m
			if rerr != nil && got < end {
				conn.Close()
				// The agent's own error (the file changed, say) is
				// the pull's; a broken connection is not (the agent
				// answers unavailable when its writes failed).
				if err := <-reply; err != nil {
					return n, held, !bulkOwn(err), err
				}
				return n, held, true, rerr
			}
		}
		if err := store(r, buf[off:end:end], held); err != nil {
			// The pull fails whatever the agent answers: no waiting
			// for an answer it may never send.
			conn.Close()
			stopCall()
			<-reply
			return n, held, false, err
		}
		n++
		off = end
	}
	return n, held, false, <-reply
}

// restoreSnapshot makes directory req.Path on t match snapshot id: the
// manifest goes to the agent, which says which chunks it lacks; only those
// are read from the store and sent.
func (s *Server) restoreSnapshot(ctx context.Context, t target, ws, id string, req client.RestoreSnapshotRequest) (*client.RestoreResult, error) {
	// A collection on any replica (after a delete of this snapshot)
	// waits for the restore, whose chunks it would free.
	use, err := s.snaps.use(ctx, ws)
	if err != nil {
		return nil, err
	}
	defer use.release()
	if _, err := s.snaps.get(ctx, ws, id); err != nil {
		return nil, err
	}
	entries, err := s.snaps.manifest(ctx, ws, id)
	if err != nil {
		return nil, err
	}
	h, refs, err := s.planRestore(ctx, t, entries, req)
	if err != nil {
		return nil, restoreLost(err)
	}
	res, err := s.finishRestore(ctx, t, ws, h, refs)
	if err != nil {
		s.newRelay(t).cleanup(ctx, wire.OpSnapRestoreAbort, h)
		return nil, restoreLost(err)
	}
	return res, nil
}

// planRestore begins a restore of entries on t and returns its handle and
// the chunks t lacks.
func (s *Server) planRestore(ctx context.Context, t target, entries []wire.SnapEntry, req client.RestoreSnapshotRequest) (string, []chunkRef, error) {
	h, err := s.beginRestore(ctx, t, req)
	if err != nil {
		return "", nil, err
	}
	refs, err := s.sendManifest(ctx, t, h, entries)
	if err != nil {
		s.newRelay(t).cleanup(ctx, wire.OpSnapRestoreAbort, h)
		return "", nil, err
	}
	return h, refs, nil
}

// beginRestore opens a restore on t and returns its handle; the agent
// starts listing the directory then (wire/PROTOCOL.md).
func (s *Server) beginRestore(ctx context.Context, t target, req client.RestoreSnapshotRequest) (string, error) {
	var begun wire.FsUploadBeginResult
	if err := t.Call(ctx, wire.OpSnapRestoreBegin, &wire.SnapRestoreBeginRequest{Path: req.Path, Delete: req.Delete}, &begun, fileCall()); err != nil {
		return "", err
	}
	return begun.Handle, nil
}

// sendManifest sends the manifest of open restore h and returns the
// chunks the agent lacks.
func (s *Server) sendManifest(ctx context.Context, t target, h string, entries []wire.SnapEntry) ([]chunkRef, error) {
	return s.sendManifestFrom(ctx, t, h, entries, 0, nil)
}

// sendManifestFrom is sendManifest when the agent has the entries before
// from already; sizes, when set, is some chunks of entries by name (the
// tally's), looked in first.
func (s *Server) sendManifestFrom(ctx context.Context, t target, h string, entries []wire.SnapEntry, from int, sizes map[[wire.SumSize]byte]uint32) ([]chunkRef, error) {
	var plan wire.SnapRestorePlan
	for off, n := from, 0; off < len(entries) || n == 0; n++ {
		end, size := off, 0
		for end < len(entries) && size < snapPageBytes && end-off < wire.MaxSnapEntries {
			size += len(entries[end].Path) + len(entries[end].Link) + len(entries[end].Sums) + 5*len(entries[end].Sizes) + 32
			end++
		}
		body := &wire.SnapRestoreManifestRequest{Handle: h, Entries: entries[off:end], Last: end == len(entries)}
		if err := t.Call(ctx, wire.OpSnapRestoreManifest, body, &plan, snapCall(snapScanTimeout, h+"@m"+strconv.Itoa(off))); err != nil {
			return nil, err
		}
		off = end
	}
	// The agent lacks at most the chunks the manifest names: a larger
	// count would have the control plane page names without end.
	if n := manifestChunks(entries); plan.Lack < 0 || plan.Lack > n {
		return nil, wire.Errorf(wire.CodeInternal, wire.ReasonBadReply, "the restore lacks %d chunks of a manifest of %d", plan.Lack, n)
	}
	var lack []byte
	if plan.Lack > 0 && len(plan.Sums) == plan.Lack*wire.SumSize {
		lack = plan.Sums // the agent gave them with the plan
	}
	for len(lack)/wire.SumSize < plan.Lack {
		var page wire.SnapLackPage
		if err := t.Call(ctx, wire.OpSnapRestoreLack, &wire.SnapPageRequest{Handle: h, Offset: len(lack) / wire.SumSize}, &page, fileCall()); err != nil {
			return nil, err
		}
		if page.Validate() != nil || len(page.Sums) == 0 {
			return nil, wire.Errorf(wire.CodeInternal, wire.ReasonBadReply, "restore lack page at %d is empty or malformed", len(lack)/wire.SumSize)
		}
		lack = append(lack, page.Sums...)
	}
	if len(lack) != plan.Lack*wire.SumSize {
		return nil, wire.Errorf(wire.CodeInternal, wire.ReasonBadReply, "the restore named %d lacking chunks, not %d", len(lack)/wire.SumSize, plan.Lack)
	}
	return sizedRefs(sizes, lack, entries)
}

// manifestChunks is how many chunks entries name (a name twice counts twice).
func manifestChunks(entries []wire.SnapEntry) int {
	n := 0
	for i := range entries {
		n += len(entries[i].Sizes)
	}
	return n
}

// finishRestore sends the chunks refs of open restore h from the store and
// commits it.
func (s *Server) finishRestore(ctx context.Context, t target, ws, h string, refs []chunkRef) (*client.RestoreResult, error) {
	t1 := time.Now()
	sent, err := s.pushChunks(ctx, t, ws, h, refs)
	if err != nil {
		return nil, err
	}
	s.log.Debug("restore chunks", "ws", ws, "took", time.Since(t1), "sent", sent)
	return s.commitRestore(ctx, t, h, sent)
}

// commitRestore commits open restore h on t, to which sent bytes of
// chunks were sent.
func (s *Server) commitRestore(ctx context.Context, t target, h string, sent int64) (*client.RestoreResult, error) {
	t0 := time.Now()
	defer func() { s.log.Debug("restore commit", "took", time.Since(t0)) }()
	var done wire.SnapRestoreResult
	if err := t.Call(ctx, wire.OpSnapRestoreCommit, &wire.FsHandleRequest{Handle: h}, &done, snapCall(snapScanTimeout, h+"@commit")); err != nil {
		return nil, err
	}
	return &client.RestoreResult{Files: done.Files, Bytes: done.Bytes, TransferredBytes: sent}, nil
}

// snapPageBytes bounds the estimated size of a manifest page sent.
const snapPageBytes = 512 << 10

// chunkSizes is every chunk of entries, its size by name.
func chunkSizes(entries []wire.SnapEntry) map[[wire.SumSize]byte]uint32 {
	var t chunkTally
	t.add(entries, func([]byte) bool { return false })
	return t.sizes
}

// sizedRefs gives each name the agent lacks its size: from sizes when it
// has it, else from the manifest's chunks (entries, listed once, only
// when a name is not in sizes: content the store had, or no sizes at
// all); a name the manifest does not hold is a bad reply.
func sizedRefs(sizes map[[wire.SumSize]byte]uint32, lack []byte, entries []wire.SnapEntry) ([]chunkRef, error) {
	refs := make([]chunkRef, 0, len(lack)/wire.SumSize)
	var all map[[wire.SumSize]byte]uint32
	for i := 0; i < len(lack); i += wire.SumSize {
		sum := lack[i : i+wire.SumSize]
		n, ok := sizes[[wire.SumSize]byte(sum)]
		if !ok && all == nil {
			all = chunkSizes(entries)
		}
		if !ok {
			n, ok = all[[wire.SumSize]byte(sum)]
		}
		if !ok {
			return nil, wire.Errorf(wire.CodeInternal, wire.ReasonBadReply, "the agent lacks chunk %x, which the snapshot does not have", sum[:8])
		}
		refs = append(refs, chunkRef{sum: sum, size: n})
	}
	return refs, nil
}

// pushChunks reads the chunks from the store (snapStoreWorkers at once)
// and sends them in batches, snapWindow in flight; it returns the bytes
// sent.
func (s *Server) pushChunks(ctx context.Context, t target, ws, h string, refs []chunkRef) (int64, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	bs := batches(refs, s.batchBytes())
	var sent atomic.Int64
	sem := make(chan struct{}, snapWindow)
	var wg sync.WaitGroup
	for i, b := range bs {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			req, err := s.loadBatch(ctx, ws, h, b)
			if err == nil {
				err = t.Concurrent().Call(ctx, wire.OpSnapRestoreChunks, req, nil, snapCall(fileCallTimeout, h+"@c"+strconv.Itoa(i)))
			}
			if err != nil {
				cancel(err)
				return
			}
			sent.Add(int64(len(req.Data)))
		}()
	}
	wg.Wait()
	return sent.Load(), context.Cause(ctx)
}

// loadBatch reads a batch's chunks from the store, several at once.
func (s *Server) loadBatch(ctx context.Context, ws, h string, b []chunkRef) (*wire.SnapRestoreChunksRequest, error) {
	datas := make([][]byte, len(b))
	errs := make([]error, len(b))
	var wg sync.WaitGroup
	sem := make(chan struct{}, snapStoreWorkers/snapWindow+1)
	for i, r := range b {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			datas[i], errs[i] = s.snaps.getChunk(ctx, ws, r.sum)
		}()
	}
	wg.Wait()
	req := &wire.SnapRestoreChunksRequest{Handle: h}
	for i, r := range b {
		if errs[i] != nil {
			return nil, errs[i]
		}
		if len(datas[i]) != int(r.size) {
			return nil, wire.Errorf(wire.CodeInternal, "", "snapshot store: chunk %x has %d bytes, not %d", r.sum[:8], len(datas[i]), r.size)
		}
		req.Sums = append(req.Sums, r.sum...)
		req.Sizes = append(req.Sizes, r.size)
		req.Data = append(req.Data, datas[i]...)
	}
	return req, nil
}

// restoreLost is err, unless it is a handle that was not found: a scan or
// restore open on an agent ended before it finished (the agent restarted,
// was paused, or left it idle past its limit). That is a retry's matter,
// 503 restore_lost, never a 404: a router that read not-found from a swap
// or a snapshot would take the session, or the agent, for gone.
func restoreLost(err error) error {
	if !errors.Is(err, wire.ErrNotFound) {
		return err
	}
	return wire.Errorf(wire.CodeUnavailable, wire.ReasonRestoreLost,
		"%s; nothing was switched or recorded, and every file is old or new: try again", wire.AsError(err).Message)
}
