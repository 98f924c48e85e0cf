package natstest

import (
	"bufio"
	"fmt"
	"net"
	"runtime"
	"runtime/metrics"
	"strings"
	"testing"
	"time"
)

// conns is how many connections the test measures: enough that their
// stacks stand far above what the rest of the process's goroutines do.
const conns = 200

// stacksBytes is the memory the process's goroutine stacks hold.
func stacksBytes() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/stacks:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// rawClient is a NATS client that speaks the protocol on a bare socket: it
// has no goroutine of its own, so the stacks measured are the server's.
type rawClient struct {
	c net.Conn
	r *bufio.Reader
}

func dialRaw(t *testing.T, addr string) *rawClient {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	rc := &rawClient{c: c, r: bufio.NewReader(c)}
	rc.expect(t, "INFO ")
	return rc
}

func (rc *rawClient) send(t *testing.T, s string) {
	t.Helper()
	if _, err := rc.c.Write([]byte(s)); err != nil {
		t.Fatal(err)
	}
}

// expect reads lines until one starts with prefix.
func (rc *rawClient) expect(t *testing.T, prefix string) {
	t.Helper()
	rc.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		line, err := rc.r.ReadString('\n')
		if err != nil {
			t.Fatalf("waiting for %q: %v", prefix, err)
		}
		if strings.HasPrefix(line, prefix) {
			return
		}
	}
}

// An agent's connection costs the server two goroutines, and what they do
// when a message or a pong goes out to the agent decides their stacks:
// nats-server v2.15's flushOutbound kept a 24 KiB array on its stack, so
// every connection that had been sent anything held a 32 KiB stack until
// the next collections shrank it, and got it back at the next message (at
// 10,000 agents, 400 of serve's 1,065 MiB; BENCHMARKS.md, "the write
// loops' stacks"). third_party/nats-server.patch moves it off the stack.
// Measured here: the stacks the server's goroutines gain when each of 200
// idle connections is sent one message.
func TestServerFlushKeepsStacksSmall(t *testing.T) {
	s := Start(t)
	addr := strings.TrimPrefix(s.ClientURL(), "nats://")
	clients := make([]*rawClient, conns)
	for i := range clients {
		clients[i] = dialRaw(t, addr)
		clients[i].send(t, fmt.Sprintf("CONNECT {\"verbose\":false,\"pedantic\":false}\r\nSUB s.%d 1\r\nPING\r\n", i))
		clients[i].expect(t, "PONG")
	}
	pub := dialRaw(t, addr)
	pub.send(t, "CONNECT {\"verbose\":false,\"pedantic\":false}\r\nPING\r\n")
	pub.expect(t, "PONG")

	// Collections shrink every idle stack (each halving one used under a
	// quarter): what the connections' setup grew is gone.
	for range 4 {
		runtime.GC()
	}
	before := stacksBytes()
	var b strings.Builder
	for i := range clients {
		fmt.Fprintf(&b, "PUB s.%d 2\r\nhi\r\n", i)
	}
	b.WriteString("PING\r\n")
	pub.send(t, b.String())
	pub.expect(t, "PONG")
	for i, c := range clients {
		c.expect(t, fmt.Sprintf("MSG s.%d 1 2", i))
	}
	grew := int64(stacksBytes()) - int64(before)
	t.Logf("the server's stacks grew by %d KiB for %d connections sent a message (%.1f KiB each)", grew>>10, conns, float64(grew)/conns/1024)
	if per := grew / conns; per > 8<<10 {
		t.Fatalf("each connection sent a message grew the stacks by %.1f KiB, want at most 8 (a flush's array on the stack makes 24 or more)", float64(per)/1024)
	}
}
