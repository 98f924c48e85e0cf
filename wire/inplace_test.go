package wire

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
	"unsafe"
)

// inPlace puts data in a fresh in-place buffer.
func inPlace(body InPlaceBody, data []byte) *InPlace {
	buf := NewInPlaceBuf(len(data) + 7)
	copy(buf[Headroom:], data)
	return &InPlace{Body: body, Buf: buf, N: len(data)}
}

func TestEncodeRequestInPlace(t *testing.T) {
	for _, size := range []int{0, 1, 200, 70000} {
		data := bytes.Repeat([]byte{0xab}, size)
		req := &Request{Version: Version, ID: NewID(), Op: OpFsUploadChunk, Deadline: time.Now().Add(time.Minute).UnixMilli(), IdempotencyKey: "th@1"}
		want, err := EncodeRequest(&Request{Version: req.Version, ID: req.ID, Op: req.Op, Deadline: req.Deadline, IdempotencyKey: req.IdempotencyKey},
			&FsUploadChunkRequest{Handle: "th", Offset: 1 << 40, Data: data})
		if err != nil {
			t.Fatal(err)
		}
		p := inPlace(&FsUploadChunkRequest{Handle: "th", Offset: 1 << 40}, data)
		got, err := EncodeRequest(req, p)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("size %d: in place %x\nwant %x", size, got[:min(len(got), 80)], want[:min(len(want), 80)])
		}
		// The data was not copied: the encoding ends in the buffer itself.
		if size > 0 && unsafe.SliceData(got[len(got)-size:]) != unsafe.SliceData(p.Data()) {
			t.Fatalf("size %d: data was copied", size)
		}
		dec, err := DecodeRequest(got)
		if err != nil {
			t.Fatal(err)
		}
		var body FsUploadChunkRequest
		d, err := UnmarshalAliasing(dec.Body, "data", &body)
		if err != nil {
			t.Fatal(err)
		}
		if body.Handle != "th" || body.Offset != 1<<40 || !bytes.Equal(d, data) || body.Data != nil {
			t.Fatalf("size %d: decoded %+v, data %d bytes", size, body, len(d))
		}
		if size > 0 && unsafe.SliceData(d) != unsafe.SliceData(got[len(got)-size:]) {
			t.Fatalf("size %d: decoded data does not alias the message", size)
		}
	}
}

func TestEncodeResultInPlace(t *testing.T) {
	data := bytes.Repeat([]byte("x"), 100000)
	want, err := EncodeResult("id1", &FsReadResult{Data: data})
	if err != nil {
		t.Fatal(err)
	}
	got, err := EncodeResult("id1", inPlace(&FsReadResult{}, data))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("in place %x, want %x", got[:40], want[:40])
	}
	resp, err := DecodeResponse(got)
	if err != nil {
		t.Fatal(err)
	}
	var res FsReadResult
	d, err := UnmarshalAliasing(resp.Result, "data", &res)
	if err != nil || !bytes.Equal(d, data) {
		t.Fatalf("decoded %d bytes, %v", len(d), err)
	}
}

func TestInPlaceLongEnvelopeIsCopied(t *testing.T) {
	data := []byte("payload")
	key := strings.Repeat("k", 2*Headroom)
	req := &Request{Version: Version, ID: "i", Op: OpFsUploadChunk, Deadline: 1, IdempotencyKey: key}
	want, err := EncodeRequest(&Request{Version: Version, ID: "i", Op: OpFsUploadChunk, Deadline: 1, IdempotencyKey: key},
		&FsUploadChunkRequest{Handle: "h", Data: data})
	if err != nil {
		t.Fatal(err)
	}
	got, err := EncodeRequest(req, inPlace(&FsUploadChunkRequest{Handle: "h"}, data))
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("got %q, %v; want %q", got, err, want)
	}
}

func TestInPlaceRejects(t *testing.T) {
	req := func() *Request { return &Request{Version: Version, ID: "i", Op: OpFsUploadChunk, Deadline: 1} }
	// More data than the buffer holds.
	p := inPlace(&FsUploadChunkRequest{Handle: "h"}, []byte("x"))
	p.N = len(p.Buf)
	if _, err := EncodeRequest(req(), p); err == nil {
		t.Fatal("data beyond the buffer was encoded")
	}
}

func TestUnmarshalAliasing(t *testing.T) {
	b, err := Marshal(&FsUploadChunkRequest{Handle: "h", Offset: 3})
	if err != nil {
		t.Fatal(err)
	}
	var v FsUploadChunkRequest
	d, err := UnmarshalAliasing(b, "data", &v)
	if err != nil || d != nil || v.Handle != "h" || v.Offset != 3 {
		t.Fatalf("nil data: %q %+v %v", d, v, err)
	}
	// A field that is not a bin is refused.
	b, err = Marshal(map[string]any{"h": "h", "data": "a string"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := UnmarshalAliasing(b, "data", &v); err == nil {
		t.Fatal("a string data field was taken")
	}
	// Without the field, nothing aliases.
	b, err = Marshal(&FsHandleRequest{Handle: "h"})
	if err != nil {
		t.Fatal(err)
	}
	if d, err := UnmarshalAliasing(b, "data", &v); err != nil || d != nil {
		t.Fatalf("no field: %q %v", d, err)
	}
}

// A type embedding an InPlace (a result holding a pooled buffer) encodes
// as the InPlace does.
func TestEncodeResultEmbeddedInPlace(t *testing.T) {
	type pooled struct {
		InPlace
		release func()
	}
	data := []byte("some bytes")
	want, err := EncodeResult("id", &FsReadResult{Data: data})
	if err != nil {
		t.Fatal(err)
	}
	got, err := EncodeResult("id", &pooled{InPlace: *inPlace(&FsReadResult{}, data)})
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("got %x, %v; want %x", got, err, want)
	}
}

// Response.Into decodes read results as Unmarshal does, their data
// aliasing the reply.
func TestIntoAliasesReadResults(t *testing.T) {
	procs := []*ProcReadResult{
		{NextSeq: 3},
		{Chunks: []ProcChunk{}, NextSeq: 1, ClosedSeq: 9},
		{Chunks: []ProcChunk{{Seq: 1, Stream: "stdout", Data: []byte("hello")}, {Seq: 2, Stream: "stderr"},
			{Seq: 3, Stream: "stdout", Data: bytes.Repeat([]byte("z"), 70000)}}, NextSeq: 4, ExitSeq: 4, ExitCode: 2, Dropped: 5},
	}
	for i := range 20 {
		procs[2].Chunks = append(procs[2].Chunks, ProcChunk{Seq: uint64(4 + i), Stream: "stdout", Data: []byte{byte(i)}})
	}
	for _, want := range procs {
		b, err := EncodeResult("id", want)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := DecodeResponse(b)
		if err != nil {
			t.Fatal(err)
		}
		var plain, got ProcReadResult
		if err := Unmarshal(resp.Result, &plain); err != nil {
			t.Fatal(err)
		}
		got.Chunks = []ProcChunk{{Seq: 99}} // left over from an earlier use: replaced
		if err := resp.Into(&got); err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(got) != fmt.Sprint(plain) {
			t.Fatalf("aliased %+v\nwant %+v", got, plain)
		}
		for _, c := range got.Chunks {
			if len(c.Data) > 0 && !aliases(b, c.Data) {
				t.Fatalf("chunk %d was copied", c.Seq)
			}
		}
	}
	b, err := EncodeResult("id", &FsReadResult{Data: []byte("file bytes")})
	if err != nil {
		t.Fatal(err)
	}
	resp, _ := DecodeResponse(b)
	var fr FsReadResult
	if err := resp.Into(&fr); err != nil || string(fr.Data) != "file bytes" || !aliases(b, fr.Data) {
		t.Fatalf("fs.read result %q, %v", fr.Data, err)
	}
	b, err = EncodeResult("id", inPlace(&SnapReadResult{}, []byte("chunk bytes")))
	if err != nil {
		t.Fatal(err)
	}
	resp, _ = DecodeResponse(b)
	var sr SnapReadResult
	if err := resp.Into(&sr); err != nil || string(sr.Data) != "chunk bytes" || !aliases(b, sr.Data) {
		t.Fatalf("snap.read result %q, %v", sr.Data, err)
	}
	// A chunk whose data is not a bin is a bad reply.
	bad, _ := Marshal(map[string]any{"chunks": []map[string]any{{"s": 1, "d": "text"}}})
	if err := (&Response{Result: bad}).Into(&ProcReadResult{}); !errors.Is(err, ErrInternal) {
		t.Fatalf("a string chunk: %v", err)
	}
}

// aliases reports whether sub lies within b.
func aliases(b, sub []byte) bool {
	start := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	p := uintptr(unsafe.Pointer(unsafe.SliceData(sub)))
	return p >= start && p+uintptr(len(sub)) <= start+uintptr(len(b))
}

// Decoding a reply's read result aliasing it never panics, whatever the
// agent sent.
func FuzzIntoAliasing(f *testing.F) {
	for _, v := range []any{
		&ProcReadResult{Chunks: []ProcChunk{{Seq: 1, Stream: "stdout", Data: []byte("x")}}, NextSeq: 2},
		&FsReadResult{Data: []byte("abc")},
		&SnapReadResult{Data: []byte("abc")},
		map[string]any{"chunks": []any{1, "a"}},
	} {
		b, _ := Marshal(v)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r := &Response{Result: b}
		_ = r.Into(&ProcReadResult{})
		_ = r.Into(&FsReadResult{})
		_ = r.Into(&SnapReadResult{})
	})
}

// A carry's batch of chunks, encoded in place with more room than
// Headroom (its names and sizes), is what the struct encoder writes, and
// its data is not copied; the agent's decoding gets it back.
func TestEncodeRestoreChunksInPlace(t *testing.T) {
	for _, n := range []int{0, 1, 3, 300} {
		var sums []byte
		var sizes []uint32
		data := []byte{} // a batch's data is never nil
		for i := range n {
			sums = append(sums, bytes.Repeat([]byte{byte(i)}, SumSize)...)
			sizes = append(sizes, uint32(i%7+1))
			data = append(data, bytes.Repeat([]byte{byte(i + 1)}, i%7+1)...)
		}
		req := &Request{Version: Version, ID: NewID(), Op: OpSnapRestoreChunks, Deadline: time.Now().Add(time.Minute).UnixMilli(), IdempotencyKey: "h1@f3"}
		want, err := EncodeRequest(&Request{Version: req.Version, ID: req.ID, Op: req.Op, Deadline: req.Deadline, IdempotencyKey: req.IdempotencyKey},
			&SnapRestoreChunksRequest{Handle: "h1", Sums: sums, Sizes: sizes, Data: data})
		if err != nil {
			t.Fatal(err)
		}
		room := 16 << 10
		buf := make([]byte, room+len(data)+5)
		copy(buf[room:], data)
		p := &InPlace{Body: &SnapRestoreChunksRequest{Handle: "h1", Sums: sums, Sizes: sizes}, Buf: buf, N: len(data), Room: room}
		got, err := EncodeRequest(req, p)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%d chunks: in place %x\nwant %x", n, got, want)
		}
		if len(data) > 0 && unsafe.SliceData(got[len(got)-len(data):]) != unsafe.SliceData(p.Data()) {
			t.Fatalf("%d chunks: data was copied", n)
		}
		if unsafe.SliceData(got) != &buf[room-(len(got)-len(data))] {
			t.Fatalf("%d chunks: the head was not written into the room", n)
		}
		dec, err := DecodeRequest(got)
		if err != nil {
			t.Fatal(err)
		}
		body := &SnapRestoreChunksRequest{}
		if body.Data, err = dec.DecodeBodyAliasing("data", body); err != nil {
			t.Fatal(err)
		}
		if body.Handle != "h1" || !bytes.Equal(body.Sums, sums) || !slicesEqual(body.Sizes, sizes) || !bytes.Equal(body.Data, data) {
			t.Fatalf("%d chunks: decoded %+v", n, body)
		}
		if n > 0 {
			if err := body.Validate(); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func slicesEqual(a, b []uint32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// FuzzEncodeRestoreChunksInPlace: a carry's batch encoded in place, with
// any room, any handle and idempotency key, any number of chunks, is
// byte for byte what the struct encoder writes (the agent cannot tell
// them apart); its data is not copied whenever the head fits the room,
// and the agent's aliasing decode gets the batch back and validates it.
func FuzzEncodeRestoreChunksInPlace(f *testing.F) {
	f.Add("h1", "h1@f3", uint16(0), uint16(16<<10), uint32(1))
	f.Add("h1", "h1@f3", uint16(1), uint16(0), uint32(7))
	f.Add("h", "", uint16(857), uint16(32<<10), uint32(3)) // a full batch, the forwarder's room
	f.Add(strings.Repeat("h", 64), strings.Repeat("k", 128), uint16(857), uint16(32<<10), uint32(9))
	f.Add("h1", "h1@f0", uint16(20), uint16(40), uint32(5)) // a room the head does not fit: copied
	f.Add("h1", strings.Repeat("k", 2*Headroom), uint16(2), uint16(0), uint32(2))
	f.Add("h1", "h1@f9", uint16(2099), uint16(0), uint32(4)) // names of 67,168 bytes: copied
	f.Add("h1", "h1@f9", uint16(2099), uint16(65535), uint32(6))
	f.Fuzz(func(t *testing.T, handle, key string, n, room uint16, seed uint32) {
		n %= 2100 // past 2048 chunks, the names' bin has a 32-bit length
		var sums []byte
		var sizes []uint32
		data := []byte{} // a batch's data is never nil
		for i := range int(n) {
			s := sha256sum(seed, i)
			sums = append(sums, s[:]...)
			size := uint32(s[0])%9 + 1
			sizes = append(sizes, size)
			data = append(data, bytes.Repeat([]byte{s[1]}, int(size))...)
		}
		if n == 0 && seed%2 == 0 {
			sums, sizes = []byte{}, []uint32{} // empty, not nil
		}
		req := func() *Request {
			return &Request{Version: Version, ID: "01HV3", Op: OpSnapRestoreChunks, Deadline: 1 << 40, IdempotencyKey: key}
		}
		want, err := EncodeRequest(req(), &SnapRestoreChunksRequest{Handle: handle, Sums: sums, Sizes: sizes, Data: data})
		if err != nil {
			t.Fatal(err)
		}
		r := Headroom
		if room > 0 {
			r = int(room)
		}
		buf := make([]byte, r+len(data)+int(seed%5))
		copy(buf[r:], data)
		p := &InPlace{Body: &SnapRestoreChunksRequest{Handle: handle, Sums: sums, Sizes: sizes}, Buf: buf, N: len(data), Room: int(room)}
		got, err := EncodeRequest(req(), p)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%d chunks, room %d: in place differs from the struct encoding", n, room)
		}
		if head := len(got) - len(data); head <= r && len(data) > 0 && unsafe.SliceData(got[head:]) != unsafe.SliceData(p.Data()) {
			t.Fatalf("%d chunks, room %d: a head of %d bytes fits, but the data was copied", n, room, head)
		}
		dec, err := DecodeRequest(got)
		if err != nil {
			t.Fatal(err)
		}
		body := &SnapRestoreChunksRequest{}
		if body.Data, err = dec.DecodeBodyAliasing("data", body); err != nil {
			t.Fatal(err)
		}
		if body.Handle != handle || !bytes.Equal(body.Sums, sums) || !slicesEqual(body.Sizes, sizes) || !bytes.Equal(body.Data, data) {
			t.Fatalf("%d chunks: decoded a different batch", n)
		}
		if n > 0 && handle != "" && len(handle) <= MaxHandleLen {
			if err := body.Validate(); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// sha256sum is a chunk name made of seed and i.
func sha256sum(seed uint32, i int) [SumSize]byte {
	return sha256.Sum256(fmt.Appendf(nil, "%d/%d", seed, i))
}
