package wire

import (
	"reflect"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

// plainEntry is SnapEntry without its own codec: what msgpack's
// reflection makes of the tags, as an older peer encodes and decodes.
type plainEntry struct {
	Path  string   `msgpack:"p"`
	Type  string   `msgpack:"t"`
	Mode  uint32   `msgpack:"m"`
	Size  int64    `msgpack:"s,omitempty"`
	MTime int64    `msgpack:"mt,omitempty"`
	Link  string   `msgpack:"l,omitempty"`
	Sums  []byte   `msgpack:"c,omitempty"`
	Sizes []uint32 `msgpack:"z,omitempty"`
	Extra string   `msgpack:"x,omitempty"` // a field a newer peer might add
}

func TestSnapEntryCodecMatchesTags(t *testing.T) {
	entries := []SnapEntry{
		{Path: "d", Type: "dir", Mode: 0o755, MTime: -5},
		{Path: "d/f", Type: "file", Mode: 0o644, Size: 70000, MTime: 1700000000123456789,
			Sums: make([]byte, 2*SumSize), Sizes: []uint32{30000, 40000}},
		{Path: "d/l", Type: "symlink", Mode: 0o777, Link: "f"},
		{Path: "e", Type: "file"},
	}
	for _, e := range entries {
		ours, err := Marshal(&e)
		if err != nil {
			t.Fatal(err)
		}
		p := asPlain(e)
		theirs, err := Marshal(&p)
		if err != nil {
			t.Fatal(err)
		}
		// Both decoders read both encodings to the same entry.
		for _, b := range [][]byte{ours, theirs} {
			var got SnapEntry
			if err := Unmarshal(b, &got); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, e) {
				t.Fatalf("decoded %+v, want %+v", got, e)
			}
			var gotPlain plainEntry
			if err := Unmarshal(b, &gotPlain); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(gotPlain, p) {
				t.Fatalf("reflection decoded %+v, want %+v", gotPlain, p)
			}
		}
		if len(ours) != len(theirs) {
			t.Errorf("%s: %d bytes encoded, reflection %d", e.Path, len(ours), len(theirs))
		}
	}
	// A field it does not know is skipped; nil is an empty entry.
	p := plainEntry{Path: "a", Type: "file", Extra: "new"}
	b, _ := Marshal(&p)
	var got SnapEntry
	if err := Unmarshal(b, &got); err != nil || got.Path != "a" || got.Type != "file" {
		t.Fatalf("with an unknown field: %+v, %v", got, err)
	}
	nilEntry, _ := msgpack.Marshal(nil)
	got = SnapEntry{Path: "stale"}
	if err := Unmarshal(nilEntry, &got); err != nil || !reflect.DeepEqual(got, SnapEntry{}) {
		t.Fatalf("nil: %+v, %v", got, err)
	}
	// A page of them, as the ops carry it.
	page := &SnapManifestPage{Entries: entries, Next: 4}
	b, err := Marshal(page)
	if err != nil {
		t.Fatal(err)
	}
	var back SnapManifestPage
	if err := Unmarshal(b, &back); err != nil || !reflect.DeepEqual(&back, page) {
		t.Fatalf("page: %+v, %v", back, err)
	}
	// Hostile input: wrong types are errors, not panics.
	bad, _ := msgpack.Marshal(map[string]any{"p": 5, "z": []any{"x"}})
	if err := Unmarshal(bad, &got); err == nil {
		t.Fatal("a path that is a number decoded")
	}
	bad, _ = msgpack.Marshal(map[string]any{"z": []any{"x"}})
	if err := Unmarshal(bad, &got); err == nil {
		t.Fatal("sizes that are strings decoded")
	}
}

func asPlain(e SnapEntry) plainEntry {
	return plainEntry{Path: e.Path, Type: e.Type, Mode: e.Mode, Size: e.Size, MTime: e.MTime, Link: e.Link, Sums: e.Sums, Sizes: e.Sizes}
}
