package wire

import "testing"

// FuzzParseStreamHeader: any header either parses within its kind's bounds
// and encodes back to itself, or is refused.
func FuzzParseStreamHeader(f *testing.F) {
	for _, h := range [][]byte{
		{StreamData, 0, 4, 0, 0},
		{StreamData, 0, 0x10, 0, 1}, // one past MaxStreamData
		{StreamEOF, 0, 0, 0, 0},
		{StreamEOF, 0, 0, 0, 1},
		{StreamReset, 0, 0, 0, 5},
		{StreamReset, 0xff, 0xff, 0xff, 0xff},
		{'x', 0, 0, 0, 0},
		{StreamData},
	} {
		f.Add(h)
	}
	f.Fuzz(func(t *testing.T, h []byte) {
		kind, n, err := ParseStreamHeader(h)
		if err != nil {
			return
		}
		if n < 0 || (kind == StreamData && n > MaxStreamData) || (kind == StreamEOF && n != 0) || (kind == StreamReset && n > MaxStreamReason) {
			t.Fatalf("kind %q with %d bytes accepted", kind, n)
		}
		var back [StreamHeaderLen]byte
		PutStreamHeader(back[:], kind, n)
		if string(back[:]) != string(h[:StreamHeaderLen]) {
			t.Fatalf("%x parsed as %q %d, encodes as %x", h, kind, n, back)
		}
	})
}
