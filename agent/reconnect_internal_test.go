package agent

import (
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// TestConnectDeadlineEndsAStuckHandshake: a server that accepts TCP and
// never answers the TLS handshake of a wss:// connection ends the attempt
// with a timeout (nats.go alone waited forever: its deadline comes after
// the handshake), so the agent's reconnect loop goes on.
func TestConnectDeadlineEndsAStuckHandshake(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		conns []net.Conn
		wg    sync.WaitGroup
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c) // held open, never answered
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
	})

	done := make(chan error, 1)
	go func() {
		nc, err := nats.Connect("wss://"+ln.Addr().String()+"/v1/nats", nats.Timeout(time.Second), connectDeadline(300*time.Millisecond))
		if err == nil {
			nc.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() {
			t.Fatalf("connect to a server that never answers TLS: %v, want a timeout", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("connect to a server that never answers TLS still waiting after 20 s")
	}
}
