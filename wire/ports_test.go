package wire

import (
	"bytes"
	"errors"
	"testing"
)

func TestFrameRoundTrip(t *testing.T) {
	tests := []struct {
		name     string
		f        Frame
		withPipe bool
	}{
		{name: "data to agent", f: Frame{Kind: FrameData, Pipe: "p1", Off: 1 << 40, Data: []byte("hello")}, withPipe: true},
		{name: "data from agent", f: Frame{Kind: FrameData, Off: 7, Data: []byte{0, 1, 2}}},
		{name: "credit", f: Frame{Kind: FrameCredit, Pipe: "Zz-_9", Off: 4 << 20}, withPipe: true},
		{name: "eof", f: Frame{Kind: FrameEOF, Off: 12}},
		{name: "reset with reason", f: Frame{Kind: FrameReset, Data: []byte("connection reset")}},
		{name: "empty data", f: Frame{Kind: FrameData, Off: 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := AppendFrame(nil, tt.f, tt.withPipe)
			got, err := DecodeFrame(b, tt.withPipe)
			if err != nil {
				t.Fatalf("DecodeFrame: %v", err)
			}
			if got.Kind != tt.f.Kind || got.Pipe != tt.f.Pipe || got.Off != tt.f.Off || !bytes.Equal(got.Data, tt.f.Data) {
				t.Fatalf("got %+v, want %+v", got, tt.f)
			}
		})
	}
}

func TestDecodeFrameRefuses(t *testing.T) {
	tests := []struct {
		name     string
		b        []byte
		withPipe bool
	}{
		{name: "empty", b: nil},
		{name: "short", b: []byte{'d', 0, 0}},
		{name: "unknown kind", b: append([]byte{'x'}, make([]byte, 8)...)},
		{name: "credit with data", b: append([]byte{'c'}, make([]byte, 9)...)},
		{name: "no magic", b: append([]byte{0x02, 1, 'p', 'd'}, make([]byte, 8)...), withPipe: true},
		{name: "pipe id past the end", b: []byte{PipeMagic, 40, 'p'}, withPipe: true},
		{name: "pipe id with a dot", b: append([]byte{PipeMagic, 3, 'p', '.', 'q', 'd'}, make([]byte, 8)...), withPipe: true},
		{name: "empty pipe id", b: append([]byte{PipeMagic, 0, 'd'}, make([]byte, 8)...), withPipe: true},
		{name: "oversized data", b: append(append([]byte{'d'}, make([]byte, 8)...), make([]byte, PipeChunk+1)...)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := DecodeFrame(tt.b, tt.withPipe); !errors.Is(err, ErrBadFrame) {
				t.Fatalf("DecodeFrame = %v, want ErrBadFrame", err)
			}
		})
	}
}

func FuzzDecodeFrame(f *testing.F) {
	f.Add(AppendFrame(nil, Frame{Kind: FrameData, Pipe: "p1", Off: 9, Data: []byte("x")}, true), true)
	f.Add(AppendFrame(nil, Frame{Kind: FrameCredit, Off: 9}, false), false)
	f.Add(AppendFrame(nil, Frame{Kind: FrameReset, Data: []byte("bye")}, false), false)
	f.Add([]byte{PipeMagic, 200}, true)
	f.Add([]byte{}, false)
	f.Fuzz(func(t *testing.T, b []byte, withPipe bool) {
		fr, err := DecodeFrame(b, withPipe)
		if err != nil {
			return
		}
		again := AppendFrame(nil, fr, withPipe)
		if !bytes.Equal(again, b) {
			t.Fatalf("frame %x decodes to %+v, which encodes to %x", b, fr, again)
		}
	})
}

func TestPortOpenRequestValidate(t *testing.T) {
	tests := []struct {
		name string
		r    PortOpenRequest
		ok   bool
	}{
		{name: "ok", r: PortOpenRequest{Port: 8080, Owner: "o", Pipe: "p"}, ok: true},
		{name: "port 0", r: PortOpenRequest{Port: 0, Owner: "o", Pipe: "p"}},
		{name: "port too big", r: PortOpenRequest{Port: 65536, Owner: "o", Pipe: "p"}},
		{name: "no pipe", r: PortOpenRequest{Port: 1, Owner: "o"}},
		{name: "window too big", r: PortOpenRequest{Port: 1, Owner: "o", Pipe: "p", Window: MaxPipeWindow + 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.r.Validate()
			if (err == nil) != tt.ok {
				t.Fatalf("Validate = %v, want ok %v", err, tt.ok)
			}
			if err != nil && !errors.Is(err, ErrInvalidArgument) {
				t.Fatalf("Validate = %v, want invalid_argument", err)
			}
		})
	}
}

func TestKindOf(t *testing.T) {
	for _, tt := range []struct {
		b        []byte
		withPipe bool
		want     FrameKind
	}{
		{AppendFrame(nil, Frame{Kind: FrameData, Pipe: "p1", Data: []byte("x")}, true), true, FrameData},
		{AppendFrame(nil, Frame{Kind: FrameAck, Off: 3}, false), false, FrameAck},
		{[]byte{PipeMagic, 200, 'p'}, true, 0},
		{[]byte{PipeMagic}, true, 0},
		{nil, false, 0},
	} {
		if got := KindOf(tt.b, tt.withPipe); got != tt.want {
			t.Errorf("KindOf(%q, %v) = %q, want %q", tt.b, tt.withPipe, got, tt.want)
		}
	}
}
