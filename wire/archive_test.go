package wire

import (
	"reflect"
	"testing"
	"time"
)

// archiveBodies are one seed of every archive request body.
func archiveBodies() map[string]validator {
	return map[string]validator{
		OpFsArchiveOpen:  &FsArchiveOpenRequest{Path: "src", Chunk: 1 << 20},
		OpFsArchiveRead:  &FsHandleRequest{Handle: "a1"},
		OpFsUnpackBegin:  &FsUnpackBeginRequest{Path: "dest"},
		OpFsUnpackChunk:  &FsUnpackChunkRequest{Handle: "a2", Offset: 512, Data: []byte("ustar")},
		OpFsUnpackCommit: &FsHandleRequest{Handle: "a2"},
	}
}

func TestArchiveBodies(t *testing.T) {
	for op, body := range archiveBodies() {
		if err := body.Validate(); err != nil {
			t.Fatalf("%s seed does not validate: %v", op, err)
		}
		r, err := NewRequest(op, body, time.Now().Add(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		got := reflect.New(reflect.TypeOf(body).Elem()).Interface()
		if err := r.DecodeBody(got); err != nil || !reflect.DeepEqual(got, body) {
			t.Fatalf("%s: got %+v (%v), want %+v", op, got, err, body)
		}
		if !Mutates(op) {
			t.Errorf("%s is sequential and must never be replayed", op)
		}
	}
	for _, tc := range []struct {
		name string
		body validator
	}{
		{"open no chunk", &FsArchiveOpenRequest{Path: "a"}},
		{"open huge chunk", &FsArchiveOpenRequest{Path: "a", Chunk: MaxChunk + 1}},
		{"begin long path", &FsUnpackBeginRequest{Path: string(make([]byte, MaxPathLen+1))}},
		{"chunk negative", &FsUnpackChunkRequest{Handle: "h", Offset: -1}},
		{"chunk big", &FsUnpackChunkRequest{Handle: "h", Data: make([]byte, MaxChunk+1)}},
		{"chunk no handle", &FsUnpackChunkRequest{}},
	} {
		if err := tc.body.Validate(); err == nil || AsError(err).Code == "" {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}

// FuzzDecodeArchiveBodies decodes arbitrary bytes as every archive body
// and result: never a panic, and what validates encodes again.
func FuzzDecodeArchiveBodies(f *testing.F) {
	for _, body := range archiveBodies() {
		b, err := Marshal(body)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte{0x82, 0xa1, 'h', 0xa1, 'x', 0xa3, 'e', 'o', 'f', 0xc3})
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, seed := range archiveBodies() {
			v := reflect.New(reflect.TypeOf(seed).Elem()).Interface().(validator)
			if Unmarshal(data, v) != nil {
				continue
			}
			if err := v.Validate(); err != nil {
				if AsError(err).Code == "" {
					t.Fatalf("validation error without a code: %v", err)
				}
				continue
			}
			if _, err := Marshal(v); err != nil {
				t.Fatalf("%T decoded but does not encode: %v", v, err)
			}
		}
		for _, v := range []any{&FsArchiveReadResult{}, &FsUnpackResult{}, &FsArchiveOpenResult{}} {
			_ = Unmarshal(data, v)
		}
	})
}

// FuzzDecodeSearchBodies decodes arbitrary bytes as the search bodies.
func FuzzDecodeSearchBodies(f *testing.F) {
	for _, v := range []any{&FsSearchRequest{Path: "src", Query: "x", Regex: true, Glob: "*.go", MaxResults: 10}, &FsFindRequest{Glob: "*", MaxResults: 1}} {
		b, err := Marshal(v)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, v := range []validator{&FsSearchRequest{}, &FsFindRequest{}} {
			if Unmarshal(data, v) != nil {
				continue
			}
			if err := v.Validate(); err != nil && AsError(err).Code == "" {
				t.Fatalf("validation error without a code: %v", err)
			}
		}
		_ = Unmarshal(data, &FsSearchResult{})
		_ = Unmarshal(data, &FsFindResult{})
	})
}

// FuzzDecodeWatchBodies decodes arbitrary bytes as the watch bodies.
func FuzzDecodeWatchBodies(f *testing.F) {
	for _, v := range []any{&FsWatchStartRequest{Path: "src", Recursive: true}, &FsWatchPollRequest{Handle: "w1", After: 1 << 50, WaitMs: 100}} {
		b, err := Marshal(v)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, v := range []validator{&FsWatchStartRequest{}, &FsWatchPollRequest{}} {
			if Unmarshal(data, v) != nil {
				continue
			}
			if err := v.Validate(); err != nil && AsError(err).Code == "" {
				t.Fatalf("validation error without a code: %v", err)
			}
		}
		_ = Unmarshal(data, &FsWatchPollResult{})
		_ = Unmarshal(data, &FsWatchStartResult{})
	})
}
