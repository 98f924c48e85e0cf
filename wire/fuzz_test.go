package wire

import (
	"testing"
	"time"
)

func seedRequests(f *testing.F) {
	dl := time.Now().Add(time.Minute)
	for _, body := range []any{nil, &ExecRequest{Argv: []string{"echo", "hi"}}, &ExecRequest{Command: "x", Stdin: []byte{0xff}}} {
		r, err := NewRequest(OpExec, body, dl)
		if err != nil {
			f.Fatal(err)
		}
		b, _ := r.Marshal()
		f.Add(b)
	}
	f.Add([]byte{})
	f.Add([]byte{0xc1})
	f.Add([]byte{0x80})
	f.Add([]byte{0xdf, 0xff, 0xff, 0xff, 0xff})
}

func FuzzDecodeRequest(f *testing.F) {
	seedRequests(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := DecodeRequest(data)
		if err != nil {
			return
		}
		var body ExecRequest
		_ = r.DecodeBody(&body)
		_ = body.Validate()
		if _, err := r.Marshal(); err != nil {
			t.Fatalf("a decoded request does not encode: %v", err)
		}
	})
}

func FuzzDecodeResponse(f *testing.F) {
	ok, _ := EncodeResult("id1", &ExecResult{ExitCode: 3, Stdout: []byte("out")})
	f.Add(ok)
	f.Add(EncodeError("id2", Errorf(CodeUnavailable, ReasonAgentOffline, "x")))
	f.Add([]byte{0x81, 0xa3, 'e', 'r', 'r', 0x80})
	f.Add([]byte{0xc1})
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := DecodeResponse(data)
		if err != nil {
			return
		}
		var res ExecResult
		if err := r.Into(&res); err != nil {
			we := AsError(err)
			if we.Code == "" || HTTPStatus(we.Code) < 400 {
				t.Fatalf("error without a usable code: %+v", we)
			}
		}
	})
}
