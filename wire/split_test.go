package wire

import (
	"bytes"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"
)

// plainRequest decodes a request the way msgpack alone would.
func plainRequest(data []byte) (*Request, error) {
	var r Request
	err := Unmarshal(data, &r)
	return &r, err
}

func TestSplitFieldMatchesPlainDecoding(t *testing.T) {
	dl := time.Now().Add(time.Minute)
	var msgs [][]byte
	for _, body := range []any{nil, &FsUploadChunkRequest{Handle: "h", Offset: 9, Data: bytes.Repeat([]byte{7}, 70000)}, &ExecRequest{Argv: []string{"x"}}} {
		r, err := NewRequest(OpFsUploadChunk, body, dl)
		if err != nil {
			t.Fatal(err)
		}
		r.Session, r.Epoch, r.IdempotencyKey = "s", 3, "k"
		b, _ := r.Marshal()
		msgs = append(msgs, b)
	}
	for i, data := range msgs {
		want, err := plainRequest(data)
		if err != nil {
			t.Fatal(err)
		}
		got, err := DecodeRequest(data)
		if err != nil {
			t.Fatal(err)
		}
		if got.ID != want.ID || got.Op != want.Op || got.Deadline != want.Deadline || got.Session != want.Session ||
			got.Epoch != want.Epoch || got.IdempotencyKey != want.IdempotencyKey || !bytes.Equal(got.Body, want.Body) {
			t.Fatalf("message %d: got %+v, want %+v", i, got, want)
		}
	}
	res, _ := EncodeResult("id", &FsReadResult{Data: []byte("abc")})
	r, err := DecodeResponse(res)
	var out FsReadResult
	if err != nil || r.ID != "id" || r.Into(&out) != nil || string(out.Data) != "abc" {
		t.Fatalf("response: %+v %v %q", r, err, out.Data)
	}
	e, err := DecodeResponse(EncodeError("id2", Errorf(CodeNotFound, "", "gone")))
	if err != nil || e.Result != nil || e.Error == nil || e.Error.Code != CodeNotFound {
		t.Fatalf("error response: %+v %v", e, err)
	}
	dup, _ := msgpack.Marshal(map[string]any{"b": 1, "v": 1})
	dup = append([]byte{0x83, 0xa1, 'b', 0x02}, dup[1:]...)
	if _, _, err := splitField(dup, "b"); err == nil {
		t.Fatal("a key twice was accepted")
	}
}

// FuzzSplitField: never a panic, and a request that msgpack alone decodes
// decodes to the same fields with the body split off.
func FuzzSplitField(f *testing.F) {
	r, _ := NewRequest(OpFsRead, &FsReadRequest{Handle: "h", Length: 5}, time.Now())
	b, _ := r.Marshal()
	f.Add(b)
	f.Add([]byte{0x81, 0xa1, 'b', 0xc0})
	f.Add([]byte{0xde, 0x00, 0x01, 0xa1, 'b', 0x01})
	f.Fuzz(func(t *testing.T, data []byte) {
		rest, val, err := splitField(data, "b")
		if err != nil {
			return
		}
		if val != nil && len(rest) > len(data) {
			t.Fatalf("rest grew: %d > %d", len(rest), len(data))
		}
		want, err := plainRequest(data)
		if err != nil {
			return
		}
		got, err := DecodeRequest(data)
		if err != nil && AsError(err).Reason == ReasonVersion || err == nil {
			if got.ID != want.ID || got.Op != want.Op || got.Deadline != want.Deadline || !bytes.Equal(got.Body, decodedRaw(want.Body)) {
				t.Fatalf("split %+v, plain %+v", got, want)
			}
		}
	})
}
