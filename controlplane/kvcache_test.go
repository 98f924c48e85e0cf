package controlplane

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/outposthq/outpost/internal/natstest"
)

// countingKV counts the reads that reach the bucket.
type countingKV struct {
	jetstream.KeyValue
	gets atomic.Int64
}

func (c *countingKV) Get(ctx context.Context, key string) (jetstream.KeyValueEntry, error) {
	c.gets.Add(1)
	return c.KeyValue.Get(ctx, key)
}

// newCacheTest opens one bucket twice on a real server: through a cache
// (with its reads of the bucket counted) and directly, as another replica
// writes it.
func newCacheTest(t *testing.T) (cache *cachedKV, under *countingKV, other jetstream.KeyValue) {
	t.Helper()
	ns := natstest.Start(t)
	ctx := context.Background()
	open := func() jetstream.KeyValue {
		js, err := jetstream.New(natstest.Connect(t, ns))
		if err != nil {
			t.Fatal(err)
		}
		kv, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "cache_test", History: 1})
		if err != nil {
			t.Fatal(err)
		}
		return kv
	}
	under = &countingKV{KeyValue: open()}
	other = open()
	if _, err := other.Put(ctx, "before", []byte("1")); err != nil {
		t.Fatal(err)
	}
	cache = newCachedKV(under)
	t.Cleanup(cache.close)
	waitFor(t, waitLong, "cache live", func() bool {
		cache.mu.RLock()
		defer cache.mu.RUnlock()
		return cache.live
	})
	return cache, under, other
}

// value reads key through the cache: its value, or "" when absent.
func value(t *testing.T, c *cachedKV, key string) string {
	t.Helper()
	e, err := c.Get(context.Background(), key)
	if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(e.Value())
}

func TestCachedKVServesFromMemory(t *testing.T) {
	c, under, _ := newCacheTest(t)
	for range 100 {
		if got := value(t, c, "before"); got != "1" {
			t.Fatalf("before = %q, want 1", got)
		}
	}
	if n := under.gets.Load(); n != 0 {
		t.Fatalf("%d reads reached the bucket, want 0", n)
	}
	if got := value(t, c, "absent"); got != "" {
		t.Fatalf("absent = %q", got)
	}
	if n := under.gets.Load(); n != 1 {
		t.Fatalf("an absent key: %d reads of the bucket, want 1", n)
	}
}

func TestCachedKVReadsItsOwnWrites(t *testing.T) {
	c, _, _ := newCacheTest(t)
	ctx := context.Background()
	for i, v := range []string{"a", "b", "c", "d"} {
		var err error
		switch i {
		case 0:
			_, err = c.Create(ctx, "k", []byte(v))
		case 1:
			_, err = c.Put(ctx, "k", []byte(v))
		default:
			var e jetstream.KeyValueEntry
			if e, err = c.Get(ctx, "k"); err == nil {
				_, err = c.Update(ctx, "k", []byte(v), e.Revision())
			}
		}
		if err != nil {
			t.Fatal(err)
		}
		// At once, before the watch can have delivered the write.
		if got := value(t, c, "k"); got != v {
			t.Fatalf("after writing %q read %q", v, got)
		}
	}
	if err := c.Delete(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	if got := value(t, c, "k"); got != "" {
		t.Fatalf("after delete read %q", got)
	}
}

func TestCachedKVFollowsOtherWriters(t *testing.T) {
	c, _, other := newCacheTest(t)
	ctx := context.Background()
	if _, err := other.Put(ctx, "before", []byte("2")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, waitLong, "another replica's put", func() bool { return value(t, c, "before") == "2" })
	if err := other.Delete(ctx, "before"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, waitLong, "another replica's delete", func() bool { return value(t, c, "before") == "" })

}

// A compare-and-set that lost to another writer makes the next read come
// from the bucket, so the caller's retry sees the winner even while the
// cache still holds the value it lost with. No watch runs here: the stale
// entry stays.
func TestCachedKVLostUpdateRereads(t *testing.T) {
	_, under, other := newCacheTest(t)
	ctx := context.Background()
	stale, err := other.Get(ctx, "before")
	if err != nil {
		t.Fatal(err)
	}
	c := &cachedKV{kv: under, live: true,
		entries: map[string]jetstream.KeyValueEntry{"before": stale}, written: map[string]uint64{}}
	if _, err := other.Put(ctx, "before", []byte("2")); err != nil {
		t.Fatal(err)
	}
	if got := value(t, c, "before"); got != "1" {
		t.Fatalf("setup: read %q, want the stale 1", got)
	}
	if _, err := c.Update(ctx, "before", []byte("mine"), stale.Revision()); !errors.Is(err, jetstream.ErrKeyExists) {
		t.Fatalf("stale update: %v, want a revision mismatch", err)
	}
	if got := value(t, c, "before"); got != "2" {
		t.Fatalf("after a lost update read %q, want the winner 2", got)
	}
}
