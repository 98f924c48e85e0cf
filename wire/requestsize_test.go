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
