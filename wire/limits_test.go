package wire

import (
	"testing"
	"time"
)

func TestCheckLengths(t *testing.T) {
	valid := []any{
		&Request{Version: 1, ID: "x", Op: OpFsRead, Deadline: 1, Body: []byte{0x80}},
		&FsUploadChunkRequest{Handle: "h", Offset: 1 << 40, Data: make([]byte, 70000)},
		&FsOpenResult{Entry: FileEntry{ModTime: time.Unix(1, 5)}, Data: []byte("abc")},
		&GitLog{Commits: []GitCommit{{OID: "o", Time: time.Now()}}},
		map[string]any{"f": 1.5, "n": -1 << 40, "u": uint64(1) << 63, "s": string(make([]byte, 300)), "a": make([]int, 20)},
		&Hello{Capabilities: map[string]bool{"git": true}, StartedAt: time.Now()},
	}
	for _, v := range valid {
		b, err := Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if err := checkLengths(b); err != nil {
			t.Errorf("%T: %v", v, err)
		}
	}
	tests := []struct {
		name string
		in   []byte
	}{
		{"bin32 of 4 GiB", []byte{0x81, 0xa4, 'd', 'a', 't', 'a', 0xc6, 0xff, 0xff, 0xff, 0xff}},
		{"str32 of 4 GiB", []byte{0xdb, 0xff, 0xff, 0xff, 0xff, 'x'}},
		{"bin8 past end", []byte{0xc4, 5, 1, 2}},
		{"array32 huge", []byte{0xdd, 0x7f, 0xff, 0xff, 0xff, 0x01}},
		{"map32 huge", []byte{0xdf, 0x00, 0x10, 0x00, 0x00}},
		{"fixmap short", []byte{0x82, 0x01, 0x02, 0x03}},
		{"ext32 huge", []byte{0xc9, 0xff, 0xff, 0xff, 0xff, 0x01}},
		{"truncated length", []byte{0xda, 0x01}},
		{"never used byte", []byte{0xc1}},
		{"empty", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := checkLengths(tc.in); err == nil {
				t.Fatal("accepted")
			}
			var r FsReadResult
			if err := Unmarshal(tc.in, &r); err == nil {
				t.Fatal("Unmarshal accepted")
			}
		})
	}
}

// FuzzCheckLengths: never a panic, and whatever passes the check decodes
// without allocating more than the input could hold.
func FuzzCheckLengths(f *testing.F) {
	b, _ := Marshal(&FsUploadChunkRequest{Handle: "h", Data: []byte("abc")})
	f.Add(b)
	f.Add([]byte{0xc6, 0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{0xdd, 0x7f, 0xff, 0xff, 0xff, 0x01})
	f.Fuzz(func(t *testing.T, data []byte) {
		if checkLengths(data) != nil {
			return
		}
		var v any
		_ = Unmarshal(data, &v)
	})
}
