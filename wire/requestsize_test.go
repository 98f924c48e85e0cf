package wire

import (
	"math"
	"strings"
	"testing"
	"time"
)

// A request's buffer is sized from its strings and body plus requestSlack:
// the largest numbers every field can hold, with the widest string and bin
// headers, must still fit, or the buffer would grow (a copy) while
// encoding.
func TestRequestSlackCoversTheFields(t *testing.T) {
	long := strings.Repeat("x", 70000) // a str32 / bin32 header
	r := &Request{
		Version: math.MaxInt64, ID: long, Op: long, Deadline: math.MinInt64,
		Session: long, Epoch: math.MaxUint64, StartBy: math.MinInt64, IdempotencyKey: long,
		Body: []byte(long),
	}
	b, err := r.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	fixed := len(b) - len(r.ID) - len(r.Op) - len(r.Session) - len(r.IdempotencyKey) - len(r.Body)
	if fixed > requestSlack {
		t.Fatalf("a request's fields besides its strings and body take %d bytes, more than requestSlack (%d)", fixed, requestSlack)
	}
	if len(b) > r.sizeHint() {
		t.Fatalf("encoded %d bytes, sized for %d", len(b), r.sizeHint())
	}
}

// BenchmarkRequestMarshal is a request without a body (capabilities: half
// the load tool's calls), as the control plane encodes one per call.
func BenchmarkRequestMarshal(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		r, err := NewRequest(OpCapabilities, nil, time.Now().Add(10*time.Second))
		if err != nil {
			b.Fatal(err)
		}
		r.StartBy = r.Deadline
		if _, err := EncodeRequest(r, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// The size hint only sizes the first buffer: requests whose strings and
// body are far longer than it (or empty) encode whole and decode to the
// same fields, through Marshal and through EncodeRequest with a body.
func TestRequestSizeHintNeverTruncates(t *testing.T) {
	for _, n := range []int{0, 1, 87, 128, 129, 4096, 1 << 20} {
		s := strings.Repeat("é", n/2+1)
		body := &FsWriteRequest{FsWriteOptions: FsWriteOptions{Path: s}, Data: []byte(strings.Repeat("d", n))}
		r, err := NewRequest(OpFsWrite, body, time.UnixMilli(math.MaxInt64))
		if err != nil {
			t.Fatal(err)
		}
		r.Session, r.Epoch, r.StartBy, r.IdempotencyKey = s, math.MaxUint64, math.MaxInt64, s
		whole, err := r.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		r2 := *r
		r2.Body = nil
		direct, err := EncodeRequest(&r2, body)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range [][]byte{whole, direct} {
			got, err := DecodeRequest(b)
			if err != nil {
				t.Fatalf("%d: decode: %v", n, err)
			}
			var gb FsWriteRequest
			if err := got.DecodeBody(&gb); err != nil {
				t.Fatalf("%d: body: %v", n, err)
			}
			if got.ID != r.ID || got.Op != r.Op || got.Session != s || got.IdempotencyKey != s || got.Epoch != r.Epoch ||
				got.StartBy != r.StartBy || got.Deadline != r.Deadline || got.Version != r.Version ||
				gb.Path != s || string(gb.Data) != string(body.Data) {
				t.Fatalf("%d: request came back as %+v (body path %d bytes, data %d bytes)", n, got, len(gb.Path), len(gb.Data))
			}
		}
	}
}
