package controlplane

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/outposthq/outpost/wire"
)

// entriesOf is a manifest of one file whose chunks are named by n
// distinct sums (from seed).
func entriesOf(seed string, n int) []wire.SnapEntry {
	e := wire.SnapEntry{Path: "f"}
	for i := range n {
		sum := sha256.Sum256(fmt.Appendf(nil, "%s-%d", seed, i))
		e.Sums = append(e.Sums, sum[:]...)
		e.Sizes = append(e.Sizes, 1)
	}
	return []wire.SnapEntry{e}
}

// The sessions' remembered chunks: the last snapshot replaces the one
// before, a deleted session is forgotten, and what is held stays within
// sessionChunksMax names (other sessions go first; a snapshot larger than
// the bound is not remembered at all).
func TestSessionChunks(t *testing.T) {
	var c sessionChunks
	if c.get("w1", "s1") != nil || c.get("w1", "") != nil {
		t.Fatal("an empty cache knows a session")
	}
	c.put("w1", "", "sn0", entriesOf("x", 3)) // no session: nothing kept
	if c.sums != 0 {
		t.Fatalf("a snapshot without a session was remembered (%d names)", c.sums)
	}
	first := entriesOf("a", 10)
	c.put("w1", "s1", "sn1", first)
	c.put("w1", "s1", "sn2", entriesOf("b", 20))
	p := c.get("w1", "s1")
	if p == nil || p.id != "sn2" || len(p.sums) != 20 || c.sums != 20 {
		t.Fatalf("after two snapshots of s1: %+v, %d names held", p, c.sums)
	}
	if _, ok := p.sums[string(first[0].Sums[:wire.SumSize])]; ok {
		t.Fatal("the replaced snapshot's chunk is still known")
	}
	if _, ok := p.sums[string(entriesOf("b", 20)[0].Sums[5*wire.SumSize:6*wire.SumSize])]; !ok {
		t.Fatal("a chunk of the last snapshot is not known")
	}
	if c.get("w2", "s1") != nil {
		t.Fatal("another workspace's session of the same name is known")
	}
	c.drop("w1", "s1")
	if c.get("w1", "s1") != nil || c.sums != 0 {
		t.Fatalf("a dropped session is known (%d names held)", c.sums)
	}

	half := sessionChunksMax / 2
	c.put("w1", "s1", "sn3", entriesOf("c", half))
	c.put("w1", "s2", "sn4", entriesOf("d", half))
	if c.get("w1", "s1") == nil || c.get("w1", "s2") == nil || c.sums != 2*half {
		t.Fatalf("two sessions within the bound: %d names held", c.sums)
	}
	c.put("w1", "s3", "sn5", entriesOf("e", 10))
	if c.sums > sessionChunksMax || c.get("w1", "s3") == nil || (c.get("w1", "s1") != nil && c.get("w1", "s2") != nil) {
		t.Fatalf("over the bound: %d names held (max %d)", c.sums, sessionChunksMax)
	}
	c.put("w1", "s4", "sn6", entriesOf("f", sessionChunksMax+1))
	if c.get("w1", "s4") != nil || c.sums > sessionChunksMax {
		t.Fatalf("a snapshot larger than the bound was remembered (%d names held)", c.sums)
	}
}

// TestChunkRefusal: a chunk whose publish was refused counts as stored
// only when the stream says it holds a message on the chunk's subject (a
// last sequence above 0). A refusal because another publish of it is in
// flight (a replicated stream's 10164) is retried: that publish may yet
// fail, and a snapshot recorded on its word would name a chunk the store
// never got. "wrong last sequence: 0" is the server failing to load the
// subject's last message, not holding it.
func TestChunkRefusal(t *testing.T) {
	for _, c := range []struct {
		err  error
		want refusal
	}{
		{&jetstream.APIError{Code: 400, ErrorCode: jetstream.JSErrCodeStreamWrongLastSequence, Description: "wrong last sequence: 7"}, refusedStored},
		{fmt.Errorf("wrapped: %w", &jetstream.APIError{Code: 400, ErrorCode: jetstream.JSErrCodeStreamWrongLastSequence, Description: "wrong last sequence: 1"}), refusedStored},
		{&jetstream.APIError{Code: 400, ErrorCode: jetstream.JSErrCodeStreamWrongLastSequence, Description: "wrong last sequence: 0"}, refusedOther},
		{&jetstream.APIError{Code: 400, ErrorCode: jetstream.JSErrCodeStreamWrongLastSequence, Description: "wrong last sequence"}, refusedOther},
		{&jetstream.APIError{Code: 400, ErrorCode: jetstream.JSErrCodeStreamWrongLastSequenceConstant, Description: "wrong last sequence"}, refusedInFlight},
		{&jetstream.APIError{Code: 429, ErrorCode: 10167, Description: "too many requests"}, refusedBusy},
		{&jetstream.APIError{Code: 503, ErrorCode: 10077, Description: "resource limits exceeded for account"}, refusedOther},
		{errors.New("nats: timeout"), refusedOther},
	} {
		if got := chunkRefusal(c.err); got != c.want {
			t.Errorf("chunkRefusal(%v) = %d, want %d", c.err, got, c.want)
		}
	}
}

// TestSettleRefusedInFlight: a chunk refused because another publish of it
// was in flight is published again, on a real store: counted as stored on
// that word alone, a snapshot would be recorded naming a chunk the store
// never got (the other publish may fail). Published again, it is stored
// and its bytes counted; once the store holds it, it counts as stored, 0
// new bytes.
func TestSettleRefusedInFlight(t *testing.T) {
	s := startServer(t, testConfig(t))
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	data := []byte("a chunk whose other publish was in flight")
	// A publish refused by the stream leaves the chunk unstored; its
	// future holds the message, as an in-flight refusal's does.
	f, sum := refusedPublish(ctx, t, s, data)
	inFlight := &jetstream.APIError{Code: 400, ErrorCode: jetstream.JSErrCodeStreamWrongLastSequenceConstant, Description: "wrong last sequence"}
	a := chunkAck{f: f, size: uint32(len(data))}
	n, err := s.settleRefused(ctx, a, inFlight)
	if err != nil || n != int64(len(data)) {
		t.Fatalf("settleRefused = %d, %v; want the chunk stored, %d bytes", n, err, len(data))
	}
	wantStoredChunk(ctx, t, s, sum, data)
	// Stored now: a second in-flight refusal settles as stored, 0 bytes.
	if n, err := s.settleRefused(ctx, a, inFlight); err != nil || n != 0 {
		t.Fatalf("settleRefused of a stored chunk = %d, %v; want 0, nil", n, err)
	}
	// Any other refusal is the snapshot's error.
	if _, err := s.settleRefused(ctx, a, &jetstream.APIError{Code: 400, ErrorCode: jetstream.JSErrCodeStreamWrongLastSequence, Description: "wrong last sequence: 0"}); err == nil {
		t.Fatal("a refusal naming no stored message settled")
	}
}

// refusedPublish publishes data as a chunk of w1 expecting sequence 5 on
// its empty subject, so that the stream refuses it, and waits for the
// refusal: the chunk is not stored and the returned future holds the
// message. It returns the future and the chunk's sum.
func refusedPublish(ctx context.Context, t *testing.T, s *Server, data []byte) (jetstream.PubAckFuture, [sha256.Size]byte) {
	t.Helper()
	sum := sha256.Sum256(data)
	f, err := s.snapJS().PublishAsync(chunkSubject("w1", sum[:]), data, jetstream.WithExpectLastSequencePerSubject(5))
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-f.Ok():
		t.Fatal("a publish expecting sequence 5 on an empty subject was stored")
	case <-f.Err():
	case <-ctx.Done():
		t.Fatal(ctx.Err())
	}
	return f, sum
}

// wantStoredChunk fails t unless the store holds data as w1's chunk sum.
func wantStoredChunk(ctx context.Context, t *testing.T, s *Server, sum [sha256.Size]byte, data []byte) {
	t.Helper()
	got, err := s.snaps.getChunk(ctx, "w1", sum[:])
	if err != nil || string(got) != string(data) {
		t.Fatalf("the store holds %q, %v; want the chunk", got, err)
	}
}

// TestSettleBatchReusesOnlyStored: a pull's buffer is read into again only
// when every chunk published from it was stored: a publish the store
// refused (here, the chunk was there already) keeps its bytes in its
// future, and a buffer read into meanwhile could be published again as a
// chunk its bytes are not. The bytes stored are counted either way.
func TestSettleBatchReusesOnlyStored(t *testing.T) {
	s := startServer(t, testConfig(t))
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	bufs := &freeBufs{size: snapBulkBatch}
	publish := func(buf *[]byte, data []byte) pulledBatch {
		t.Helper()
		n := copy(*buf, data)
		sum := sha256.Sum256(data)
		f, err := s.snapJS().PublishAsync(chunkSubject("w1", sum[:]), (*buf)[:n], jetstream.WithExpectLastSequencePerSubject(0))
		if err != nil {
			t.Fatal(err)
		}
		return pulledBatch{acks: []chunkAck{{f: f, size: uint32(n)}}, lease: newPullLease(bufs, buf)}
	}
	data := []byte("a chunk pulled into a buffer of the pull's")
	first := bufs.get(len(data))
	n, err := s.settleBatch(ctx, publish(first, data), bufs)
	if err != nil || n != int64(len(data)) {
		t.Fatalf("settleBatch = %d, %v; want %d bytes stored", n, err, len(data))
	}
	if len(bufs.free) != 1 || bufs.get(1) != first {
		t.Fatalf("the buffer of a batch stored whole is not free again (%d free)", len(bufs.free))
	}
	// The same chunk again: refused, the store has it.
	n, err = s.settleBatch(ctx, publish(first, data), bufs)
	if err != nil || n != 0 {
		t.Fatalf("settleBatch of a stored chunk = %d, %v; want 0, nil", n, err)
	}
	if len(bufs.free) != 0 {
		t.Fatal("the buffer of a refused publish is free again")
	}
	got, err := s.snaps.getChunk(ctx, "w1", func() []byte { s := sha256.Sum256(data); return s[:] }())
	if err != nil || string(got) != string(data) {
		t.Fatalf("the store holds %q, %v; want the chunk", got, err)
	}
}

// TestStoreConnWithNativeTLS: when the embedded server's native port asks
// TLS of every client, the store's in-process connection (which has no
// socket, and no TLS) still stores chunks, and it is the store's.
func TestStoreConnWithNativeTLS(t *testing.T) {
	cfg := testConfig(t)
	cfg.Listen, cfg.NATSListen = "0.0.0.0:0", "0.0.0.0:0"
	cfg.TLSSelfSigned = []string{"127.0.0.1"}
	s := startServer(t, cfg)
	if !s.nativeTLS() {
		t.Fatal("the native port does not serve TLS")
	}
	if s.storeNC == nil || s.snapJS().Conn() != s.storeNC {
		t.Fatal("chunk publishes do not go on the store's connection")
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	data := []byte("a chunk stored over the in-process connection")
	sum := sha256.Sum256(data)
	if _, err := s.snapJS().Publish(ctx, chunkSubject("w1", sum[:]), data, jetstream.WithExpectLastSequencePerSubject(0)); err != nil {
		t.Fatal(err)
	}
	wantStoredChunk(ctx, t, s, sum, data)
}
