package main

import (
	"encoding/json"
	"testing"
)

// TestSeqFrame: the fast path reads the seq frames the control plane
// writes as encoding/json would, and leaves every other frame to it.
func TestSeqFrame(t *testing.T) {
	for _, in := range []string{`{"type":"seq"}`, `{"type":"seq","seq":1}`, `{"type":"seq","seq":18446744073709551615}`, `{"type":"seq","seq":42}`} {
		var m serverControl
		if err := json.Unmarshal([]byte(in), &m); err != nil {
			t.Fatal(err)
		}
		if got, ok := seqFrame([]byte(in)); !ok || got != m.Seq {
			t.Errorf("%s: %d %v, want %d", in, got, ok, m.Seq)
		}
	}
	for _, in := range []string{`{"type":"seq","seq":}`, `{"type":"seq","seq":-1}`, `{"type":"seq","seq":01}`, `{"type":"seq","seq":18446744073709551616}`,
		`{"type":"seq","seq":1,"x":2}`, `{"type":"exit","exitCode":0}`, `{"seq":1,"type":"seq"}`, `{"type":"seq","seq":1 }`, ``} {
		if got, ok := seqFrame([]byte(in)); ok {
			t.Errorf("%s: read as seq %d", in, got)
		}
	}
}

// FuzzSeqFrame: whatever the server sends, a frame the fast path takes
// is a seq frame to encoding/json too, with the same seq.
func FuzzSeqFrame(f *testing.F) {
	for _, s := range []string{`{"type":"seq"}`, `{"type":"seq","seq":1}`, `{"type":"seq","seq":01}`, `{"type":"exit","exitCode":3}`, `{"type":"seq","seq":18446744073709551616}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, p []byte) {
		seq, ok := seqFrame(p)
		if !ok {
			return
		}
		var m serverControl
		if err := json.Unmarshal(p, &m); err != nil || m.Type != "seq" || m.Seq != seq {
			t.Fatalf("%q: fast path seq %d; encoding/json %+v, %v", p, seq, m, err)
		}
	})
}
