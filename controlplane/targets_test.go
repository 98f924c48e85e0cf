package controlplane

import (
	"context"
	"net/http"
	"testing"

	"github.com/outposthq/outpost/rpc"
)

// recordingTarget records the idempotency key of each call.
type recordingTarget struct{ keys *[]string }

func (t recordingTarget) Name() string       { return "b1" }
func (t recordingTarget) Epoch() uint64      { return 7 }
func (t recordingTarget) LastAgent() string  { return "a1" }
func (t recordingTarget) Concurrent() target { return t }
func (t recordingTarget) Call(_ context.Context, _ string, _, _ any, opts rpc.CallOptions) error {
	*t.keys = append(*t.keys, opts.IdempotencyKey)
	return nil
}

// A target's Concurrent keeps the request's Idempotency-Key and drops the
// response-header updates, whichever order the decorators were applied in.
func TestConcurrentTarget(t *testing.T) {
	tests := []struct {
		name string
		wrap func(target, http.Header) target
	}{
		{"headers outside the key", func(b target, h http.Header) target { return routedHeaders(h, keyedTarget{target: b, key: "k"}) }},
		{"key outside the headers", func(b target, h http.Header) target { return keyedTarget{target: routedHeaders(h, b), key: "k"} }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var keys []string
			h := http.Header{}
			tgt := tc.wrap(recordingTarget{keys: &keys}, h)
			if h.Get(HeaderBackend) != "b1" {
				t.Fatalf("routed target set %q", h.Get(HeaderBackend))
			}
			h.Set(HeaderBackend, "untouched")
			c := tgt.Concurrent()
			if err := c.Call(context.Background(), "op", nil, nil, rpc.CallOptions{}); err != nil {
				t.Fatal(err)
			}
			if err := c.Call(context.Background(), "op", nil, nil, rpc.CallOptions{IdempotencyKey: "chunk@0"}); err != nil {
				t.Fatal(err)
			}
			if len(keys) != 2 || keys[0] != "k" || keys[1] != "chunk@0" {
				t.Errorf("keys %q, want [k chunk@0]", keys)
			}
			if got := h.Get(HeaderBackend); got != "untouched" {
				t.Errorf("a concurrent call set %s to %q", HeaderBackend, got)
			}
		})
	}
}
