package controlplane

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/outposthq/outpost/rpc"
	"github.com/outposthq/outpost/wire"
)

// batchTarget records the fs.snap.restore.chunks batches sent to it.
type batchTarget struct {
	mu      sync.Mutex
	batches []wire.SnapRestoreChunksRequest
}

func (b *batchTarget) Name() string       { return "dst" }
func (b *batchTarget) Epoch() uint64      { return 0 }
func (b *batchTarget) LastAgent() string  { return "dst" }
func (b *batchTarget) Concurrent() target { return b }
func (b *batchTarget) Call(_ context.Context, op string, body, _ any, _ rpc.CallOptions) error {
	if op != wire.OpSnapRestoreChunks {
		panic(op)
	}
	// The batch is encoded as rpc.Client.Call encodes it and decoded as
	// the agent decodes it; an in-place batch must be encoded in place
	// (its names and sizes fit its room), not copied.
	r, err := wire.NewRequest(op, nil, time.Now().Add(time.Minute))
	if err != nil {
		panic(err)
	}
	r.IdempotencyKey = "h1@f123456"
	data, err := wire.EncodeRequest(r, body)
	if err != nil {
		return err
	}
	p, ok := body.(*wire.InPlace)
	if !ok {
		panic("the forwarder's batch is not encoded in place")
	}
	if p.N > 0 && unsafe.SliceData(data[len(data)-p.N:]) != unsafe.SliceData(p.Data()) {
		panic("a batch's data was copied: its head did not fit its room")
	}
	dec, err := wire.DecodeRequest(data)
	if err != nil {
		return err
	}
	req := &wire.SnapRestoreChunksRequest{}
	if req.Data, err = dec.DecodeBodyAliasing("data", req); err != nil {
		return err
	}
	if err := req.Validate(); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	// The forwarder reuses the batch's buffer once the call returns (the
	// real call has sent it by then): keep a copy.
	b.batches = append(b.batches, wire.SnapRestoreChunksRequest{Handle: req.Handle, Sums: append([]byte(nil), req.Sums...),
		Sizes: append([]uint32(nil), req.Sizes...), Data: append([]byte(nil), req.Data...)})
	return nil
}

// testForwarder is a forwarder, of no server, to restore h1 on dst, of
// batches of up to limit bytes (on bulk connections and over NATS); its
// context ends with the test.
func testForwarder(t testing.TB, dst target, limit int) *forwarder {
	t.Helper()
	ctx, cancel := context.WithCancelCause(context.Background())
	t.Cleanup(func() { cancel(nil) })
	return &forwarder{t: dst, h: "h1", limit: limit, nats: limit, ctx: ctx, cancel: cancel, sem: make(chan struct{}, snapWindow), want: map[string]bool{}}
}

// forwardAll forwards chunks of the given sizes (each wanted) through a
// forwarder with batch limit limit, and returns the batches sent.
func forwardAll(t *testing.T, limit int, sizes []int) []wire.SnapRestoreChunksRequest {
	t.Helper()
	dst := &batchTarget{}
	f := testForwarder(t, dst, limit)
	var refs []chunkRef
	var datas [][]byte
	for i, n := range sizes {
		data := make([]byte, n)
		var id [8]byte
		binary.LittleEndian.PutUint64(id[:], uint64(i))
		copy(data, id[:])
		sum := sha256.Sum256(append(id[:], data...))
		refs = append(refs, chunkRef{sum: sum[:], size: uint32(n)})
		datas = append(datas, data)
		f.want[string(sum[:])] = true
	}
	for i, r := range refs {
		if err := f.take(r, datas[i], nil); err != nil {
			t.Fatal(err)
		}
	}
	f.mu.Lock()
	if f.buf != nil {
		f.sendLocked()
	}
	f.mu.Unlock()
	f.wg.Wait()
	if err := context.Cause(f.ctx); err != nil {
		t.Fatal(err)
	}
	// Every chunk went once, with its bytes (batches go several at once,
	// in any order).
	index := map[string]int{}
	for i, r := range refs {
		index[string(r.sum)] = i
	}
	seen := map[int]bool{}
	for _, b := range dst.batches {
		off := 0
		for j, n := range b.Sizes {
			i, ok := index[string(b.Sums[j*wire.SumSize:(j+1)*wire.SumSize])]
			if !ok || seen[i] || int(n) != sizes[i] || string(b.Data[off:off+int(n)]) != string(datas[i]) {
				t.Fatalf("batch chunk %d: not a chunk taken, or sent twice, or not its bytes", j)
			}
			seen[i] = true
			off += int(n)
		}
		if off != len(b.Data) {
			t.Fatalf("a batch has %d bytes of data, its chunks %d", len(b.Data), off)
		}
	}
	if len(seen) != len(refs) {
		t.Fatalf("%d of %d chunks were forwarded", len(seen), len(refs))
	}
	return dst.batches
}

// The forwarder fills each batch to its limit (a batch goes when the next
// chunk would not fit), never past it, and never with more than
// MaxSnapSums chunks, or more than forwardRoom has room for.
func TestForwarderFillsBatches(t *testing.T) {
	const limit = 2 << 20
	sizes := make([]int, 40)
	for i := range sizes {
		sizes[i] = 200 << 10
	}
	batches := forwardAll(t, limit, sizes)
	// 10 chunks of 200 KiB fit 2 MiB; an eleventh does not.
	if len(batches) != 4 {
		t.Fatalf("40 chunks of 200 KiB went in %d batches, want 4 of 10", len(batches))
	}
	for _, b := range batches {
		if len(b.Sizes) != 10 || len(b.Data) > limit {
			t.Fatalf("a batch of %d chunks, %d bytes (limit %d)", len(b.Sizes), len(b.Data), limit)
		}
	}
	// Tiny chunks: the room for their names and sizes bounds a batch
	// before the bytes do (and before MaxSnapSums).
	tiny := make([]int, 2000)
	for i := range tiny {
		tiny[i] = 1
	}
	perBatch := (forwardRoom - wire.Headroom) / (wire.SumSize + 5)
	batches = forwardAll(t, limit, tiny)
	if want := (len(tiny) + perBatch - 1) / perBatch; len(batches) != want {
		t.Fatalf("%d one-byte chunks went in %d batches, want %d of at most %d", len(tiny), len(batches), want, perBatch)
	}
	for _, b := range batches {
		if len(b.Sizes) > perBatch || len(b.Sizes) < len(tiny)%perBatch {
			t.Fatalf("a batch of %d one-byte chunks, want %d (or the rest)", len(b.Sizes), perBatch)
		}
	}
}

// The batch holding the last chunk the restore lacks goes as that chunk
// is taken, before deliver (which a carry calls only once the store
// acknowledged every chunk pulled).
func TestForwarderSendsLastBatchAtOnce(t *testing.T) {
	dst := &batchTarget{}
	f := testForwarder(t, dst, 2<<20)
	var refs []chunkRef
	for i := range 3 {
		sum := sha256.Sum256([]byte{byte(i)})
		refs = append(refs, chunkRef{sum: sum[:], size: 1})
		f.want[string(sum[:])] = true
	}
	for i, r := range refs {
		if err := f.take(r, []byte{byte(i)}, nil); err != nil {
			t.Fatal(err)
		}
	}
	f.wg.Wait()
	dst.mu.Lock()
	defer dst.mu.Unlock()
	if len(dst.batches) != 1 || len(dst.batches[0].Sizes) != 3 {
		t.Fatalf("after the last wanted chunk: %d batches sent, want one of 3", len(dst.batches))
	}
}

// failingBatchTarget takes batches as batchTarget does, then answers the
// failAt-th call with an error (a target that fails part way: a full
// disk, a crash).
type failingBatchTarget struct {
	batchTarget
	failAt int
	calls  int
}

func (f *failingBatchTarget) Concurrent() target { return f }

func (f *failingBatchTarget) Call(ctx context.Context, op string, body, out any, opts rpc.CallOptions) error {
	if err := f.batchTarget.Call(ctx, op, body, out, opts); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if f.calls == f.failAt {
		return wire.Errorf(wire.CodeInsufficientStorage, "", "disk full")
	}
	return nil
}

// A target that fails a batch part way through a carry: the forwarder
// stops taking chunks with that error, deliver returns it, every batch
// the target got was whole and well formed (encoded in place, decoded and
// validated as the agent does), and the batch buffers it gave back serve
// the next forwarder's batches byte for byte.
func TestForwarderTargetFailsThenBuffersServeAgain(t *testing.T) {
	const limit = 1 << 20
	dst := &failingBatchTarget{failAt: 2}
	f := testForwarder(t, dst, limit)
	var refs []chunkRef
	var datas [][]byte
	for i := range 40 {
		data := make([]byte, 200<<10)
		binary.LittleEndian.PutUint64(data, uint64(i))
		sum := sha256.Sum256(data)
		refs = append(refs, chunkRef{sum: sum[:], size: uint32(len(data))})
		datas = append(datas, data)
		f.want[string(sum[:])] = true
	}
	var takeErr error
	for i, r := range refs {
		if takeErr = f.take(r, datas[i], nil); takeErr != nil {
			break
		}
	}
	err := f.deliver("w1")
	if err == nil || wire.AsError(err).Code != wire.CodeInsufficientStorage {
		t.Fatalf("deliver after the target failed: %v, want its error", err)
	}
	if takeErr != nil && wire.AsError(takeErr).Code != wire.CodeInsufficientStorage {
		t.Fatalf("take after the target failed: %v, want its error", takeErr)
	}
	if err := f.take(refs[len(refs)-1], datas[len(refs)-1], nil); err == nil {
		t.Fatal("the forwarder took a chunk after its target failed")
	}
	dst.mu.Lock()
	for _, b := range dst.batches {
		off := 0
		for j, n := range b.Sizes {
			sum := sha256.Sum256(b.Data[off : off+int(n)])
			if string(sum[:]) != string(b.Sums[j*wire.SumSize:(j+1)*wire.SumSize]) {
				t.Fatalf("a batch sent before the failure holds a chunk that is not its name")
			}
			off += int(n)
		}
	}
	dst.mu.Unlock()
	// The buffers given back (after the failure too) carry the next
	// forwarder's batches exactly (forwardAll checks every byte).
	sizes := make([]int, 60)
	for i := range sizes {
		sizes[i] = 100<<10 + i*977
	}
	forwardAll(t, limit, sizes)
}

// gateTarget takes fs.snap.restore.chunks requests sent over NATS
// (sendNATS, or a batch encoded in place) once gate is closed, keeping a
// copy of their data.
type gateTarget struct {
	batchTarget
	gate chan struct{}
}

func (g *gateTarget) Concurrent() target { return g }
func (g *gateTarget) Call(ctx context.Context, op string, body, _ any, _ rpc.CallOptions) error {
	if p, ok := body.(*wire.InPlace); ok {
		req := *p.Body.(*wire.SnapRestoreChunksRequest)
		req.Data = p.Buf[p.Room : p.Room+p.N]
		body = &req
	}
	req, ok := body.(*wire.SnapRestoreChunksRequest)
	if op != wire.OpSnapRestoreChunks || !ok {
		panic(op)
	}
	select {
	case <-g.gate:
	case <-ctx.Done():
		return ctx.Err()
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.batches = append(g.batches, wire.SnapRestoreChunksRequest{Sums: append([]byte(nil), req.Sums...),
		Sizes: append([]uint32(nil), req.Sizes...), Data: append([]byte(nil), req.Data...)})
	return nil
}

// TestForwarderHoldsPullBuffers: on bulk connections a forward batch
// is the chunks where the pull read them, not a copy; the pull's buffer
// is read into again only when the pull settled it and every batch with
// a chunk in it was sent (else the restore, which trusts the control
// plane's chunks, would be sent bytes read in since), and never when a
// publish from it failed.
func TestForwarderHoldsPullBuffers(t *testing.T) {
	dst := &gateTarget{gate: make(chan struct{})}
	f := testForwarder(t, dst, 2<<20)
	f.bulk.Store(true)
	bufs := &freeBufs{size: 1 << 20}
	bp := bufs.get(1 << 20)
	lease := newPullLease(bufs, bp)
	var refs []chunkRef
	off := 0
	for i := range 4 {
		data := (*bp)[off : off+1000+i]
		for j := range data {
			data[j] = byte(i + j)
		}
		sum := sha256.Sum256(data)
		refs = append(refs, chunkRef{sum: sum[:], size: uint32(len(data))})
		f.want[string(sum[:])] = true
		off += len(data)
	}
	want := append([]byte(nil), (*bp)[:off]...)
	// Three of the four: the batch is not sent yet.
	off = 0
	for _, r := range refs[:3] {
		if err := f.take(r, (*bp)[off:off+int(r.size)], lease); err != nil {
			t.Fatal(err)
		}
		off += int(r.size)
	}
	f.mu.Lock()
	if f.buf == nil || !f.buf.inParts() || f.buf.buf != nil {
		f.mu.Unlock()
		t.Fatal("a bulk forward batch of chunks in a pull buffer is not made of them")
	}
	// Sent over NATS (the bulk path needs a server): the same batch.
	f.bulk.Store(false)
	f.sendLocked()
	f.mu.Unlock()
	lease.release(true) // the pull settled the batch
	if len(bufs.free) != 0 {
		t.Fatal("a pull buffer is free again while a forward batch of its chunks is unsent")
	}
	close(dst.gate)
	f.wg.Wait()
	if err := context.Cause(f.ctx); err != nil {
		t.Fatal(err)
	}
	if len(bufs.free) != 1 || bufs.free[0] != bp {
		t.Fatalf("the pull buffer is not free after its batch was sent and settled (%d free)", len(bufs.free))
	}
	if len(dst.batches) != 1 || string(dst.batches[0].Data) != string(want[:off]) || len(dst.batches[0].Sizes) != 3 {
		t.Fatalf("%d batches sent; want one of the three chunks' bytes", len(dst.batches))
	}
	// A lease let go of as dirty (a publish failed) never frees its buffer.
	bp2 := bufs.get(1 << 20)
	l2 := newPullLease(bufs, bp2)
	l2.hold()
	l2.release(false)
	l2.release(true)
	if len(bufs.free) != 0 {
		t.Fatal("a pull buffer with a failed publish is free again")
	}
}

// TestForwarderSparseChunksHoldFewPullBuffers: when the restore lacks
// few of the chunks pulled (a target that has most of the tree), a
// forward batch gathers its chunks from many pull buffers; it holds at
// most forwardLeases of them (it copies the rest of its chunks), not
// every one until it is full: else a carry to such a target kept the
// tree's pulled bytes in memory, 8 MiB a pull buffer, a forward batch
// filling from a hundred of them.
func TestForwarderSparseChunksHoldFewPullBuffers(t *testing.T) {
	dst := &gateTarget{gate: make(chan struct{})}
	f := testForwarder(t, dst, 2<<20)
	f.bulk.Store(true)
	const pulls = 40
	bufs := &freeBufs{size: 64 << 10}
	var want []byte
	for i := range pulls {
		// A pull buffer of which the restore lacks one chunk.
		b := make([]byte, 64<<10)
		lease := newPullLease(bufs, &b)
		data := b[100 : 1100+i]
		for j := range data {
			data[j] = byte(i * j)
		}
		takeOpen(t, f, data, lease)
		want = append(want, data...)
		lease.release(true) // the pull settled its batch
	}
	bufs.mu.Lock()
	free := len(bufs.free)
	bufs.mu.Unlock()
	if held := pulls - free; held > forwardLeases {
		t.Fatalf("an unsent forward batch of %d chunks holds %d pull buffers, want at most %d", pulls, held, forwardLeases)
	}
	// The buffers it let go of are read into again: the batch still
	// sends the chunks as they were.
	for _, b := range bufs.free {
		clear(*b)
	}
	f.mu.Lock()
	f.bulk.Store(false) // sent over NATS (the bulk path needs a server)
	f.sendLocked()
	f.mu.Unlock()
	close(dst.gate)
	f.wg.Wait()
	if err := context.Cause(f.ctx); err != nil {
		t.Fatal(err)
	}
	if len(dst.batches) != 1 || string(dst.batches[0].Data) != string(want) {
		t.Fatalf("%d batches sent; want one of the %d chunks' bytes", len(dst.batches), pulls)
	}
	if len(bufs.free) != pulls {
		t.Fatalf("%d of %d pull buffers free after the batch was sent", len(bufs.free), pulls)
	}
}

// TestForwarderMixedChunksOneBatch: while one pull has fallen back to
// NATS and others still come on bulk connections, the chunks of both
// kinds, taken in turns, go in one forward batch (one bulk connection),
// not in a batch each time the kind changes.
func TestForwarderMixedChunksOneBatch(t *testing.T) {
	dst := &gateTarget{gate: make(chan struct{})}
	close(dst.gate)
	release := make(chan struct{})
	f := testForwarder(t, dst, 2<<20)
	f.s = &Server{beforeForward: func() { <-release }}
	f.bulk.Store(true)
	f.bufs = &freeBufs{size: forwardRoom + f.limit}
	bufs := &freeBufs{size: 64 << 10}
	b := make([]byte, 64<<10)
	lease := newPullLease(bufs, &b)
	var want []byte
	for i := range snapWindow {
		data := b[i*1000 : i*1000+999]
		var l *pullLease
		if i%2 == 1 {
			data, l = []byte(strings.Repeat(string(rune('a'+i)), 999)), nil // a NATS reply's
		} else {
			for j := range data {
				data[j] = byte(i + j)
			}
			l = lease
		}
		takeOpen(t, f, data, l)
		want = append(want, data...)
	}
	f.mu.Lock()
	f.bulk.Store(false) // sent over NATS (the bulk path needs a server)
	f.sendLocked()
	f.mu.Unlock()
	close(release)
	f.wg.Wait()
	if err := context.Cause(f.ctx); err != nil {
		t.Fatal(err)
	}
	if len(dst.batches) != 1 || string(dst.batches[0].Data) != string(want) {
		t.Fatalf("%d batches sent for %d chunks taken in turns from a pull buffer and NATS replies, want one", len(dst.batches), snapWindow)
	}
}

// takeOpen has f take data (from lease's buffer, nil: a NATS reply's), a
// chunk the restore lacks, while the restore lacks another: the batch
// stays open.
func takeOpen(t *testing.T, f *forwarder, data []byte, lease *pullLease) {
	t.Helper()
	sum := sha256.Sum256(data)
	f.want[string(sum[:])] = true
	f.want["another"] = true
	if err := f.take(chunkRef{sum: sum[:], size: uint32(len(data))}, data, lease); err != nil {
		t.Fatal(err)
	}
}
