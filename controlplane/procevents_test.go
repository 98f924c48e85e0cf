package controlplane

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/outposthq/outpost/agent/agenttest"
	"github.com/outposthq/outpost/controlplane/client"
	"github.com/outposthq/outpost/wire"
)

// TestEventsStreamKeepaliveAndUnavailable follows an events stream of a
// process that prints once and then nothing: while the agent holds the
// long poll, the stream carries a keepalive comment after every silence
// of eventsKeepalive (shortened here); when the agent goes away, the stream
// says so with an error event (503 unavailable, agent_offline) and ends,
// instead of falling silent.
func TestEventsStreamKeepaliveAndUnavailable(t *testing.T) {
	if eventsKeepalive > 15*time.Second {
		t.Fatalf("eventsKeepalive = %s, want at most 15 s", eventsKeepalive)
	}
	defaultKeepalive := eventsKeepalive
	t.Cleanup(func() { eventsKeepalive = defaultKeepalive }) // after the server's Close
	eventsKeepalive = 100 * time.Millisecond

	s := startServer(t, testConfig(t))
	ctx := context.Background()
	if _, err := adminClient(s).CreateWorkspace(ctx, "ws1"); err != nil {
		t.Fatal(err)
	}
	ta := enrollAgent(t, s, "ws1", "a1")
	polled := make(chan struct{}, 1)
	m, nc := serveMock(t, ta)
	m.Handle(wire.OpProcRead, func(req *wire.Request) (any, error) {
		var body wire.ProcReadRequest
		if err := req.DecodeBody(&body); err != nil {
			return nil, err
		}
		if body.After == 0 {
			return &wire.ProcReadResult{
				Chunks: []wire.ProcChunk{{Seq: 1, Stream: wire.StreamStdout, Data: []byte("hi\n")}}, NextSeq: 1}, nil
		}
		select {
		case polled <- struct{}{}:
		default:
		}
		return nil, agenttest.ErrNoReply // nothing new: the agent holds the long poll
	})
	waitFor(t, waitLong, "a1 online", func() bool { return s.presence.Get(ta.ag).Status == "online" })

	lines := openEvents(t, s, "/v1/workspaces/ws1/agents/a1/processes/p1/events")
	lines.want(t, waitLong, "id: 1", "event: output")
	select {
	case <-polled:
	case <-time.After(waitLong):
		t.Fatal("the stream's long poll never reached the agent")
	}
	// Three keepalives in 5 s of silence (one every 100 ms is due).
	deadline := time.Now().Add(5 * time.Second)
	for n := 0; n < 3; {
		switch got := lines.next(t, time.Until(deadline)); {
		case got == ": keepalive":
			n++
		case got != "" && !strings.HasPrefix(got, "data: "): // the output's data, blank lines
			t.Fatalf("line %q during the silence, want only keepalives", got)
		}
	}

	stopMock(m, nc)
	data := lines.want(t, 30*time.Second, "event: error", "data: ")
	var d client.ErrorDetail
	if err := json.Unmarshal([]byte(strings.TrimPrefix(data, "data: ")), &d); err != nil {
		t.Fatalf("error event data %q: %v", data, err)
	}
	if d.Code != wire.CodeUnavailable || d.Reason != wire.ReasonAgentOffline || d.Message == "" || !d.Retryable {
		t.Fatalf("error event %+v, want unavailable/agent_offline, retryable, with a message", d)
	}
	lines.wantEnd(t, 30*time.Second)
}

// sseLines are the lines of an events stream, as they arrive.
type sseLines struct {
	ch   chan string
	done chan struct{}
}

// openEvents GETs path as the admin and reads its lines until it ends.
func openEvents(t *testing.T, s *Server, path string) *sseLines {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, "GET", s.URL()+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+s.AdminToken())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("events: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	l := &sseLines{ch: make(chan string, 1024), done: make(chan struct{})}
	go func() {
		defer close(l.done)
		defer close(l.ch)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			l.ch <- sc.Text()
		}
	}()
	t.Cleanup(func() { cancel(); resp.Body.Close(); <-l.done })
	return l
}

// next is the next line; the stream's end fails the test.
func (l *sseLines) next(t *testing.T, d time.Duration) string {
	t.Helper()
	select {
	case line, ok := <-l.ch:
		if !ok {
			t.Fatal("the events stream ended")
		}
		return line
	case <-time.After(d):
		t.Fatalf("no line within %s", d)
	}
	return ""
}

// want skips lines until one equal to first, within d, and then wants the
// next to start with then, which it returns.
func (l *sseLines) want(t *testing.T, d time.Duration, first, then string) string {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		if l.next(t, time.Until(deadline)) == first {
			break
		}
	}
	got := l.next(t, time.Until(deadline))
	if !strings.HasPrefix(got, then) {
		t.Fatalf("line after %q is %q, want %q...", first, got, then)
	}
	return got
}

// wantEnd wants the stream to end within d, whatever lines come first.
func (l *sseLines) wantEnd(t *testing.T, d time.Duration) {
	t.Helper()
	timeout := time.After(d)
	for {
		select {
		case _, ok := <-l.ch:
			if !ok {
				return
			}
		case <-timeout:
			t.Fatalf("the events stream did not end within %s", d)
		}
	}
}
