package main

import "testing"

func TestEscapes(t *testing.T) {
	tests := []struct {
		name   string
		inputs []string
		want   string
		act    escapeAction
	}{
		{"plain", []string{"ls\r"}, "ls\r", escapeNone},
		{"disconnect at start", []string{"~."}, "", escapeDisconnect},
		{"disconnect after newline", []string{"echo\r", "~", "."}, "echo\r", escapeDisconnect},
		{"not mid-line", []string{"a~."}, "a~.", escapeNone},
		{"double tilde", []string{"~~x"}, "~x", escapeNone},
		{"tilde then other", []string{"\r~a"}, "\r~a", escapeNone},
		{"help", []string{"~?ls"}, "ls", escapeHelp},
		{"after newline in one read", []string{"x\n~."}, "x\n", escapeDisconnect},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var e escapes
			var got []byte
			act := escapeNone
			for _, in := range tt.inputs {
				out, a := e.filter(nil, []byte(in))
				got = append(got, out...)
				if a != escapeNone {
					act = a
				}
				if a == escapeDisconnect {
					break
				}
			}
			if string(got) != tt.want || act != tt.act {
				t.Fatalf("got %q action %d, want %q action %d", got, act, tt.want, tt.act)
			}
		})
	}
}

// TestEscapeFilterReusesItsBuffer: filtering a keystroke into the buffer
// of the one before allocates nothing.
func TestEscapeFilterReusesItsBuffer(t *testing.T) {
	var e escapes
	out, _ := e.filter(nil, []byte("x"))
	key := []byte("k")
	if n := testing.AllocsPerRun(100, func() {
		var act escapeAction
		out, act = e.filter(out, key)
		if string(out) != "k" || act != escapeNone {
			t.Fatalf("filter(k) = %q, %v", out, act)
		}
	}); n != 0 {
		t.Errorf("%v allocations a keystroke, want 0", n)
	}
}
