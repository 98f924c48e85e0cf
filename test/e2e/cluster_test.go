package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/outposthq/outpost/controlplane"
	"github.com/outposthq/outpost/controlplane/client"
	"github.com/outposthq/outpost/internal/websocket"
	"github.com/outposthq/outpost/wire"
)

// natsCluster is three nats-servers, in this process, on loopback, each
// configured from what `outpost nats-config` prints.
type natsCluster struct {
	t       testing.TB
	servers []*server.Server
	urls    []string
}

// startNATSCluster prepares stateDir as an operator would and starts a
// 3-node cluster that trusts its authority.
func startNATSCluster(t *testing.T, stateDir string) *natsCluster {
	t.Helper()
	const n = 3
	client, route := make([]int, n), make([]int, n)
	for i := range n {
		client[i], route[i] = freePort(t), freePort(t)
	}
	c := &natsCluster{t: t}
	for i := range n {
		var routes []string
		for j := range n {
			if j != i {
				routes = append(routes, "nats-route://127.0.0.1:"+strconv.Itoa(route[j]))
			}
		}
		dir := t.TempDir()
		conf, err := controlplane.PrepareExternal(stateDir, controlplane.NATSConfig{
			ServerName:    fmt.Sprintf("n%d", i),
			Listen:        "127.0.0.1:" + strconv.Itoa(client[i]),
			StoreDir:      filepath.Join(dir, "jetstream"),
			JWTDir:        filepath.Join(dir, "jwt"),
			ClusterName:   "outpost-e2e",
			ClusterListen: "127.0.0.1:" + strconv.Itoa(route[i]),
			Routes:        routes,
		})
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, "nats.conf")
		if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
			t.Fatal(err)
		}
		opts, err := server.ProcessConfigFile(path)
		if err != nil {
			t.Fatalf("the printed nats-server config does not load: %v\n%s", err, conf)
		}
		opts.NoSigs = true
		ns, err := server.NewServer(opts)
		if err != nil {
			t.Fatal(err)
		}
		go ns.Start()
		t.Cleanup(func() { ns.Shutdown(); ns.WaitForShutdown() })
		c.servers = append(c.servers, ns)
		c.urls = append(c.urls, "nats://127.0.0.1:"+strconv.Itoa(client[i]))
	}
	for _, ns := range c.servers {
		if !ns.ReadyForConnections(startTimeout) {
			t.Fatalf("nats %s not ready", ns.Name())
		}
	}
	return c
}

// serverOf is the index of the server holding a client connection named
// name, or -1.
func (c *natsCluster) serverOf(name string) int {
	for i, ns := range c.servers {
		if !ns.Running() {
			continue
		}
		cz, err := ns.Connz(&server.ConnzOptions{})
		if err != nil {
			continue
		}
		for _, ci := range cz.Conns {
			if ci.Name == name {
				return i
			}
		}
	}
	return -1
}

// startReplica runs `outpost serve` against the cluster from its own copy
// of the prepared state dir.
func startReplica(t *testing.T, prepared string, urls []string) *controlPlane {
	t.Helper()
	dir := privateDir(t)
	copyDir(t, prepared, dir)
	tok, err := os.ReadFile(filepath.Join(dir, "admin-token"))
	if err != nil {
		t.Fatal(err)
	}
	cp := &controlPlane{t: t, httpPort: freePort(t), stateDir: dir}
	cp.url = "http://127.0.0.1:" + strconv.Itoa(cp.httpPort)
	cp.cl = client.New(cp.url, strings.TrimSpace(string(tok)))
	nats := strings.Join(urls, ",")
	cp.proc = startProc(t, nil, "serve",
		"--listen", "127.0.0.1:"+strconv.Itoa(cp.httpPort),
		"--state-dir", dir, "--nats-url", nats, "--public-nats-url", nats)
	waitHealthy(t, cp.proc, cp.url, 60*time.Second)

	return cp
}

// copyDir copies the regular files of src into dst, modes kept.
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		to := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(to, 0o700)
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(to, b, info.Mode().Perm())
	})
	if err != nil {
		t.Fatal(err)
	}
}

// pinConfig makes an agent's config name one server only: the agent starts
// there and finds the others through the cluster's gossip.
func pinConfig(t *testing.T, path, url string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	m["natsUrls"] = []string{url}
	if b, err = json.Marshal(m); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// pwd runs pwd on target and returns its output.
func pwd(ctx context.Context, target *client.Target) (string, error) {
	res, err := target.Exec(ctx, client.ExecRequest{Argv: []string{"pwd"}})
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(res.Stdout), nil
}

// TestCluster runs two control-plane replicas with no state of their own on
// a 3-node NATS cluster, with agents on different nodes.
func TestCluster(t *testing.T) {
	prepared := t.TempDir()
	nc := startNATSCluster(t, prepared)
	a := startReplica(t, prepared, nc.urls)
	b := startReplica(t, prepared, nc.urls)
	replicas := []*controlPlane{a, b}

	ws := a.workspace("scale")
	var agents []*agentProc
	for i := range nc.servers {
		id := fmt.Sprintf("a%d", i)
		cfg := a.enroll(ws, id, "")
		pinConfig(t, cfg, nc.urls[i])
		root, err := filepath.EvalSymlinks(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		agents = append(agents, startAgent(t, cfg, root))
	}
	for i, ag := range agents {
		id := fmt.Sprintf("a%d", i)
		for _, cp := range replicas {
			cp.waitStatus(ws, id, "online")
		}
		if got := nc.serverOf("outpost-agent " + ws + "/" + id); got != i {
			t.Errorf("agent %s is on server %d, want %d", id, got, i)
		}
		_ = ag
	}

	t.Run("every replica reaches every agent", func(t *testing.T) {
		for r, cp := range replicas {
			for i, ag := range agents {
				got, err := pwd(ctx(t), cp.cl.Agent(ws, fmt.Sprintf("a%d", i)))
				if err != nil || got != ag.root {
					t.Errorf("replica %d, agent a%d: pwd %q, %v; want %q", r, i, got, err, ag.root)
				}
			}
		}
	})

	t.Run("a swap through one replica is obeyed by the other", func(t *testing.T) {
		_, err := a.cl.CreateSession(ctx(t), ws, laptopAndCloud("s1"))
		if err != nil {
			t.Fatal(err)
		}
		if got, err := pwd(ctx(t), b.cl.Session(ws, "s1")); err != nil || got != agents[0].root {
			t.Fatalf("before the swap, through the other replica: %q, %v", got, err)
		}
		if _, err := a.cl.SwapSession(ctx(t), ws, "s1", "cloud", 0); err != nil {
			t.Fatal(err)
		}
		var route client.Route
		got, err := pwd(client.WithRoute(ctx(t), &route), b.cl.Session(ws, "s1"))
		if err != nil || got != agents[1].root || route.Backend != "cloud" {
			t.Fatalf("after the swap, through the other replica: %q on %q, %v; want a1's root on cloud", got, route.Backend, err)
		}
	})

	// Direct gets, which any replica answers with what it has applied so
	// far, are off in every bucket: reads go to the stream's leader.
	t.Run("every bucket is read from its leader", func(t *testing.T) {
		jsz, err := nc.servers[0].Jsz(&server.JSzOptions{Accounts: true, Streams: true, Config: true})
		if err != nil {
			t.Fatal(err)
		}
		buckets := 0
		for _, acc := range jsz.AccountDetails {
			for _, st := range acc.Streams {
				if !strings.HasPrefix(st.Name, "KV_outpost_") || st.Config == nil {
					continue
				}
				buckets++
				if st.Config.AllowDirect {
					t.Errorf("%s: direct gets on, with %d replicas", st.Name, st.Config.Replicas)
				}
			}
		}
		if buckets < 10 {
			t.Fatalf("%d outpost buckets on node 0, want every one of them", buckets)
		}
	})

	// A replica reads what the other wrote as soon as the write returned
	// (with direct gets, a lagging follower could answer "not found" or
	// the value before).
	t.Run("a write through one replica is read at once through the other", func(t *testing.T) {
		// Eight clients at once, so that the followers have writes to
		// catch up with while the reads come.
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for w := range 8 {
			wg.Go(func() {
				for i := range 15 {
					if err := writeThenRead(ctx(t), a.cl, b.cl, ws, fmt.Sprintf("rw%d-%d", w, i)); err != nil {
						errs <- err
						return
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
	})

	t.Run("an attach ticket made on one replica opens the attach on the other, once", func(t *testing.T) {
		tgt := a.cl.Agent(ws, "a0")
		st, err := tgt.StartProcess(ctx(t), client.StartProcessRequest{Command: "echo via-ticket"})
		if err != nil {
			t.Fatal(err)
		}
		tk, err := tgt.CreateAttachTicket(ctx(t), st.ID)
		if err != nil {
			t.Fatal(err)
		}
		u := b.cl.Agent(ws, "a0").AttachURL(st.ID, 0) + "?ticket=" + tk.Ticket
		c, _, err := websocket.Dial(ctx(t), b.cl.HTTPClient(), u, nil)
		if err != nil {
			t.Fatalf("attach on the other replica: %v", err)
		}
		var out strings.Builder
		for {
			op, p, err := c.ReadMessage()
			if err != nil {
				break
			}
			if op == websocket.OpBinary {
				out.Write(p)
			}
		}
		c.Close()
		if out.String() != "via-ticket\n" {
			t.Fatalf("output %q through the ticket, want via-ticket", out.String())
		}
		for _, cp := range replicas {
			u := cp.cl.Agent(ws, "a0").AttachURL(st.ID, 0) + "?ticket=" + tk.Ticket
			_, resp, err := websocket.Dial(ctx(t), cp.cl.HTTPClient(), u, nil)
			if !errors.Is(err, websocket.ErrNotUpgraded) || resp.StatusCode != http.StatusUnauthorized {
				t.Fatalf("the ticket used again: %v, %v; want 401", resp, err)
			}
			resp.Body.Close()
		}
	})

	t.Run("presence agrees on both replicas", func(t *testing.T) {
		agents[2].stop()
		for _, cp := range replicas {
			cp.waitStatus(ws, "a2", "offline")
		}
	})

	// A snapshot taken before a NATS node stops is listed and restored
	// after it: its chunks, manifest and record are replicated (R3).
	work := filepath.Join(agents[0].root, "work")
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	workSums := map[string]string{}
	for i := range 5 {
		name := fmt.Sprintf("f%d.bin", i)
		workSums[name] = writeRandom(t, filepath.Join(work, name), 300_000+i)
	}
	sn, err := a.cl.Agent(ws, "a0").CreateSnapshot(ctx(t), client.CreateSnapshotRequest{Path: "work"})
	if err != nil {
		t.Fatalf("snapshot before the node stops: %v", err)
	}

	t.Run("a NATS node stops: no state lost, agents move", func(t *testing.T) {
		nc.servers[0].Shutdown()
		nc.servers[0].WaitForShutdown()
		for r, cp := range replicas {
			waitFor(t, statusTimeout, "a0 reachable again", func() error {
				got, err := pwd(ctx(t), cp.cl.Agent(ws, "a0"))
				if err == nil && got != agents[0].root {
					return errStop{fmt.Errorf("replica %d: pwd %q", r, got)}
				}
				// While the cluster recovers, the answer is "try again".
				if err != nil && !errors.Is(err, &wire.Error{Code: wire.CodeUnavailable}) {
					return errStop{fmt.Errorf("replica %d: %w, want 503 unavailable", r, err)}
				}
				return err
			})
			list, err := cp.cl.ListAgents(ctx(t), ws)
			if err != nil || len(list) != 3 {
				t.Fatalf("replica %d lists %d agents, %v; want 3", r, len(list), err)
			}
			if s, err := cp.cl.GetSession(ctx(t), ws, "s1"); err != nil || s.Active != "cloud" {
				t.Fatalf("replica %d: session %+v, %v; want active cloud", r, s, err)
			}
		}
		if got := nc.serverOf("outpost-agent " + ws + "/a0"); got < 1 {
			t.Errorf("a0 is on server %d, want another running one", got)
		}
		for r, cp := range replicas {
			snaps, err := cp.cl.ListSnapshots(ctx(t), ws)
			if err != nil || len(snaps) != 1 || snaps[0].ID != sn.ID {
				t.Fatalf("replica %d after the node stopped: snapshots %+v, %v", r, snaps, err)
			}
		}
		res, err := b.cl.Agent(ws, "a0").RestoreSnapshot(ctx(t), sn.ID, client.RestoreSnapshotRequest{Path: "restored"})
		if err != nil || res.Files != len(workSums) {
			t.Fatalf("restore after the node stopped: %+v, %v", res, err)
		}
		for name, want := range workSums {
			b, err := os.ReadFile(filepath.Join(agents[0].root, "restored", name))
			if err != nil || sha256Hex(b) != want {
				t.Errorf("restored %s: %v, content differs", name, err)
			}
		}
	})

	t.Run("a revocation through a replica reaches every server", func(t *testing.T) {
		// a1 is connected to a server other than the one b pushes through
		// at least some of the time; either way it must be cut off.
		if err := b.cl.RevokeAgent(ctx(t), ws, "a1"); err != nil {
			t.Fatal(err)
		}
		select {
		case <-agents[1].proc.done:
		case <-time.After(15 * time.Second):
			t.Fatalf("revoked daemon still running; output:\n%s", agents[1].proc.output())
		}
		if out := agents[1].proc.output(); !strings.Contains(out, "re-enroll") {
			t.Fatalf("revoked daemon did not say why; output:\n%s", out)
		}
	})
}

// writeThenRead creates session id through a and reads it through b, swaps
// it through a and reads it through b, and deletes it: each read must see
// the write that returned before it.
func writeThenRead(ctx context.Context, a, b *client.Client, ws, id string) error {
	if _, err := a.CreateSession(ctx, ws, laptopAndCloud(id)); err != nil {
		return fmt.Errorf("create session %s through A: %w", id, err)
	}
	if got, err := b.GetSession(ctx, ws, id); err != nil || got.Active != "laptop" {
		return fmt.Errorf("session %s just created through A, through B: %+v, %v", id, got, err)
	}
	if _, err := a.SwapSession(ctx, ws, id, "cloud", 0); err != nil {
		return fmt.Errorf("swap session %s through A: %w", id, err)
	}
	if got, err := b.GetSession(ctx, ws, id); err != nil || got.Active != "cloud" {
		return fmt.Errorf("session %s just swapped through A, through B: %+v, %v; want active cloud", id, got, err)
	}
	if err := a.DeleteSession(ctx, ws, id); err != nil {
		return fmt.Errorf("delete session %s through A: %w", id, err)
	}
	return nil
}

// laptopAndCloud is session id with a0 as its backend "laptop", active,
// and a1 as "cloud".
func laptopAndCloud(id string) client.CreateSessionRequest {
	return client.CreateSessionRequest{
		ID: id,
		Backends: map[string]client.SessionBackend{
			"laptop": {Kind: "agent", Agent: "a0"},
			"cloud":  {Kind: "agent", Agent: "a1"},
		},
		Active: "laptop",
	}
}
