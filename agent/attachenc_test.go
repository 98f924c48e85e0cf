package agent

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/outposthq/outpost/agent/proc"
	"github.com/outposthq/outpost/wire"
)

// TestEventsEncoderIsMarshal: the attach stream's events frames are the
// bytes wire.Marshal makes of the same result (what the control plane
// decodes), for results of every shape: no chunks, nil and empty data,
// each stream, data around msgpack's length boundaries, every optional
// field set or not, numbers at each width and negative ones; and they
// decode to the result.
func TestEventsEncoderIsMarshal(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	nums := []uint64{0, 1, 127, 128, 255, 256, 65535, 65536, math.MaxUint32, math.MaxUint32 + 1, math.MaxUint64}
	sizes := []int{0, 1, 31, 32, 255, 256, 65535, 65536}
	streams := []string{wire.StreamStdout, wire.StreamStderr, wire.StreamPTY}
	num := func() uint64 { return nums[rng.IntN(len(nums))] }
	var e eventsEncoder
	for i := range 2000 {
		res := proc.ReadResult{NextSeq: num()}
		for range rng.IntN(4) {
			c := proc.Chunk{Seq: num(), Stream: streams[rng.IntN(len(streams))]}
			if rng.IntN(5) > 0 {
				c.Data = bytes.Repeat([]byte{byte('a' + i%26)}, sizes[rng.IntN(len(sizes))])
			}
			res.Chunks = append(res.Chunks, c)
		}
		if rng.IntN(2) == 0 {
			res.ExitSeq = num()
			res.ExitCode = []int{0, 1, -1, 127, 128, 255, -129, math.MaxInt32, math.MinInt32}[rng.IntN(9)]
		}
		res.TimedOut = rng.IntN(4) == 0
		if rng.IntN(3) == 0 {
			res.ClosedSeq = num()
		}
		if rng.IntN(3) == 0 {
			res.Dropped = []int64{1, 200, 70000, math.MaxInt64, -1}[rng.IntN(5)]
		}
		want, wantN := wireRead(res)
		wb, err := wire.Marshal(want)
		if err != nil {
			t.Fatal(err)
		}
		got, n, err := e.encode(res)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, wb) || n != wantN {
			t.Fatalf("result %d %+v:\nencoded %x (%d bytes of output)\nMarshal %x (%d)", i, res, got, n, wb, wantN)
		}
		var back wire.ProcReadResult
		if err := wire.Unmarshal(got, &back); err != nil || back.NextSeq != res.NextSeq || len(back.Chunks) != len(res.Chunks) {
			t.Fatalf("result %d decodes to %+v, %v", i, back, err)
		}
	}
}

// TestEventsEncoderAllocatesNothing: a keystroke's echo (one chunk, the
// cursor) is encoded without an allocation.
func TestEventsEncoderAllocatesNothing(t *testing.T) {
	var e eventsEncoder
	res := proc.ReadResult{Chunks: []proc.Chunk{{Seq: 41, Stream: wire.StreamPTY, Data: []byte("k")}}, NextSeq: 41}
	if n := testing.AllocsPerRun(200, func() {
		if _, _, err := e.encode(res); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("%v allocations an events frame, want 0", n)
	}
}
