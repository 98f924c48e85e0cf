package controlplane

import (
	"context"
	"math"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// cachedKV is a KV bucket whose reads are answered from memory, kept current
// by a watch of the whole bucket. Every call reads its workspace and its
// agent; with the cache those reads are map lookups instead of two JetStream
// requests, which under load cost the control plane and its NATS server
// more than the call itself.
//
// A value is served from memory only while the watch is live and the value
// is at least as new as this replica's own latest write of the key, so a
// replica reads its own writes. Another replica's write reaches the cache
// when the watch delivers it (milliseconds). Anything the cache cannot
// answer (an absent or deleted key, a watch that is not live) is read from
// the bucket.
//
// It wraps the bucket rather than embedding it: it has only the methods of
// bucket, each written here, so a method the control plane starts to use
// is a compile error until the cache handles it, never a write that
// silently skips read-your-writes.
type cachedKV struct {
	kv jetstream.KeyValue

	mu      sync.RWMutex
	entries map[string]jetstream.KeyValueEntry
	// written is the revision of this replica's latest write of a key, until
	// the watch delivers it; math.MaxUint64 after a delete.
	written map[string]uint64
	live    bool

	cancel context.CancelFunc
	done   chan struct{}
}

var _ bucket = (*cachedKV)(nil) // the whole of what it serves

// cacheRewatch paces restarts of a cache's watch after it ended.
const cacheRewatch = time.Second

// newCachedKV starts watching kv; close stops it.
func newCachedKV(kv jetstream.KeyValue) *cachedKV {
	ctx, cancel := context.WithCancel(context.Background())
	c := &cachedKV{
		kv:      kv,
		entries: map[string]jetstream.KeyValueEntry{},
		written: map[string]uint64{},
		cancel:  cancel,
		done:    make(chan struct{}),
	}
	go c.run(ctx)
	return c
}

// close stops the watch and waits for it to end.
func (c *cachedKV) close() {
	c.cancel()
	<-c.done
}

func (c *cachedKV) run(ctx context.Context) {
	defer close(c.done)
	for {
		c.watch(ctx)
		c.mu.Lock()
		c.live = false
		clear(c.entries)
		c.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-time.After(cacheRewatch):
		}
	}
}

// watch mirrors the bucket until the watch ends or ctx does.
func (c *cachedKV) watch(ctx context.Context) {
	w, err := c.kv.WatchAll(ctx)
	if err != nil {
		return
	}
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case e, ok := <-w.Updates():
			if !ok {
				return
			}
			c.apply(e)
		}
	}
}

// apply records one update of the watch; nil marks the end of the values
// the bucket held when the watch started.
func (c *cachedKV) apply(e jetstream.KeyValueEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e == nil {
		c.live = true
		return
	}
	key := e.Key()
	if old, ok := c.entries[key]; ok && old.Revision() > e.Revision() {
		return
	}
	if e.Operation() == jetstream.KeyValuePut {
		c.entries[key] = e
	} else {
		delete(c.entries, key)
	}
	if w, ok := c.written[key]; ok && (w <= e.Revision() || w == math.MaxUint64 && e.Operation() != jetstream.KeyValuePut) {
		delete(c.written, key)
	}
}

// Bucket is the bucket's name.
func (c *cachedKV) Bucket() string { return c.kv.Bucket() }

// WatchFiltered watches the bucket itself: a watch delivers what the
// bucket holds, which includes this replica's writes.
func (c *cachedKV) WatchFiltered(ctx context.Context, keys []string, opts ...jetstream.WatchOpt) (jetstream.KeyWatcher, error) {
	return c.kv.WatchFiltered(ctx, keys, opts...)
}

// Status is the bucket's own.
func (c *cachedKV) Status(ctx context.Context) (jetstream.KeyValueStatus, error) {
	return c.kv.Status(ctx)
}

// Get answers from memory when it can, else from the bucket.
func (c *cachedKV) Get(ctx context.Context, key string) (jetstream.KeyValueEntry, error) {
	c.mu.RLock()
	e, ok := c.entries[key]
	fresh := ok && c.live && e.Revision() >= c.written[key]
	c.mu.RUnlock()
	if fresh {
		return e, nil
	}
	return c.kv.Get(ctx, key)
}

// wrote notes this replica's write of key at rev (math.MaxUint64: a delete
// or purge, whose revision is not returned).
func (c *cachedKV) wrote(key string, rev uint64) {
	c.mu.Lock()
	if rev > c.written[key] || rev == math.MaxUint64 {
		c.written[key] = rev
	}
	if rev == math.MaxUint64 {
		delete(c.entries, key)
	}
	c.mu.Unlock()
}

// Put writes through and notes the revision.
func (c *cachedKV) Put(ctx context.Context, key string, value []byte) (uint64, error) {
	rev, err := c.kv.Put(ctx, key, value)
	if err == nil {
		c.wrote(key, rev)
	}
	return rev, err
}

// Create writes through and notes the revision.
func (c *cachedKV) Create(ctx context.Context, key string, value []byte, opts ...jetstream.KVCreateOpt) (uint64, error) {
	rev, err := c.kv.Create(ctx, key, value, opts...)
	if err == nil {
		c.wrote(key, rev)
	}
	return rev, err
}

// Update writes through and notes the revision. After a failure, the key
// is served from memory only once it is newer than last.
func (c *cachedKV) Update(ctx context.Context, key string, value []byte, last uint64) (uint64, error) {
	rev, err := c.kv.Update(ctx, key, value, last)
	if err == nil {
		c.wrote(key, rev)
	} else {
		// The caller's revision may have come from a cache the watch has
		// not yet caught up: its retry must read something newer.
		c.wrote(key, last+1)
	}
	return rev, err
}

// Delete deletes through; the key is read from the bucket until the watch
// delivers the delete.
func (c *cachedKV) Delete(ctx context.Context, key string, opts ...jetstream.KVDeleteOpt) error {
	c.wrote(key, math.MaxUint64)
	return c.kv.Delete(ctx, key, opts...)
}
