package controlplane

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/outposthq/outpost/internal/websocket"
	"github.com/outposthq/outpost/wire"
)

// TestStreamFrameNothingOfTheLast: events frames run one after another on
// one stream (each decoded into the storage of the one before) send the
// client what each frame holds and nothing of an earlier one: after a
// frame of several chunks, a gap, an exit and the close, shorter frames,
// frames without those fields and chunks without data; after a frame too
// large to keep, small ones again.
func TestStreamFrameNothingOfTheLast(t *testing.T) {
	accepted := make(chan *websocket.Conn, 1)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r)
		if err != nil {
			return
		}
		accepted <- c
	}))
	defer hs.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cc, _, err := websocket.Dial(ctx, hs.Client(), hs.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	var sc *websocket.Conn
	select {
	case sc = <-accepted:
	case <-ctx.Done():
		t.Fatal("no WebSocket accepted")
	}
	defer sc.Close()
	a := &attachment{conn: sc}
	st := &cpStream{id: "s1", end: make(chan struct{})}

	big := strings.Repeat("B", 5000) // over what a stream keeps between frames
	frames := []wire.ProcReadResult{
		{Chunks: []wire.ProcChunk{{Seq: 1, Stream: wire.StreamPTY, Data: []byte("a longer first chunk")}, {Seq: 2, Stream: wire.StreamStderr, Data: []byte("err one")}, {Seq: 3, Stream: wire.StreamPTY, Data: []byte("third")}}, NextSeq: 4, Dropped: 7},
		{Chunks: []wire.ProcChunk{{Seq: 4, Stream: wire.StreamPTY, Data: []byte("ab")}}, NextSeq: 5},
		{Chunks: []wire.ProcChunk{}, NextSeq: 6},
		{Chunks: []wire.ProcChunk{{Seq: 6, Stream: wire.StreamPTY}, {Seq: 7, Stream: wire.StreamPTY, Data: []byte{}}, {Seq: 8, Stream: wire.StreamPTY, Data: []byte("c")}}, NextSeq: 9},
		{Chunks: []wire.ProcChunk{{Seq: 9, Stream: wire.StreamPTY, Data: []byte(big)}, {Seq: 10, Stream: wire.StreamStderr, Data: []byte("e2")}}, NextSeq: 11},
		{Chunks: []wire.ProcChunk{{Seq: 11, Stream: wire.StreamPTY, Data: []byte("d")}}, NextSeq: 12},
		{Chunks: []wire.ProcChunk{{Seq: 12, Stream: wire.StreamStderr, Data: []byte("last")}}, NextSeq: 13, ExitSeq: 13, ExitCode: 3, ClosedSeq: 14},
	}
	want := []string{
		`T{"type":"dropped","bytes":7}`, "Ba longer first chunk", `T{"type":"output","stream":"stderr","data":"ZXJyIG9uZQ=="}`, "Bthird", `T{"type":"seq","seq":4}`,
		"Bab", `T{"type":"seq","seq":5}`,
		`T{"type":"seq","seq":6}`,
		"B", "B", "Bc", `T{"type":"seq","seq":9}`,
		"B" + big, `T{"type":"output","stream":"stderr","data":"ZTI="}`, `T{"type":"seq","seq":11}`,
		"Bd", `T{"type":"seq","seq":12}`,
		`T{"type":"output","stream":"stderr","data":"bGFzdA=="}`, `T{"type":"exit","exitCode":3}`, `T{"type":"seq","seq":13}`,
	}
	got := make(chan []string, 1)
	go func() {
		var msgs []string
		for range 2 * len(want) {
			op, p, err := cc.ReadMessage()
			if err != nil {
				msgs = append(msgs, "error: "+err.Error())
				break
			}
			kind := "B"
			if op == websocket.OpText {
				kind = "T"
			}
			if kind+string(p) == "Tend" {
				break
			}
			msgs = append(msgs, kind+string(p))
		}
		got <- msgs
	}()
	for _, res := range frames {
		body, err := wire.Marshal(&res)
		if err != nil {
			t.Fatal(err)
		}
		a.streamFrame(st, wire.AttachFrame{Kind: wire.AttachEvents, Data: bytes.Clone(body)})
	}
	// The end of the test's messages: nothing of an earlier frame comes
	// again before it.
	if err := sc.WriteMessage(websocket.OpText, []byte("end")); err != nil {
		t.Fatal(err)
	}
	var msgs []string
	select {
	case msgs = <-got:
	case <-ctx.Done():
		t.Fatal("the client did not get every message")
	}
	if fmt.Sprint(msgs) != fmt.Sprint(want) {
		for i := range max(len(msgs), len(want)) {
			var g, w string
			if i < len(msgs) {
				g = msgs[i]
			}
			if i < len(want) {
				w = want[i]
			}
			if g != w {
				t.Errorf("message %d: %.80q, want %.80q", i, g, w)
			}
		}
	}
	if !a.closedSeen {
		t.Error("the close was not seen")
	}
	select {
	case <-st.end:
	default:
		t.Error("the stream did not end at the close")
	}
}
