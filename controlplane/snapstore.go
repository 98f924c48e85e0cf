package controlplane

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/outposthq/outpost/controlplane/client"
	"github.com/outposthq/outpost/wire"
	"github.com/vmihailenco/msgpack/v5"
)

// The snapshot store, in the control plane's JetStream (agents have none:
// every chunk passes through the control plane):
//
//   - stream OUTPOST_CHUNKS, subject outpost.chunk.<ws>.<sha256 hex>, one
//     message per subject: the content of each chunk a workspace's
//     snapshots use, once however many snapshots and files share it;
//   - object store outpost_manifests, object <ws>/<id>: a snapshot's
//     manifest (msgpack []wire.SnapEntry), large for large trees;
//   - KV outpost_snapshots: snap.<ws>.<id> → client.Snapshot, and
//     usage.<ws> → the bytes of chunks the workspace holds.
//
// Chunks are per workspace: dedup across workspaces would tell one whether
// another holds some content, and would make a workspace's size limit
// depend on others. All three are replicated like the rest of the state.
const (
	chunkStream     = "OUTPOST_CHUNKS"
	chunkSubjects   = "outpost.chunk.>"
	bucketSnapshots = "outpost_snapshots"
	bucketManifests = "outpost_manifests"
)

// DefaultSnapshotQuota is a workspace's snapshot store limit when
// Config.SnapshotQuota is zero.
const DefaultSnapshotQuota = 20 << 30

// snapStore is the snapshot store of the control plane.
type snapStore struct {
	js        jetstream.JetStream
	chunks    jetstream.Stream
	records   jetstream.KeyValue
	manifests jetstream.ObjectStore
	quota     int64
	// logf logs what fails with no caller to tell (slog's Warn).
	logf func(msg string, args ...any)
}

func chunkSubject(ws string, sum []byte) string {
	return "outpost.chunk." + ws + "." + hex.EncodeToString(sum)
}

// openSnapStore makes or opens the stream, bucket and object store.
func openSnapStore(ctx context.Context, js jetstream.JetStream, replicas int, quota int64, logf func(string, ...any)) (*snapStore, error) {
	st := &snapStore{js: js, quota: quota, logf: logf}
	err := untilReady(ctx, func(ctx context.Context) (err error) {
		st.chunks, err = js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
			Name:              chunkStream,
			Description:       "outpost snapshot chunks by workspace and SHA-256",
			Subjects:          []string{chunkSubjects},
			MaxMsgsPerSubject: 1,
			Storage:           jetstream.FileStorage,
			Replicas:          replicas,
			AllowDirect:       true,
			Discard:           jetstream.DiscardOld,
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("chunk stream (replicas %d): %w", replicas, err)
	}
	err = untilReady(ctx, func(ctx context.Context) (err error) {
		st.records, err = openBucket(ctx, js, jetstream.KeyValueConfig{
			Bucket: bucketSnapshots, Description: "outpost snapshots", History: 1,
			Storage: jetstream.FileStorage, Replicas: replicas,
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("kv bucket %s: %w", bucketSnapshots, err)
	}
	err = untilReady(ctx, func(ctx context.Context) (err error) {
		st.manifests, err = js.CreateOrUpdateObjectStore(ctx, jetstream.ObjectStoreConfig{
			Bucket: bucketManifests, Description: "outpost snapshot manifests",
			Storage: jetstream.FileStorage, Replicas: replicas,
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("object store %s: %w", bucketManifests, err)
	}
	return st, nil
}

// have returns the chunks the workspace's store holds.
func (st *snapStore) have(ctx context.Context, ws string) (map[string]bool, error) {
	prefix := "outpost.chunk." + ws + "."
	info, err := st.chunks.Info(ctx, jetstream.WithSubjectFilter(prefix+"*"))
	if err != nil {
		return nil, stateErr("list chunks", err)
	}
	out := make(map[string]bool, len(info.State.Subjects))
	for subj := range info.State.Subjects {
		out[strings.TrimPrefix(subj, prefix)] = true
	}
	return out, nil
}

// getChunk reads one chunk.
func (st *snapStore) getChunk(ctx context.Context, ws string, sum []byte) ([]byte, error) {
	m, err := st.chunks.GetLastMsgForSubject(ctx, chunkSubject(ws, sum))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, wire.Errorf(wire.CodeInternal, "", "snapshot store: chunk %x is missing", sum[:8])
	}
	if err != nil {
		return nil, stateErr("read chunk", err)
	}
	return m.Data, nil
}

// putManifest stores a snapshot's manifest.
func (st *snapStore) putManifest(ctx context.Context, ws, id string, entries []wire.SnapEntry) error {
	b, err := msgpack.Marshal(entries)
	if err != nil {
		return fmt.Errorf("encode manifest: %w", err)
	}
	_, err = st.manifests.Put(ctx, jetstream.ObjectMeta{Name: ws + "/" + id}, bytes.NewReader(b))
	return stateErr("store manifest", err)
}

// manifest reads a snapshot's manifest.
func (st *snapStore) manifest(ctx context.Context, ws, id string) ([]wire.SnapEntry, error) {
	b, err := st.manifests.GetBytes(ctx, ws+"/"+id)
	if err != nil {
		return nil, stateErr("read manifest", err)
	}
	var entries []wire.SnapEntry
	if err := msgpack.Unmarshal(b, &entries); err != nil {
		return nil, wire.Errorf(wire.CodeInternal, "", "snapshot %s: manifest: %v", id, err)
	}
	return entries, nil
}

func snapKey(ws, id string) string { return "snap." + ws + "." + id }
func usageKey(ws string) string    { return "usage." + ws }

// put stores a snapshot's record.
func (st *snapStore) put(ctx context.Context, ws string, sn *client.Snapshot) error {
	b, _ := json.Marshal(sn)
	_, err := st.records.Put(ctx, snapKey(ws, sn.ID), b)
	return stateErr("store snapshot", err)
}

// get reads one snapshot; not_found if there is none.
func (st *snapStore) get(ctx context.Context, ws, id string) (*client.Snapshot, error) {
	e, err := st.records.Get(ctx, snapKey(ws, id))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, wire.Errorf(wire.CodeNotFound, "", "no snapshot %q in workspace %s", id, ws)
	}
	if err != nil {
		return nil, stateErr("read snapshot", err)
	}
	var sn client.Snapshot
	if err := json.Unmarshal(e.Value(), &sn); err != nil {
		return nil, wire.Errorf(wire.CodeInternal, "", "snapshot %s: %v", id, err)
	}
	return &sn, nil
}

// list returns the workspace's snapshots, oldest first.
func (st *snapStore) list(ctx context.Context, ws string) ([]client.Snapshot, error) {
	lister, err := st.records.ListKeysFiltered(ctx, "snap."+ws+".*")
	if err != nil {
		return nil, stateErr("list snapshots", err)
	}
	var out []client.Snapshot
	for key := range lister.Keys() {
		e, err := st.records.Get(ctx, key)
		if err != nil {
			continue // deleted meanwhile
		}
		var sn client.Snapshot
		if json.Unmarshal(e.Value(), &sn) == nil {
			out = append(out, sn)
		}
	}
	slices.SortFunc(out, func(a, b client.Snapshot) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out, nil
}

// usage is the bytes of chunks the workspace holds, and the KV revision.
func (st *snapStore) usage(ctx context.Context, ws string) (int64, uint64, error) {
	e, err := st.records.Get(ctx, usageKey(ws))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return 0, 0, nil
	}
	if err != nil {
		return 0, 0, stateErr("read snapshot usage", err)
	}
	var n int64
	json.Unmarshal(e.Value(), &n)
	return n, e.Revision(), nil
}

// setUsage changes the usage with f, by compare and swap.
func (st *snapStore) setUsage(ctx context.Context, ws string, f func(int64) int64) error {
	for range maxCASTries {
		n, rev, err := st.usage(ctx, ws)
		if err != nil {
			return err
		}
		b, _ := json.Marshal(max(f(n), 0))
		if rev == 0 {
			_, err = st.records.Create(ctx, usageKey(ws), b)
		} else {
			_, err = st.records.Update(ctx, usageKey(ws), b, rev)
		}
		if err == nil {
			return nil
		}
		if !isRevisionMismatch(err) && !errors.Is(err, jetstream.ErrKeyExists) {
			return stateErr("store snapshot usage", err)
		}
	}
	return wire.Errorf(wire.CodeUnavailable, "", "snapshot usage of %s kept changing; retry", ws)
}

// maxCASTries bounds compare-and-swap loops on one key.
const maxCASTries = 20

// remove deletes a snapshot and then the chunks no other snapshot of the
// workspace uses, and sets the usage to what remains; while snapshots are
// being taken or restored in the workspace (on any replica), the last of
// them to end does the collection (snaplease.go).
func (st *snapStore) remove(ctx context.Context, ws, id string) error {
	if _, err := st.get(ctx, ws, id); err != nil {
		return err
	}
	return st.removeAll(ctx, ws, []string{id})
}

// removeAll deletes snapshots (those already gone are no error) and then
// collects once, as remove does.
func (st *snapStore) removeAll(ctx context.Context, ws string, ids []string) error {
	for _, id := range ids {
		if err := st.records.Delete(ctx, snapKey(ws, id)); err != nil {
			return stateErr("delete snapshot", err)
		}
		if err := st.manifests.Delete(ctx, ws+"/"+id); err != nil && !errors.Is(err, jetstream.ErrObjectNotFound) {
			return stateErr("delete manifest", err)
		}
	}
	return st.collectWhenFree(ctx, ws)
}

// removeSession deletes what a deleted session (id, uid) took by itself:
// its periodic and carry snapshots, and its periodic turn. Manual
// snapshots taken through its target stay.
func (st *snapStore) removeSession(ctx context.Context, ws, id, uid string) error {
	snaps, err := st.list(ctx, ws)
	if err != nil {
		return err
	}
	var ids []string
	for _, sn := range snaps {
		if sn.Session == id && sn.Kind != snapManual {
			ids = append(ids, sn.ID)
		}
	}
	if err := st.records.Delete(ctx, periodicKey(ws, uid)); err != nil {
		return stateErr("delete the periodic turn", err)
	}
	if len(ids) == 0 {
		return nil
	}
	return st.removeAll(ctx, ws, ids)
}

// collect purges the workspace's chunks no snapshot uses and sets its
// usage to the bytes of those that stay. It runs holding the collector's
// lease, and purges only while held says it still holds it.
func (st *snapStore) collect(ctx context.Context, ws string, held func() error) error {
	snaps, err := st.list(ctx, ws)
	if err != nil {
		return err
	}
	used := map[string]bool{}
	var bytes int64
	for _, sn := range snaps {
		entries, err := st.manifest(ctx, ws, sn.ID)
		if err != nil {
			return err
		}
		for _, e := range entries {
			for i, n := range e.Sizes {
				h := hex.EncodeToString(e.Sums[i*wire.SumSize : (i+1)*wire.SumSize])
				if !used[h] {
					used[h] = true
					bytes += int64(n)
				}
			}
		}
	}
	have, err := st.have(ctx, ws)
	if err != nil {
		return err
	}
	var unused []string
	for h := range have {
		if !used[h] {
			unused = append(unused, h)
		}
	}
	if err := st.purge(ctx, ws, unused, held); err != nil {
		return err
	}
	return st.setUsage(ctx, ws, func(int64) int64 { return bytes })
}

// purgeWorkers is how many chunk purges are in flight at once: one is a
// JetStream API round trip, and a large tree's snapshot has thousands.
const purgeWorkers = 16

// purge purges chunks hs, purgeWorkers at once, each only while held
// says the collector's lease is held.
func (st *snapStore) purge(ctx context.Context, ws string, hs []string, held func() error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	work := make(chan string)
	var wg sync.WaitGroup
	for range min(purgeWorkers, len(hs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for h := range work {
				err := held()
				if err == nil {
					err = stateErr("purge chunk", st.chunks.Purge(ctx, jetstream.WithPurgeSubject("outpost.chunk."+ws+"."+h)))
				}
				if err != nil {
					cancel(err)
				}
			}
		}()
	}
	for _, h := range hs {
		select {
		case work <- h:
		case <-ctx.Done():
		}
	}
	close(work)
	wg.Wait()
	return context.Cause(ctx)
}

// stateErr maps a JetStream failure to unavailable/state_unavailable; a
// wire error passes through.
func stateErr(what string, err error) error {
	if err == nil {
		return nil
	}
	var we *wire.Error
	if errors.As(err, &we) {
		return err
	}
	return wire.Errorf(wire.CodeUnavailable, wire.ReasonStateUnavailable, "%s: %v", what, err)
}
