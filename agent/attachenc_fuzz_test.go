package agent

import (
	"bytes"
	"math"
	"testing"

	"github.com/outposthq/outpost/agent/proc"
	"github.com/outposthq/outpost/wire"
)

// FuzzEventsEncoder holds the hand-written events encoder to wire.Marshal
// for any result: data cut into chunks at any points (nil and empty data
// too), any stream name (msgpack's str sizes 31/32, 255/256, ...), every
// number at any value, negative exit codes and drop counts. One encoder is
// reused across inputs (as a stream's is), so a frame that leaves anything
// of the one before in the buffer fails too. The seeds sit on msgpack's
// size classes: data of 31/32, 255/256, 65535/65536 bytes and numbers at
// each width's edge.
func FuzzEventsEncoder(f *testing.F) {
	type seed struct {
		next, exitSeq, closedSeq, seq uint64
		exit, dropped                 int64
		timedOut                      bool
		stream                        string
		data                          []byte
		cuts                          []byte
	}
	long := func(n int) []byte { return bytes.Repeat([]byte{'x'}, n) }
	seeds := []seed{
		{},
		{next: 1, seq: 1, stream: wire.StreamPTY, data: []byte("k"), cuts: []byte{1}},
		{next: math.MaxUint64, exitSeq: math.MaxUint64, closedSeq: math.MaxUint64, seq: math.MaxUint64, exit: math.MaxInt64, dropped: math.MaxInt64, timedOut: true, stream: wire.StreamStdout},
		{next: 127, exitSeq: 128, closedSeq: 255, seq: 256, exit: -1, dropped: -1, stream: wire.StreamStderr, data: long(31), cuts: []byte{31}},
		{next: 65535, exitSeq: 65536, closedSeq: math.MaxUint32, seq: math.MaxUint32 + 1, exit: math.MinInt64, dropped: math.MinInt64, data: long(32), cuts: []byte{0, 32}},
		{next: 1, exit: -32, dropped: -33, stream: string(long(31)), data: long(255), cuts: []byte{255}},
		{next: 1, exit: -128, dropped: -129, stream: string(long(32)), data: long(256), cuts: []byte{0, 0, 255, 1}},
		{next: 1, exit: -32768, dropped: -32769, stream: string(long(255)), data: long(65535), cuts: []byte{0xff}},
		{next: 1, exit: math.MinInt32, dropped: math.MinInt32 - 1, stream: string(long(256)), data: long(65536), cuts: []byte{0xfe}},
		{next: 1, exit: 128, dropped: 255, stream: string(long(65536)), data: long(70000), cuts: []byte{0xfd, 0xfc, 3}},
	}
	for _, s := range seeds {
		f.Add(s.next, s.exitSeq, s.closedSeq, s.seq, s.exit, s.dropped, s.timedOut, s.stream, s.data, s.cuts)
	}
	var e eventsEncoder
	f.Fuzz(func(t *testing.T, next, exitSeq, closedSeq, seq uint64, exit, dropped int64, timedOut bool, stream string, data, cuts []byte) {
		res := proc.ReadResult{NextSeq: next, ExitSeq: exitSeq, ExitCode: int(exit), TimedOut: timedOut, ClosedSeq: closedSeq, Dropped: dropped}
		// Each byte of cuts makes a chunk: 0xff nil data, 0xfe empty,
		// 0xfd all the rest, 0xfc a chunk of stream "", any other the
		// next that many bytes of data (all that is left if fewer).
		for i, c := range cuts {
			if i >= 16 {
				break
			}
			ch := proc.Chunk{Seq: seq + uint64(i), Stream: stream}
			switch c {
			case 0xff:
			case 0xfe:
				ch.Data = []byte{}
			case 0xfd:
				ch.Data, data = data, nil
			case 0xfc:
				ch.Stream = ""
			default:
				n := min(int(c), len(data))
				ch.Data, data = data[:n], data[n:]
			}
			res.Chunks = append(res.Chunks, ch)
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
			t.Fatalf("%+v:\nencoded %x (%d bytes of output)\nMarshal %x (%d)", res, got, n, wb, wantN)
		}
	})
}
