package wire

import (
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
