package controlplane

import (
	"errors"
	"strconv"
	"strings"
	"sync"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/outposthq/outpost/wire"
)

// sessionChunks remembers, for each session, the chunks of the last
// snapshot this replica recorded for it (a carry's or a periodic one), so
// that the session's next snapshot need not list every chunk the
// workspace's store holds (a JetStream stream info whose size grows with
// the store, not with the change: 100–250 ms for 25,000 chunks). While a
// snapshot holds the workspace's use lease (snaplease.go), no collection
// runs; so if that snapshot's record still exists, every chunk it names is
// in the store. A chunk not in it may be in the store too (another
// session's, an older snapshot's): it is sent and published only if the
// stream has no message for it (expected last subject sequence 0), so the
// bytes counted as new are the bytes stored.
//
// Its methods are safe for concurrent use. What it holds is bounded by
// sessionChunksMax chunk names; past that, other sessions' entries go.
type sessionChunks struct {
	mu   sync.Mutex
	m    map[string]*prevChunks // ws + "\x00" + session
	sums int                    // chunk names held, in all entries
}

// prevChunks is one session's last snapshot: its id and its chunk names
// (raw SHA-256, as strings).
type prevChunks struct {
	id   string
	sums map[string]struct{}
}

// sessionChunksMax bounds the chunk names held (about 70 bytes each): a
// million is 64 GiB of 64 KiB chunks in the sessions' trees.
const sessionChunksMax = 1 << 20

func sessionChunksKey(ws, session string) string { return ws + "\x00" + session }

// get returns the session's last snapshot, or nil.
func (c *sessionChunks) get(ws, session string) *prevChunks {
	if session == "" {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[sessionChunksKey(ws, session)]
}

// put remembers snapshot id, of entries, as the session's last.
func (c *sessionChunks) put(ws, session, id string, entries []wire.SnapEntry) {
	if session == "" {
		return
	}
	n := 0
	for _, e := range entries {
		n += len(e.Sizes)
	}
	p := &prevChunks{id: id, sums: make(map[string]struct{}, n)}
	for _, e := range entries {
		for i := range e.Sizes {
			p.sums[string(e.Sums[i*wire.SumSize:(i+1)*wire.SumSize])] = struct{}{}
		}
	}
	key := sessionChunksKey(ws, session)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]*prevChunks{}
	}
	if old := c.m[key]; old != nil {
		c.sums -= len(old.sums)
		delete(c.m, key)
	}
	if len(p.sums) > sessionChunksMax {
		return
	}
	for k, old := range c.m {
		if c.sums+len(p.sums) <= sessionChunksMax {
			break
		}
		c.sums -= len(old.sums)
		delete(c.m, k)
	}
	c.m[key] = p
	c.sums += len(p.sums)
}

// drop forgets the session (deleted).
func (c *sessionChunks) drop(ws, session string) {
	key := sessionChunksKey(ws, session)
	c.mu.Lock()
	defer c.mu.Unlock()
	if old := c.m[key]; old != nil {
		c.sums -= len(old.sums)
		delete(c.m, key)
	}
}

// refusal is what a refused chunk publish says of the store.
type refusal int

const (
	// refusedOther: nothing about the chunk; the publish failed.
	refusedOther refusal = iota
	// refusedStored: the stream holds a message on the chunk's subject
	// (its last sequence there is above the expected 0), so the store
	// holds that content.
	refusedStored
	// refusedInFlight: another publish on the chunk's subject is in
	// flight (a replicated stream's 10164); it may yet fail, so the
	// chunk is published again once it settles.
	refusedInFlight
	// refusedBusy: the stream's ingest queue was full (429, 10167: a
	// slow store, or many publishes at once) and the publish was
	// dropped; it is published again once the queue has room.
	refusedBusy
)

// jsErrCodeStreamTooManyRequests is JetStream's error code for a publish
// dropped because the stream's ingest queue is full (nats-server's
// JSStreamTooManyRequests; nats.go names no constant for it).
const jsErrCodeStreamTooManyRequests jetstream.ErrorCode = 10167

// chunkRefusal classifies a chunk publish's error. Only a last subject
// sequence above 0 in JetStream's "wrong last sequence: N" counts as
// stored: N is 0 when the server could not load the subject's last
// message, which says nothing of whether it holds one.
func chunkRefusal(err error) refusal {
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) {
		return refusedOther
	}
	switch apiErr.ErrorCode {
	case jetstream.JSErrCodeStreamWrongLastSequence:
		d := apiErr.Description
		if i := strings.LastIndexByte(d, ':'); i >= 0 {
			if n, err := strconv.ParseUint(strings.TrimSpace(d[i+1:]), 10, 64); err == nil && n > 0 {
				return refusedStored
			}
		}
	case jetstream.JSErrCodeStreamWrongLastSequenceConstant:
		return refusedInFlight
	case jsErrCodeStreamTooManyRequests:
		return refusedBusy
	}
	return refusedOther
}
