package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"testing"
)

func TestAttachFrameRoundTrip(t *testing.T) {
	tests := []struct {
		name    string
		f       AttachFrame
		toAgent bool
	}{
		{"write", AttachFrame{Kind: AttachWrite, Stream: "s1", N: 7, Data: []byte("ls\r")}, true},
		{"eof", AttachFrame{Kind: AttachEOF, Stream: "s1", N: 8}, true},
		{"credit", AttachFrame{Kind: AttachCredit, Stream: "s-2_x", N: 1 << 40}, true},
		{"close", AttachFrame{Kind: AttachClose, Stream: "s1"}, true},
		{"events", AttachFrame{Kind: AttachEvents, Data: []byte{0x80}}, false},
		{"ack", AttachFrame{Kind: AttachAck, N: 3}, false},
		{"ack with error", AttachFrame{Kind: AttachAck, N: 3, Data: []byte{0x81}}, false},
		{"end", AttachFrame{Kind: AttachEnd, Data: []byte("lease")}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := AppendAttachFrame(nil, tt.f, tt.toAgent)
			got, err := DecodeAttachFrame(b, tt.toAgent)
			if err != nil {
				t.Fatal(err)
			}
			if got.Kind != tt.f.Kind || got.Stream != tt.f.Stream || got.N != tt.f.N || !bytes.Equal(got.Data, tt.f.Data) {
				t.Fatalf("decoded %+v, want %+v", got, tt.f)
			}
			if tt.toAgent && b[0] != AttachMagic {
				t.Fatalf("first byte %#x, want AttachMagic", b[0])
			}
		})
	}
}

func TestAttachFrameBad(t *testing.T) {
	n := func(k AttachKind, v uint64) []byte { return binary.BigEndian.AppendUint64([]byte{byte(k)}, v) }
	to := func(stream string, rest []byte) []byte {
		return append(append([]byte{AttachMagic, byte(len(stream))}, stream...), rest...)
	}
	tests := []struct {
		name    string
		b       []byte
		toAgent bool
	}{
		{"empty", nil, false},
		{"short", []byte{'o', 1, 2}, false},
		{"no magic", n(AttachCredit, 1), true},
		{"pipe magic", append([]byte{PipeMagic, 1, 's'}, n(AttachCredit, 1)...), true},
		{"stream past the end", []byte{AttachMagic, 40, 's'}, true},
		{"stream with a dot", to("s.1", n(AttachCredit, 1)), true},
		{"empty stream", to("", n(AttachCredit, 1)), true},
		{"agent's kind to the agent", to("s1", n(AttachEvents, 1)), true},
		{"control plane's kind from the agent", n(AttachWrite, 1), false},
		{"unknown kind", n('q', 1), false},
		{"credit with data", to("s1", append(n(AttachCredit, 1), 'x')), true},
		{"write number 0", to("s1", append(n(AttachWrite, 0), 'x')), true},
		{"eof number 0", to("s1", n(AttachEOF, 0)), true},
		{"oversized write", to("s1", append(n(AttachWrite, 1), make([]byte, AttachWriteMax+1)...)), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := DecodeAttachFrame(tt.b, tt.toAgent); !errors.Is(err, ErrBadAttachFrame) {
				t.Fatalf("DecodeAttachFrame = %v, want ErrBadAttachFrame", err)
			}
		})
	}
}

func TestProcAttachRequestValidate(t *testing.T) {
	ok := ProcAttachRequest{ID: "p1", Owner: "o", Stream: "s1", WritePrefix: "abc-"}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	for name, r := range map[string]ProcAttachRequest{
		"no id":           {Owner: "o", Stream: "s"},
		"no owner":        {ID: "p1", Stream: "s"},
		"stream dot":      {ID: "p1", Owner: "o", Stream: "s.x"},
		"negative max":    {ID: "p1", Owner: "o", Stream: "s", MaxBytes: -1},
		"prefix too long": {ID: "p1", Owner: "o", Stream: "s", WritePrefix: string(make([]byte, MaxWriteIDLen))},
	} {
		if err := r.Validate(); err == nil {
			t.Errorf("%s: valid, want an error", name)
		}
	}
}

func FuzzDecodeAttachFrame(f *testing.F) {
	f.Add(AppendAttachFrame(nil, AttachFrame{Kind: AttachWrite, Stream: "s1", N: 1, Data: []byte("a")}, true), true)
	f.Add(AppendAttachFrame(nil, AttachFrame{Kind: AttachCredit, Stream: "s1", N: 9}, true), true)
	f.Add(AppendAttachFrame(nil, AttachFrame{Kind: AttachEOF, Stream: "s1", N: 2}, true), true)
	f.Add(AppendAttachFrame(nil, AttachFrame{Kind: AttachEvents, Data: []byte{0x81, 0xa4, 'n', 'e', 'x', 't', 0x01}}, false), false)
	f.Add(AppendAttachFrame(nil, AttachFrame{Kind: AttachAck, N: 4}, false), false)
	f.Add(AppendAttachFrame(nil, AttachFrame{Kind: AttachEnd, Data: []byte("bye")}, false), false)
	f.Add([]byte{AttachMagic, 200}, true)
	f.Add([]byte{}, false)
	f.Fuzz(func(t *testing.T, b []byte, toAgent bool) {
		fr, err := DecodeAttachFrame(b, toAgent)
		if err != nil {
			return
		}
		again := AppendAttachFrame(nil, fr, toAgent)
		if !bytes.Equal(again, b) {
			t.Fatalf("frame %x decodes to %+v, which encodes to %x", b, fr, again)
		}
	})
}

// FuzzReadAttachBulkFrame reads arbitrary bytes as a bulk connection's
// attach frames: never a panic, never more than the length said, a frame
// read encodes back to the bytes it came from, and reading into a reused
// buffer reads the same.
func FuzzReadAttachBulkFrame(f *testing.F) {
	two := AppendAttachBulkFrame(nil, AttachFrame{Kind: AttachWrite, Stream: "s1", N: 1, Data: []byte("a")}, true)
	two = AppendAttachBulkFrame(two, AttachFrame{Kind: AttachCredit, Stream: "s1", N: 9}, true)
	f.Add(two, true)
	f.Add(AppendAttachBulkFrame(nil, AttachFrame{Kind: AttachEvents, Data: []byte{0x81, 0xa4, 'n', 'e', 'x', 't', 0x01}}, false), false)
	f.Add(AppendAttachBulkFrame(nil, AttachFrame{Kind: AttachEnd, Data: []byte("bye")}, false), false)
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 'a'}, false)
	f.Add([]byte{0, 0, 0, 9, 'a', 0, 0}, false)
	f.Add([]byte{}, true)
	f.Fuzz(func(t *testing.T, b []byte, toAgent bool) {
		r := bytes.NewReader(b)
		// The same bytes read again into one reused buffer
		// (ReadAttachBulkFrameInto) give the same frames and errors.
		ri := bytes.NewReader(b)
		var buf []byte
		for {
			before := r.Len()
			fr, err := ReadAttachBulkFrame(r, toAgent)
			fi, bi, erri := ReadAttachBulkFrameInto(ri, buf, toAgent)
			buf = bi
			if (err == nil) != (erri == nil) || err != nil && err.Error() != erri.Error() {
				t.Fatalf("ReadAttachBulkFrame: %v; into a reused buffer: %v", err, erri)
			}
			if err != nil {
				return
			}
			if fi.Kind != fr.Kind || fi.Stream != fr.Stream || fi.N != fr.N || !bytes.Equal(fi.Data, fr.Data) {
				t.Fatalf("frame %+v; into a reused buffer %+v", fr, fi)
			}
			again := AppendAttachBulkFrame(nil, fr, toAgent)
			if read := b[len(b)-before : len(b)-r.Len()]; !bytes.Equal(again, read) {
				t.Fatalf("frame %x reads as %+v, which encodes to %x", read, fr, again)
			}
		}
	})
}

func TestAttachBulkFrames(t *testing.T) {
	var b []byte
	in := []AttachFrame{
		{Kind: AttachWrite, Stream: "s1", N: 1, Data: []byte("ls\r")},
		{Kind: AttachCredit, Stream: "s1", N: 7},
		{Kind: AttachClose, Stream: "s1"},
	}
	for _, f := range in {
		b = AppendAttachBulkFrame(b, f, true)
	}
	r := bytes.NewReader(b)
	for i, want := range in {
		got, err := ReadAttachBulkFrame(r, true)
		if err != nil || got.Kind != want.Kind || got.Stream != want.Stream || got.N != want.N || !bytes.Equal(got.Data, want.Data) {
			t.Fatalf("frame %d: %+v, %v; want %+v", i, got, err, want)
		}
	}
	if _, err := ReadAttachBulkFrame(r, true); !errors.Is(err, io.EOF) {
		t.Fatalf("after the last frame: %v, want EOF", err)
	}
	// Cut in a frame: not a clean end. Too long: refused before reading.
	cut := AppendAttachBulkFrame(nil, in[0], true)
	if _, err := ReadAttachBulkFrame(bytes.NewReader(cut[:len(cut)-1]), true); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("a frame cut short: %v, want ErrUnexpectedEOF", err)
	}
	long := binary.BigEndian.AppendUint32(nil, MaxAttachBulkFrame+1)
	if _, err := ReadAttachBulkFrame(bytes.NewReader(long), true); !errors.Is(err, ErrBadAttachFrame) {
		t.Fatalf("a frame over the bound: %v, want ErrBadAttachFrame", err)
	}
}

// TestReadAttachBulkFrameIntoReusesItsBuffer: frames read into the buffer
// of the one before are the frames written, and reading them allocates
// nothing.
func TestReadAttachBulkFrameIntoReusesItsBuffer(t *testing.T) {
	var stream []byte
	for i := range 300 {
		stream = AppendAttachBulkFrame(stream, AttachFrame{Kind: AttachEvents, N: uint64(i), Data: []byte{'a' + byte(i%26)}}, false)
	}
	r := bytes.NewReader(stream)
	var buf []byte
	i := 0
	if n := testing.AllocsPerRun(200, func() {
		f, b, err := ReadAttachBulkFrameInto(r, buf, false)
		if err != nil || f.Kind != AttachEvents || f.N != uint64(i) || string(f.Data) != string(rune('a'+i%26)) {
			t.Fatalf("frame %d: %+v, %v", i, f, err)
		}
		buf = b
		i++
	}); n != 0 {
		t.Errorf("%v allocations a frame, want 0", n)
	}
}
