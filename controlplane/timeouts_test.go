package controlplane

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

// trickleEvery is how often a trickling client sends its next byte.
const trickleEvery = 5 * time.Second

// cutOffWithin is the generous bound on being cut off (the deadlines are
// 10 s; the machine is shared and noisy).
const cutOffWithin = 30 * time.Second

// TestTricklingClientIsCutOff is a client that sends a request a byte every
// 5 s, as a slowloris does: headers, the body of the unauthenticated
// enroll, or a body behind no or a bad token. The server closes the
// connection within the deadlines (10 s), never waits for the rest.
func TestTricklingClientIsCutOff(t *testing.T) {
	if unauthenticatedBodyTimeout > 10*time.Second || httpReadHeaderTimeout > 10*time.Second {
		t.Fatalf("deadlines %s (body), %s (headers); want at most 10 s", unauthenticatedBodyTimeout, httpReadHeaderTimeout)
	}
	s := startServer(t, testConfig(t))
	tests := []struct {
		name string
		// head is sent at once, then trickle a byte at a time.
		head, trickle string
		// wantStatus is the start of the answer, when one arrives before
		// the close ("" when none is due).
		wantStatus string
	}{
		{"headers", "POST /v1/enroll HTTP/1.1\r\nHost: x\r\n", "X-Slow: " + strings.Repeat("a", 20) + "\r\n\r\n", ""},
		{"enroll body", "POST /v1/enroll HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 200\r\n\r\n",
			`{"token":"` + strings.Repeat("t", 200), "HTTP/1.1 400"},
		{"body without a token", "POST /v1/workspaces HTTP/1.1\r\nHost: x\r\nContent-Length: 200\r\n\r\n",
			`{"id":"` + strings.Repeat("w", 200), "HTTP/1.1 401"},
		{"body with a bad token", "POST /v1/workspaces HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer nope\r\nTransfer-Encoding: chunked\r\n\r\n",
			"c8\r\n" + strings.Repeat("w", 200), "HTTP/1.1 401"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			conn, err := net.Dial("tcp", strings.TrimPrefix(s.URL(), "http://"))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			start := time.Now()
			if _, err := io.WriteString(conn, tt.head); err != nil {
				t.Fatal(err)
			}
			stop := make(chan struct{})
			defer close(stop)
			go trickle(conn, tt.trickle, stop)

			_ = conn.SetReadDeadline(start.Add(cutOffWithin))
			got, err := io.ReadAll(conn)
			took := time.Since(start)
			if errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatalf("still connected after %s (read %q)", took, got)
			}
			// A reset (the trickler wrote into the closed connection) may
			// cost the answer; a close is what is tested.
			if len(got) > 0 && tt.wantStatus != "" && !strings.HasPrefix(string(got), tt.wantStatus) {
				t.Fatalf("answer %q, want %s", got, tt.wantStatus)
			}
			t.Logf("cut off after %s (%v), answer %q", took.Round(time.Millisecond), err, firstLine(got))
		})
	}
}

// trickle writes data a byte every trickleEvery until stop or a failed
// write.
func trickle(conn net.Conn, data string, stop <-chan struct{}) {
	tick := time.NewTicker(trickleEvery)
	defer tick.Stop()
	for i := 0; i < len(data); i++ {
		if _, err := conn.Write([]byte{data[i]}); err != nil {
			return
		}
		select {
		case <-stop:
			return
		case <-tick.C:
		}
	}
}

func firstLine(b []byte) string {
	line, _, _ := strings.Cut(string(b), "\r\n")
	return line
}

// TestIdleConnectionIsClosed keeps a connection open after one call: the
// server closes it after the idle timeout (shortened here; 120 s in
// production).
func TestIdleConnectionIsClosed(t *testing.T) {
	if httpIdleTimeout != 120*time.Second {
		t.Fatalf("httpIdleTimeout = %s, want 120 s", httpIdleTimeout)
	}
	defer func(d time.Duration) { httpIdleTimeout = d }(httpIdleTimeout)
	httpIdleTimeout = 300 * time.Millisecond
	s := startServer(t, testConfig(t))

	conn, err := net.Dial("tcp", strings.TrimPrefix(s.URL(), "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(io.Discard, resp.Body); err != nil || resp.StatusCode != http.StatusOK || resp.Close {
		t.Fatalf("healthz: %d, close %v, %v; want 200 on a kept-alive connection", resp.StatusCode, resp.Close, err)
	}
	idleSince := time.Now()
	_ = conn.SetReadDeadline(idleSince.Add(10 * time.Second))
	rest, err := io.ReadAll(br)
	if errors.Is(err, os.ErrDeadlineExceeded) || len(rest) > 0 {
		t.Fatalf("idle connection still open after %s (read %q, %v)", time.Since(idleSince), rest, err)
	}
}
