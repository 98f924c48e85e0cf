package controlplane

import (
	"context"
	"net"
	"net/http"
	"sync"
	"testing"

	"github.com/outposthq/outpost/controlplane/client"
	"github.com/outposthq/outpost/internal/websocket"
)

// earlyConn sends, with the first write (the upgrade request), a client
// frame typing early: the server has it read ahead, in the handshake's
// buffer, when it takes the connection over.
type earlyConn struct {
	net.Conn
	once  sync.Once
	early []byte
}

func (c *earlyConn) Write(p []byte) (int, error) {
	sent := false
	var err error
	c.once.Do(func() {
		_, err = c.Conn.Write(append(append([]byte(nil), p...), c.early...))
		sent = true
	})
	if sent {
		return len(p), err
	}
	return c.Conn.Write(p)
}

// maskedFrame is a client's binary frame carrying p.
func maskedFrame(p []byte) []byte {
	key := [4]byte{1, 2, 3, 4}
	f := []byte{0x82, 0x80 | byte(len(p))}
	f = append(f, key[:]...)
	for i, b := range p {
		f = append(f, b^key[i%4])
	}
	return f
}

// TestAttachInputReadAhead: input a client sends right behind its upgrade
// request, which the server reads with the request, is typed, once (the
// attach socket's connection is taken over with what was read ahead).
func TestAttachInputReadAhead(t *testing.T) {
	e := newPortsEnv(t)
	ctx := context.Background()
	cl, tgt := e.onlineAgent(t, "a1")
	st, err := tgt.StartProcess(ctx, client.StartProcessRequest{Argv: []string{"cat"}, Stdin: true})
	if err != nil {
		t.Fatal(err)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &earlyConn{Conn: c, early: maskedFrame([]byte("early\n"))}, nil
	}
	dctx, cancel := context.WithTimeout(ctx, waitLong)
	defer cancel()
	c, _, err := websocket.Dial(dctx, &http.Client{Transport: tr}, tgt.AttachURL(st.ID, 0), cl.AuthHeader())
	if err != nil {
		t.Fatalf("attach: dial: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	a := &attachClient{t: t, c: c}
	a.until("early\n")
	a.send("late\n")
	a.until("late\n")
	if got := a.out.String(); got != "early\nlate\n" {
		t.Fatalf("output %q, want early and late once each", got)
	}
}
