package controlplane

import (
	"context"
	"io"
	"net"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/outposthq/outpost/agent"
	"github.com/outposthq/outpost/controlplane/client"
	"github.com/outposthq/outpost/enroll"
)

// A full admission makes the next connection wait; a slot given back lets
// one in, and giving it back twice frees only one.
func TestAdmissionLimit(t *testing.T) {
	a := newAdmission(2)
	r1, err := a.acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	r2, err := a.acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	done, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := a.acquire(done); err == nil {
		t.Fatal("a third connection was admitted past a limit of 2")
	}
	r1()
	r1() // a second release of the same slot frees nothing more
	r3, err := a.acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.acquire(done); err == nil {
		t.Fatal("a release given twice let two connections in")
	}
	r2()
	r3()
	if st := a.stats(); st.Admitted != 3 || st.Peak != 2 || st.Waiting != 0 || st.Limit != 2 {
		t.Fatalf("stats %+v, want 3 admitted, peak 2, none waiting, limit 2", st)
	}
}

// Under a queue the newest waiter is admitted first (the oldest is the
// nearest to giving up), and one that gives up leaves the queue.
func TestAdmissionNewestFirst(t *testing.T) {
	a := newAdmission(1)
	release, err := a.acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	type got struct {
		who     string
		release func()
	}
	admitted := make(chan got, 3)
	wait := func(who string, ctx context.Context, n int64) {
		go func() {
			if r, err := a.acquire(ctx); err == nil {
				admitted <- got{who, r}
			}
		}()
		for a.waiting.Load() != n {
			runtime.Gosched()
		}
	}
	gone, giveUp := context.WithCancel(context.Background())
	wait("old", context.Background(), 1)
	wait("gives up", gone, 2)
	wait("new", context.Background(), 3)
	giveUp()
	for a.waiting.Load() != 2 {
		runtime.Gosched()
	}
	release()
	first := <-admitted
	if first.who != "new" {
		t.Fatalf("%s admitted first, want the newest waiter", first.who)
	}
	first.release()
	if second := <-admitted; second.who != "old" {
		t.Fatalf("%s admitted second, want the oldest (the other gave up)", second.who)
	} else {
		second.release()
	}
	if st := a.stats(); st.Admitted != 3 || st.Peak != 1 || st.Waiting != 0 {
		t.Fatalf("stats %+v, want 3 admitted, peak 1, none waiting", st)
	}
}

// The slot is given back when the server has answered the CONNECT (its
// second line written to the agent), not at its INFO, nor after every
// later write; and once only, though the connection closes later.
func TestAdmissionEndsAtTheConnectAnswer(t *testing.T) {
	agent, serverSide := net.Pipe()
	defer agent.Close()
	go func() { _, _ = io.Copy(io.Discard, agent) }()
	released := 0
	c := &answeredConn{Conn: serverSide, done: func() { released++ }}
	want := []int{0, 0, 0, 1, 1}
	for i, s := range []string{"INFO {\"server_id\":\"x\"}", "\r\n", "PO", "NG\r\nMSG a 1 2\r\nhi\r\n", "PING\r\n"} {
		if _, err := c.Write([]byte(s)); err != nil {
			t.Fatal(err)
		}
		if released != want[i] {
			t.Fatalf("after write %d: released %d times, want %d", i, released, want[i])
		}
	}
}

// A connection that ends before the server answered its CONNECT gives
// its slot back when the server closes it.
func TestAdmissionEndsWithTheConnection(t *testing.T) {
	agent, serverSide := net.Pipe()
	defer agent.Close()
	go func() { _, _ = io.Copy(io.Discard, agent) }()
	a := newAdmission(1)
	release, err := a.acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	c := &answeredConn{Conn: serverSide, done: release}
	if _, err := c.Write([]byte("INFO {}\r\n")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := a.acquire(ctx); err == nil {
		t.Fatal("a second connection was admitted while the first was in its connect exchange")
	}
	_ = c.Close()
	ctx2, cancel2 := context.WithTimeout(context.Background(), waitShort)
	defer cancel2()
	if _, err := a.acquire(ctx2); err != nil {
		t.Fatalf("the slot was not given back at the close: %v", err)
	}
}

// Agents over wss that connect all at once are admitted one at a time
// (a limit of 1 here), and every one of them comes online.
func TestAgentsAdmittedOverWSS(t *testing.T) {
	cfg := testConfig(t)
	cfg.TLSSelfSigned = []string{"127.0.0.1"}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s.admit = newAdmission(1)
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	cl := client.New(s.URL(), s.AdminToken())
	cl.HTTP = trusting(t, s)
	if _, err := cl.CreateWorkspace(ctx, "ws1"); err != nil {
		t.Fatal(err)
	}
	const n = 12
	idents := make([]*enroll.Config, n)
	for i := range idents {
		idents[i] = enrollPinned(t, s, cl, "ws1", "a"+string(rune('a'+i)))
	}
	runCtx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() { stop(); wg.Wait() }()
	for _, ident := range idents {
		a, err := agent.New(agent.Config{Identity: ident, Root: t.TempDir(), HeartbeatInterval: heartbeatEvery, Logger: testLogger()})
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() { defer wg.Done(); _ = a.Run(runCtx) }()
	}
	waitFor(t, waitLong, "every agent online", func() bool { return s.presence.Counts()["online"] == n })
	st := s.Stats().Admission
	if st.Peak != 1 || st.Admitted < n {
		t.Fatalf("admission %+v: want a peak of 1 and at least %d admitted", st, n)
	}
}
