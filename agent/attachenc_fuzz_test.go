package agent

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/outposthq/outpost/agent/proc"
	"github.com/outposthq/outpost/wire"
)

// FuzzEventsEncoder holds the hand-written events encoder to wire.Marshal
// for any result: data cut into chunks at any points (nil and empty data
// too), any stream name, every number at any value, negative exit codes
// and drop counts. Lengths are inputs (strPad, dataPad), so the seeds sit
// on each of msgpack's size classes, str 31/32, 255/256, 65535/65536 and
// bin 255/256, 65535/65536, without large inputs. One encoder is reused
// across inputs, as a stream's is: a frame that leaves anything of the
// one before in the buffer fails too.
func FuzzEventsEncoder(f *testing.F) {
	type seed struct {
		next, exitSeq, closedSeq, seq uint64
		exit, dropped                 int64
		timedOut                      bool
		stream                        string
		strPad                        uint32
		data                          []byte
		dataPad                       uint32
		cuts                          []byte
	}
	seeds := []seed{
		{},
		{next: 1, seq: 1, stream: wire.StreamPTY, data: []byte("k"), cuts: []byte{1}},
		{next: math.MaxUint64, exitSeq: math.MaxUint64, closedSeq: math.MaxUint64, seq: math.MaxUint64, exit: math.MaxInt64, dropped: math.MaxInt64, timedOut: true, stream: wire.StreamStdout, cuts: []byte{0xff, 0xfe}},
		{next: 127, exitSeq: 128, closedSeq: 255, seq: 256, exit: -1, dropped: -1, stream: wire.StreamStderr, dataPad: 31, cuts: []byte{0xfd}},
		{next: 65535, exitSeq: 65536, closedSeq: math.MaxUint32, seq: math.MaxUint32 + 1, exit: math.MinInt64, dropped: math.MinInt64, dataPad: 32, cuts: []byte{0, 0xfd}},
		{next: 1, exit: -32, dropped: -33, strPad: 31, dataPad: 255, cuts: []byte{0xfd}},
		{next: 1, exit: -128, dropped: -129, strPad: 32, dataPad: 256, cuts: []byte{0xfe, 0, 0xfd, 0xfc}},
		{next: 1, exit: -32768, dropped: -32769, strPad: 255, dataPad: 65535, cuts: []byte{0xfd}},
		{next: 1, exit: math.MinInt32, dropped: math.MinInt32 - 1, strPad: 256, dataPad: 65536, cuts: []byte{0xfd}},
		{next: 1, exit: 128, dropped: 255, strPad: 65535, dataPad: 65536 + 300, cuts: []byte{0xfc, 200, 0xfd}},
		{next: 1, exit: 255, dropped: 65536, strPad: 65536, data: []byte("x"), cuts: []byte{1}},
	}
	for _, s := range seeds {
		f.Add(s.next, s.exitSeq, s.closedSeq, s.seq, s.exit, s.dropped, s.timedOut, s.stream, s.strPad, s.data, s.dataPad, s.cuts)
	}
	var e eventsEncoder
	f.Fuzz(func(t *testing.T, next, exitSeq, closedSeq, seq uint64, exit, dropped int64, timedOut bool, stream string, strPad uint32, data []byte, dataPad uint32, cuts []byte) {
		stream += strings.Repeat("s", int(strPad%70000))
		data = append(data, bytes.Repeat([]byte{'d'}, int(dataPad%140000))...)
		res := proc.ReadResult{NextSeq: next, ExitSeq: exitSeq, ExitCode: int(exit), TimedOut: timedOut, ClosedSeq: closedSeq, Dropped: dropped}
		// Each byte of cuts makes a chunk: 0xff of nil data, 0xfe of
		// empty data, 0xfd of all the data left, 0xfc of stream "" and
		// no data, any other of the next that many bytes of data (what
		// is left if less).
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
			t.Fatalf("%d chunks, next %d:\nencoded %.200x (%d bytes, %d of output)\nMarshal %.200x (%d bytes, %d)", len(res.Chunks), res.NextSeq, got, len(got), n, wb, len(wb), wantN)
		}
	})
}
