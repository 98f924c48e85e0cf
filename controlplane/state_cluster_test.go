package controlplane

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/outposthq/outpost/internal/natstest"
)

// startCluster runs three nats-servers with JetStream, routed to each
// other on loopback, and returns them once JetStream has a leader.
func startCluster(t *testing.T) []*server.Server {
	t.Helper()
	ports := []int{freePort(t), freePort(t), freePort(t)}
	var servers []*server.Server
	for i := range ports {
		servers = append(servers, natstest.Start(t, func(o *server.Options) {
			o.ServerName = fmt.Sprintf("n%d", i)
			o.Cluster = server.ClusterOpts{Name: "test", Host: "127.0.0.1", Port: ports[i]}
			for j, p := range ports {
				if j != i {
					o.Routes = append(o.Routes, server.RoutesFromStr(fmt.Sprintf("nats://127.0.0.1:%d", p))...)
				}
			}
		}))
	}
	deadline := time.Now().Add(30 * time.Second)
	for !slices.ContainsFunc(servers, (*server.Server).JetStreamIsLeader) {
		if time.Now().After(deadline) {
			t.Fatal("no JetStream meta leader")
		}
		time.Sleep(50 * time.Millisecond)
	}
	return servers
}

// A replica that starts while another runs, or two that start together,
// never turn the buckets' direct gets on: a running replica that read its
// bucket's status while they were on (every kvjson.List does) sent its
// reads as direct gets, which no server answers once they are off again.
func TestStoreReplicasStartingKeepLeaderReads(t *testing.T) {
	servers := startCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	js := func(i int) jetstream.JetStream {
		js, err := jetstream.New(natstest.Connect(t, servers[i]))
		if err != nil {
			t.Fatal(err)
		}
		return js
	}

	// What every stream create or update asks for.
	var mu sync.Mutex
	var direct []string
	watcher := natstest.Connect(t, servers[2])
	for _, op := range []string{"CREATE", "UPDATE"} {
		_, err := watcher.Subscribe("$JS.API.STREAM."+op+".*", func(m *nats.Msg) {
			var cfg jetstream.StreamConfig
			if json.Unmarshal(m.Data, &cfg) == nil && cfg.AllowDirect && strings.HasPrefix(cfg.Name, "KV_outpost_") {
				mu.Lock()
				direct = append(direct, m.Subject)
				mu.Unlock()
			}
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := watcher.Flush(); err != nil {
		t.Fatal(err)
	}

	first, err := openStore(ctx, js(0), 3)
	if err != nil {
		t.Fatal(err)
	}
	defer first.close()
	if _, err := first.sessions.Put(ctx, "ws.s1", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}

	// Two more start together while the first reads its status and its
	// session, as a listing and a call would.
	var wg sync.WaitGroup
	stores := make([]*store, 2)
	errs := make([]error, 2)
	others := []jetstream.JetStream{js(1), js(2)} // here: js may t.Fatal, which a goroutine must not
	for i := range stores {
		wg.Go(func() { stores[i], errs[i] = openStore(ctx, others[i], 3) })
	}
	opened, done := make(chan struct{}), make(chan struct{})
	var readErr error
	go func() {
		defer close(done)
		for {
			select {
			case <-opened:
				return
			default:
			}
			if _, err := first.sessions.Status(ctx); err != nil {
				readErr = err
				return
			}
			if _, err := first.sessions.Get(ctx, "ws.s1"); err != nil {
				readErr = fmt.Errorf("reading a session while other replicas started: %w", err)
				return
			}
		}
	}()
	wg.Wait()
	close(opened)
	<-done
	for _, st := range stores {
		if st != nil {
			defer st.close()
		}
	}
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if readErr != nil {
		t.Error(readErr)
	}
	for i, st := range append([]*store{first}, stores...) {
		if _, err := st.sessions.Get(ctx, "ws.s1"); err != nil {
			t.Errorf("store %d: %v", i, err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(direct) > 0 {
		t.Errorf("direct gets turned on by %d requests, e.g. %s", len(direct), direct[0])
	}
}

// kvStreamConfig makes the stream CreateOrUpdateKeyValue makes, but for
// direct gets: a bucket made by either is the same to the other and to
// nats.go.
func TestKVStreamConfig(t *testing.T) {
	js, err := jetstream.New(natstest.Connect(t, natstest.Start(t)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, ttl := range []time.Duration{0, time.Minute, attachTicketTTL, maxLinkTTL + 24*time.Hour} {
		cfg := jetstream.KeyValueConfig{Description: "d", History: 1, TTL: ttl, Storage: jetstream.FileStorage, Replicas: 1}
		cfg.Bucket = fmt.Sprintf("kv_%d", ttl/time.Second)
		kv, err := js.CreateOrUpdateKeyValue(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		want, err := kv.Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		scfg := kvStreamConfig(cfg)
		if scfg.AllowDirect {
			t.Errorf("TTL %v: direct gets on", ttl)
		}
		scfg.AllowDirect = true
		// An update of the bucket nats.go made changes nothing.
		got, err := js.CreateOrUpdateStream(ctx, scfg)
		if err != nil {
			t.Fatalf("TTL %v: %v", ttl, err)
		}
		if w := want.(*jetstream.KeyValueBucketStatus).StreamInfo().Config; !reflect.DeepEqual(got.CachedInfo().Config, w) {
			t.Errorf("TTL %v: made\n%+v\nCreateOrUpdateKeyValue made\n%+v", ttl, got.CachedInfo().Config, w)
		}
		if _, err := js.KeyValue(ctx, cfg.Bucket); err != nil {
			t.Errorf("TTL %v: %v", ttl, err)
		}
	}
}
