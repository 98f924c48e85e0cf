// Package kvjson keeps JSON values in JetStream KV buckets: read with their
// revision, written only while that revision is current (compare-and-swap),
// and listed by a watch of the current values. The control plane's records
// and routing's sessions and pool claims are stored this way.
package kvjson

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/nats-io/nats.go/jetstream"
)

// KV is the part of a jetstream.KeyValue these functions use.
type KV interface {
	Bucket() string
	Get(ctx context.Context, key string) (jetstream.KeyValueEntry, error)
	Put(ctx context.Context, key string, value []byte) (uint64, error)
	Create(ctx context.Context, key string, value []byte, opts ...jetstream.KVCreateOpt) (uint64, error)
	Update(ctx context.Context, key string, value []byte, revision uint64) (uint64, error)
	WatchFiltered(ctx context.Context, keys []string, opts ...jetstream.WatchOpt) (jetstream.KeyWatcher, error)
	Status(ctx context.Context) (jetstream.KeyValueStatus, error)
}

// Get decodes the value of key into v and returns its revision. An absent
// or deleted key is an error matching jetstream.ErrKeyNotFound.
func Get(ctx context.Context, kv KV, key string, v any) (uint64, error) {
	e, err := kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
		return 0, fmt.Errorf("%s %q: %w", kv.Bucket(), key, jetstream.ErrKeyNotFound)
	}
	if err != nil {
		return 0, fmt.Errorf("read %s %q: %w", kv.Bucket(), key, err)
	}
	if err := json.Unmarshal(e.Value(), v); err != nil {
		return 0, fmt.Errorf("decode %s %q: %w", kv.Bucket(), key, err)
	}
	return e.Revision(), nil
}

// Create stores v under key unless the key exists (an error matching
// jetstream.ErrKeyExists), and returns its revision.
func Create(ctx context.Context, kv KV, key string, v any) (uint64, error) {
	return write(kv, key, v, "create", func(b []byte) (uint64, error) { return kv.Create(ctx, key, b) })
}

// Update stores v under key if the key's revision is still rev, 0 meaning
// absent, and returns the new revision. A write that lost to another
// writer is an error matching jetstream.ErrKeyRevisionMismatch; when rev
// was 0 it matches jetstream.ErrKeyExists too.
func Update(ctx context.Context, kv KV, key string, v any, rev uint64) (uint64, error) {
	return write(kv, key, v, "update", func(b []byte) (next uint64, err error) {
		if rev == 0 {
			next, err = kv.Create(ctx, key, b)
		} else {
			next, err = kv.Update(ctx, key, b, rev)
		}
		if errors.Is(err, jetstream.ErrKeyExists) && !errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
			err = fmt.Errorf("%w: %w", err, jetstream.ErrKeyRevisionMismatch)
		}
		return next, err
	})
}

// Put stores v under key whatever is there, and returns its revision.
func Put(ctx context.Context, kv KV, key string, v any) (uint64, error) {
	return write(kv, key, v, "write", func(b []byte) (uint64, error) { return kv.Put(ctx, key, b) })
}

// write encodes v and stores it with store; its errors name what was
// done (verb) to which key of which bucket.
func write(kv KV, key string, v any, verb string, store func([]byte) (uint64, error)) (uint64, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return 0, fmt.Errorf("encode %s %q: %w", kv.Bucket(), key, err)
	}
	rev, err := store(b)
	if err != nil {
		return 0, fmt.Errorf("%s %s %q: %w", verb, kv.Bucket(), key, err)
	}
	return rev, nil
}

// List calls fn with the key, revision and value of every entry whose key
// matches filter (a KV key pattern, e.g. "ws1.*"; ">" for all), oldest
// revision first.
//
// It reads a watch of the newest message of every key until it has read
// the stream's last message as of after the watch's initial values: then
// every key's newest message as of that moment has been read (messages
// come in stream order, and a newer one of a key comes after it). The
// watch's own end-of-initial-values marker alone is no such moment: it
// comes once as many messages arrived as were pending at the start, new
// writes counted, so a key rewritten while the list was read could be
// left out altogether (seen: a key's lastUsed written during a listing
// of keys). The watch covers the whole bucket, whatever filter, for the
// stream's last message to be among what it delivers.
func List[T any](ctx context.Context, kv KV, filter string, fn func(key string, rev uint64, v *T)) error {
	w, err := kv.WatchFiltered(ctx, []string{">"})
	if err != nil {
		return fmt.Errorf("list %s: %w", kv.Bucket(), err)
	}
	defer w.Stop()
	latest := map[string]jetstream.KeyValueEntry{}
	var read, until uint64 // the newest revision read; the one to read up to
	initial := true
	for {
		select {
		case e, ok := <-w.Updates():
			if !ok {
				return fmt.Errorf("list %s: the watch ended", kv.Bucket())
			}
			if e != nil {
				read = max(read, e.Revision())
				if e.Operation() == jetstream.KeyValuePut && keyMatches(filter, e.Key()) {
					latest[e.Key()] = e
				} else {
					delete(latest, e.Key())
				}
			} else {
				initial = false
			}
			if initial || read < until {
				continue
			}
			// Read up to the stream's last message, as of now.
			if until, err = lastRevision(ctx, kv); err != nil {
				return err
			}
			if read >= until {
				return emit(kv, latest, fn)
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// lastRevision is the sequence of the last message in kv's stream.
func lastRevision(ctx context.Context, kv KV) (uint64, error) {
	st, err := kv.Status(ctx)
	if err != nil {
		return 0, fmt.Errorf("list %s: status: %w", kv.Bucket(), err)
	}
	bs, ok := st.(*jetstream.KeyValueBucketStatus)
	if !ok {
		return 0, fmt.Errorf("list %s: status of type %T has no stream state", kv.Bucket(), st)
	}
	if st := bs.StreamInfo().State; st.Msgs > 0 {
		return st.LastSeq, nil
	}
	return 0, nil // all removed (aged out): nothing more to read
}

// keyMatches reports whether key matches filter, a KV key pattern whose
// tokens are separated by dots, "*" matching one token and a final ">"
// the rest.
func keyMatches(filter, key string) bool {
	for {
		f, frest, fmore := strings.Cut(filter, ".")
		k, krest, kmore := strings.Cut(key, ".")
		switch {
		case f == ">" && !fmore:
			return true
		case f != "*" && f != k:
			return false
		case fmore != kmore:
			return false
		case !fmore:
			return true
		}
		filter, key = frest, krest
	}
}

// emit decodes entries and calls fn with each, oldest revision first.
func emit[T any](kv KV, entries map[string]jetstream.KeyValueEntry, fn func(key string, rev uint64, v *T)) error {
	sorted := make([]jetstream.KeyValueEntry, 0, len(entries))
	for _, e := range entries {
		sorted = append(sorted, e)
	}
	slices.SortFunc(sorted, func(a, b jetstream.KeyValueEntry) int { return cmp.Compare(a.Revision(), b.Revision()) })
	for _, e := range sorted {
		var v T
		if err := json.Unmarshal(e.Value(), &v); err != nil {
			return fmt.Errorf("decode %s %q: %w", kv.Bucket(), e.Key(), err)
		}
		fn(e.Key(), e.Revision(), &v)
	}
	return nil
}
