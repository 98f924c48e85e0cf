package wire

import (
	"bytes"
	"testing"
	"time"
)

// procBodies are the table of proc bodies; FuzzProcBodies seeds from them.
var procBodies = []struct {
	name  string
	op    string
	body  interface{ Validate() error }
	valid bool
}{
	{"start argv", OpProcStart, &ProcStartRequest{ID: "p1", Argv: []string{"cat"}, Stdin: true}, true},
	{"start tty", OpProcStart, &ProcStartRequest{Command: "sh", TTY: true, Cols: 100, Rows: 30}, true},
	{"start bad id", OpProcStart, &ProcStartRequest{ID: "P.1", Argv: []string{"x"}}, false},
	{"start both", OpProcStart, &ProcStartRequest{Argv: []string{"x"}, Command: "y"}, false},
	{"start size without tty", OpProcStart, &ProcStartRequest{Argv: []string{"x"}, Cols: 10}, false},
	{"start huge size", OpProcStart, &ProcStartRequest{Argv: []string{"x"}, TTY: true, Cols: 70000, Rows: 1}, false},
	{"start negative timeout", OpProcStart, &ProcStartRequest{Argv: []string{"x"}, TimeoutMs: -1}, false},
	{"read", OpProcRead, &ProcReadRequest{ID: "p1", After: 7, MaxBytes: 1 << 20, WaitMs: 1000}, true},
	{"read long wait", OpProcRead, &ProcReadRequest{ID: "p1", WaitMs: MaxReadWaitMs + 1}, false},
	{"read no id", OpProcRead, &ProcReadRequest{}, false},
	{"write", OpProcWrite, &ProcWriteRequest{ID: "p1", WriteID: "w1", Data: []byte("x"), EOF: true}, true},
	{"signal", OpProcSignal, &ProcSignalRequest{ID: "p1", Signal: "INT"}, true},
	{"signal unnamed", OpProcSignal, &ProcSignalRequest{ID: "p1"}, false},
	{"resize", OpProcResize, &ProcResizeRequest{ID: "p1", Cols: 80, Rows: 24}, true},
	{"resize zero", OpProcResize, &ProcResizeRequest{ID: "p1", Cols: 0, Rows: 24}, false},
	{"ref", OpProcTerminate, &ProcRef{ID: "p-1_x"}, true},
	{"ref leading dash", OpProcTerminate, &ProcRef{ID: "-p"}, false},
}

func TestProcBodiesValidate(t *testing.T) {
	for _, tt := range procBodies {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.body.Validate()
			if (err == nil) != tt.valid {
				t.Fatalf("Validate() = %v, want valid %v", err, tt.valid)
			}
			if err != nil && AsError(err).Code != CodeInvalidArgument {
				t.Fatalf("Validate() = %v, want invalid_argument", err)
			}
		})
	}
}

// FuzzProcBodies decodes arbitrary proc request envelopes into every proc
// body: nothing panics, and what decodes and validates encodes again.
func FuzzProcBodies(f *testing.F) {
	dl := time.Now().Add(time.Minute)
	for _, tt := range procBodies {
		r, err := NewRequest(tt.op, tt.body, dl)
		if err != nil {
			f.Fatal(err)
		}
		b, _ := r.Marshal()
		f.Add(b)
	}
	f.Add([]byte{0xc1})
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := DecodeRequest(data)
		if err != nil {
			return
		}
		for _, body := range []interface{ Validate() error }{
			&ProcStartRequest{}, &ProcReadRequest{}, &ProcWriteRequest{},
			&ProcSignalRequest{}, &ProcResizeRequest{}, &ProcRef{},
		} {
			if r.DecodeBody(body) != nil || body.Validate() != nil {
				continue
			}
			if _, err := NewRequest(r.Op, body, dl); err != nil {
				t.Fatalf("a valid %T does not encode: %v", body, err)
			}
		}
	})
}

// responseSeeds are replies the fast envelope decoder must read exactly as
// the general one does.
func responseSeeds(t testing.TB) [][]byte {
	ok, err := EncodeResult("id1", &ProcReadResult{Chunks: []ProcChunk{{Seq: 1, Stream: StreamStdout, Data: []byte("out")}}, NextSeq: 3, ExitSeq: 2})
	if err != nil {
		t.Fatal(err)
	}
	empty, _ := EncodeResult("id3", nil)
	nilResult, _ := Marshal(map[string]any{"id": "x", "r": nil, "extra": []int{1, 2}})
	return [][]byte{ok, empty, nilResult, EncodeError("id2", Errorf(CodeConflict, ReasonNotRunning, "gone")),
		{0x80}, {0xc0}, {0x90}, {0x81, 0xa2, 'i', 'd', 0x01}}
}

func TestDecodeResponseMatchesGeneral(t *testing.T) {
	for _, data := range responseSeeds(t) {
		checkResponseDecoders(t, data)
	}
}

func FuzzDecodeResponseFast(f *testing.F) {
	for _, data := range responseSeeds(f) {
		f.Add(data)
	}
	f.Fuzz(checkResponseDecoders)
}

// checkResponseDecoders compares DecodeResponse, which takes the result out
// without copying it, with the general decoder on data: where DecodeResponse
// succeeds, both agree.
func checkResponseDecoders(t *testing.T, data []byte) {
	fast, err := DecodeResponse(data)
	if err != nil {
		return
	}
	var slow Response
	if err := Unmarshal(data, &slow); err != nil {
		t.Fatalf("%x: DecodeResponse gave %+v, general failed: %v", data, fast, err)
	}
	if slow.Error != nil && slow.Error.Code == "" {
		slow.Error.Code = CodeInternal
	}
	if fast.ID != slow.ID || string(fast.Result) != string(slow.Result) || (fast.Error == nil) != (slow.Error == nil) ||
		fast.Error != nil && *fast.Error != *slow.Error {
		t.Fatalf("%x: DecodeResponse %+v, general %+v", data, fast, slow)
	}
}

// EncodeResult writes what encoding the result and then the envelope around
// it writes, byte for byte, and it decodes back.
func TestEncodeResultIsTheEnvelope(t *testing.T) {
	results := []any{
		&ProcReadResult{Chunks: []ProcChunk{{Seq: 1, Stream: "stdout", Data: make([]byte, 1<<20)}, {Seq: 2, Stream: "stderr", Data: []byte("x")}}, NextSeq: 2},
		&PingResult{Instance: "i1"},
		(*PingResult)(nil),
		map[string]int{"a": 1},
		"text",
	}
	for _, v := range results {
		got, err := EncodeResult("id1", v)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		want, err := Marshal(&Response{ID: "id1", Result: raw})
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%T: EncodeResult differs from the envelope around Marshal", v)
		}
		r, err := DecodeResponse(got)
		if err != nil || r.ID != "id1" || !bytes.Equal(r.Result, decodedRaw(raw)) {
			t.Fatalf("%T: decoded %+v, %v", v, r, err)
		}
	}
}

// EncodeRequest writes the bytes NewRequest and Marshal write, with every
// optional field set or not, and they decode back.
func TestEncodeRequestIsTheEnvelope(t *testing.T) {
	dl := time.Now().Add(time.Minute)
	bodies := []any{
		&FsUploadChunkRequest{Handle: "h", Offset: 4, Data: make([]byte, 1<<20)},
		&ProcRef{ID: "p1"},
		(*ProcRef)(nil),
		nil,
	}
	for _, full := range []bool{false, true} {
		for _, body := range bodies {
			want, err := NewRequest(OpFsUploadChunk, body, dl)
			if err != nil {
				t.Fatal(err)
			}
			r, _ := NewRequest(OpFsUploadChunk, nil, dl)
			r.ID = want.ID
			if full {
				want.Session, want.Epoch, want.StartBy, want.IdempotencyKey = "s1", 7, dl.UnixMilli(), "k1"
				r.Session, r.Epoch, r.StartBy, r.IdempotencyKey = "s1", 7, dl.UnixMilli(), "k1"
			}
			wantB, err := want.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			got, err := EncodeRequest(r, body)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, wantB) {
				t.Fatalf("%T (all fields %v): EncodeRequest differs from NewRequest + Marshal", body, full)
			}
			back, err := DecodeRequest(got)
			if err != nil || back.ID != want.ID || !bytes.Equal(back.Body, decodedRaw(want.Body)) || back.Session != want.Session {
				t.Fatalf("%T: decoded %+v, %v", body, back, err)
			}
		}
	}
}

// ValidCommand is the one check of what exec and processes run.
func TestValidCommand(t *testing.T) {
	tests := []struct {
		argv    []string
		command string
		want    string // "" when valid
	}{
		{[]string{"true"}, "", ""},
		{nil, "echo hi", ""},
		{nil, "", "exec needs argv or command"},
		{[]string{"true"}, "true", "exec takes argv or command, not both"},
		{[]string{"", "x"}, "", "argv[0] is empty"},
		{[]string{"echo", "a\x00b"}, "", "argv[1] holds a NUL byte; no program can receive one"},
		{[]string{"ec\x00ho"}, "", "argv[0] holds a NUL byte; no program can receive one"},
		{nil, "echo a\x00b", "command holds a NUL byte; no program can receive one"},
	}
	for _, tt := range tests {
		err := ValidCommand("exec", tt.argv, tt.command)
		if tt.want == "" {
			if err != nil {
				t.Errorf("%q %q: %v", tt.argv, tt.command, err)
			}
			continue
		}
		if we := AsError(err); we == nil || we.Code != CodeInvalidArgument || we.Message != tt.want {
			t.Errorf("%q %q: %v, want invalid_argument %q", tt.argv, tt.command, err, tt.want)
		}
	}
}

func TestValidCwdEnv(t *testing.T) {
	tests := []struct {
		name string
		cwd  string
		env  map[string]string
		want string // "" when valid
	}{
		{"empty", "", nil, ""},
		{"plain", "sub/dir", map[string]string{"A": "1", "B": ""}, ""},
		{"NUL in cwd", "a\x00b", nil, "cwd holds a NUL byte"},
		{"empty name", "", map[string]string{"": "v"}, `env: the name "" is empty or holds '=' or a NUL byte`},
		{"= in name", "", map[string]string{"A=B": "v"}, `env: the name "A=B" is empty or holds '=' or a NUL byte`},
		{"NUL in name", "", map[string]string{"A\x00": "v"}, `env: the name "A\x00" is empty or holds '=' or a NUL byte`},
		{"NUL in value", "", map[string]string{"A": "v\x00"}, "env: the value of A holds a NUL byte"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ValidCwdEnv(tt.cwd, tt.env)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("ValidCwdEnv = %v, want nil", err)
				}
				return
			}
			if we := AsError(err); we == nil || we.Code != CodeInvalidArgument || we.Message != tt.want {
				t.Fatalf("ValidCwdEnv = %v, want invalid_argument %q", err, tt.want)
			}
		})
	}
}
