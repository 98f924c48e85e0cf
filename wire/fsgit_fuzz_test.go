package wire

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

// validator is a request body with a shape check.
type validator interface{ Validate() error }

// fsGitBodies are one seed of every file and git request body, taken from the
// shapes the table tests use.
func fsGitBodies() map[string]validator {
	wo := FsWriteOptions{Path: "dir/a.txt", Mode: 0o644, Overwrite: true, Parents: true}
	return map[string]validator{
		OpFsStat:          &FsPathRequest{Path: "a/b"},
		OpFsList:          &FsListRequest{Path: "/", Recursive: true},
		OpFsOpen:          &FsOpenRequest{Path: "big.bin", Length: 1 << 20},
		OpFsRead:          &FsReadRequest{Handle: "h1", Offset: 1 << 20, Length: 1 << 20},
		OpFsClose:         &FsHandleRequest{Handle: "h1"},
		OpFsWrite:         &FsWriteRequest{FsWriteOptions: wo, Data: []byte("hello\x00")},
		OpFsUploadBegin:   &FsUploadBeginRequest{FsWriteOptions: wo},
		OpFsUploadChunk:   &FsUploadChunkRequest{Handle: "h2", Offset: 4096, Data: []byte{1, 2, 3}},
		OpFsUploadCommit:  &FsUploadCommitRequest{Handle: "h2", Size: 4099, SHA256: "ab"},
		OpFsUploadAbort:   &FsHandleRequest{Handle: "h2"},
		OpFsSend:          &FsSendRequest{Handle: "h1", Offset: 2 << 20, Length: 1 << 30, Ticket: "bABC234"},
		OpFsUploadRecv:    &FsUploadRecvRequest{Handle: "h2", Offset: 0, Ticket: "bXYZ567"},
		OpFsMkdir:         &FsMkdirRequest{Path: "x/y", Parents: true},
		OpFsMove:          &FsMoveRequest{From: "a", To: "b", Overwrite: true},
		OpFsRemove:        &FsRemoveRequest{Path: "x", Recursive: true},
		OpGitStatus:       &GitStatusRequest{Path: "repo", Ignored: true},
		OpGitDiff:         &GitDiffRequest{Path: "repo", Staged: true, Ref: "HEAD~1"},
		OpGitApply:        &GitApplyRequest{Path: "repo", Patch: []byte("diff --git a/x b/x\n"), Check: true, ThreeWay: true, Index: true},
		OpGitCommit:       &GitCommitRequest{Message: "m", All: true, AuthorName: "A", AuthorEmail: "a@x"},
		OpGitLog:          &GitLogRequest{Path: "repo", N: 5, Ref: "main"},
		OpGitAdd:          &GitStageRequest{Path: "repo", Paths: []string{"a", "-b"}},
		OpGitReset:        &GitStageRequest{Path: "repo", All: true},
		OpGitBranches:     &GitBranchesRequest{Path: "repo"},
		OpGitBranchCreate: &GitBranchCreateRequest{Path: "repo", Name: "feature/x", From: "origin/main"},
		OpGitBranchDelete: &GitBranchDeleteRequest{Path: "repo", Name: "feature/x", Force: true},
		OpGitCheckout:     &GitCheckoutRequest{Path: "repo", Ref: "main", Create: true},
		OpGitClone:        &GitCloneRequest{URL: "https://h/a.git", Path: "a", Ref: "main", Depth: 1},
		OpGitFetch:        &GitRemoteRequest{Path: "repo", Remote: "origin", Ref: "main"},
		OpGitPull:         &GitRemoteRequest{Path: "repo"},
		OpGitPush:         &GitRemoteRequest{Path: "repo", Remote: "origin", Ref: "HEAD:main", SetUpstream: true},

		OpSnapScan:            &SnapScanRequest{Path: "src", Exclude: []string{"node_modules", "*.o"}, Gitignore: true},
		OpSnapManifest:        &SnapManifestPage{Entries: snapSeedEntries(), Next: 3},
		OpSnapRead:            &SnapReadRequest{Handle: "t1", Sums: make([]byte, 2*SumSize), Ticket: "b1"},
		OpSnapClose:           &FsHandleRequest{Handle: "t1"},
		OpSnapRestoreBegin:    &SnapRestoreBeginRequest{Path: "dst", Delete: true},
		OpSnapRestoreManifest: &SnapRestoreManifestRequest{Handle: "t2", Entries: snapSeedEntries(), Last: true},
		OpSnapRestoreLack:     &SnapPageRequest{Handle: "t2", Offset: 7},
		OpSnapRestoreChunks:   &SnapRestoreChunksRequest{Handle: "t2", Sums: make([]byte, SumSize), Sizes: []uint32{5}, Data: []byte("hello")},
		OpSnapRestoreCommit:   &SnapLackPage{Sums: make([]byte, SumSize), Next: 1},
	}
}

// snapSeedEntries is a manifest of a directory, a file and a link.
func snapSeedEntries() []SnapEntry {
	return []SnapEntry{
		{Path: "d", Type: "dir", Mode: 0o755, MTime: 1},
		{Path: "d/f", Type: "file", Mode: 0o644, Size: 70000, MTime: 2, Sums: make([]byte, 2*SumSize), Sizes: []uint32{65536, 4464}},
		{Path: "l", Type: "symlink", Mode: 0o777, Link: "d/f"},
	}
}

// TestSnapBulkBodiesRoundTrip: the bodies of snapshot batches on bulk
// connections (a ticket, no data) survive the wire and validate.
func TestSnapBulkBodiesRoundTrip(t *testing.T) {
	for op, body := range map[string]validator{
		OpSnapRead:          &SnapReadRequest{Handle: "t1", Sums: make([]byte, 3*SumSize), Ticket: "bT1"},
		OpSnapRestoreChunks: &SnapRestoreChunksRequest{Handle: "t2", Sums: make([]byte, 2*SumSize), Sizes: []uint32{5, MaxSnapChunk}, Ticket: "bT2"},
	} {
		if err := body.Validate(); err != nil {
			t.Fatalf("%s: %v", op, err)
		}
		got := decodeRoundTrip(t, op, body)
		if !reflect.DeepEqual(got, body) {
			t.Fatalf("%s: got %+v, want %+v", op, got, body)
		}
	}
}

// decodeRoundTrip puts body in a request of op and decodes it back into a
// new value of body's type, which it returns.
func decodeRoundTrip(t *testing.T, op string, body validator) any {
	t.Helper()
	r, err := NewRequest(op, body, time.Now().Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	got := reflect.New(reflect.TypeOf(body).Elem()).Interface()
	if err := r.DecodeBody(got); err != nil {
		t.Fatal(err)
	}
	return got
}

// TestFsGitBodiesRoundTrip checks that every body survives the wire,
// inlined write options included.
func TestFsGitBodiesRoundTrip(t *testing.T) {
	for op, body := range fsGitBodies() {
		t.Run(op, func(t *testing.T) {
			if err := body.Validate(); err != nil {
				t.Fatalf("seed does not validate: %v", err)
			}
			got := decodeRoundTrip(t, op, body)
			if !reflect.DeepEqual(got, body) {
				t.Fatalf("got %+v, want %+v", got, body)
			}
			if !Mutates(op) && (op == OpFsWrite || op == OpGitCommit) {
				t.Fatalf("%s must be a mutation", op)
			}
		})
	}
}

func TestFsGitValidate(t *testing.T) {
	long := string(make([]byte, MaxPathLen+1))
	tests := []struct {
		name string
		body validator
		want Code
	}{
		{"long path", &FsPathRequest{Path: long}, CodeInvalidArgument},
		{"open negative length", &FsOpenRequest{Length: -1}, CodeInvalidArgument},
		{"open too long", &FsOpenRequest{Length: MaxChunk + 1}, CodeInvalidArgument},
		{"read no handle", &FsReadRequest{Length: 1}, CodeInvalidArgument},
		{"read negative offset", &FsReadRequest{Handle: "h", Offset: -1}, CodeInvalidArgument},
		{"write mode bits", &FsWriteRequest{FsWriteOptions: FsWriteOptions{Path: "a", Mode: 0o4755}}, CodeInvalidArgument},
		{"write too big", &FsWriteRequest{FsWriteOptions: FsWriteOptions{Path: "a"}, Data: make([]byte, MaxChunk+1)}, CodePayloadTooLarge},
		{"chunk too big", &FsUploadChunkRequest{Handle: "h", Data: make([]byte, MaxChunk+1)}, CodePayloadTooLarge},
		{"commit negative size", &FsUploadCommitRequest{Handle: "h", Size: -1}, CodeInvalidArgument},
		{"send no ticket", &FsSendRequest{Handle: "h", Length: 1}, CodeInvalidArgument},
		{"send negative length", &FsSendRequest{Handle: "h", Length: -1, Ticket: "b1"}, CodeInvalidArgument},
		{"send ticket not alphanumeric", &FsSendRequest{Handle: "h", Ticket: "b/../1"}, CodeInvalidArgument},
		{"recv long ticket", &FsUploadRecvRequest{Handle: "h", Ticket: strings.Repeat("b", MaxTicketLen+1)}, CodeInvalidArgument},
		{"recv negative offset", &FsUploadRecvRequest{Handle: "h", Offset: -1, Ticket: "b1"}, CodeInvalidArgument},
		{"long handle", &FsHandleRequest{Handle: string(make([]byte, MaxHandleLen+1))}, CodeInvalidArgument},
		{"move long to", &FsMoveRequest{From: "a", To: long}, CodeInvalidArgument},
		{"apply empty", &GitApplyRequest{}, CodeInvalidArgument},
		{"commit no message", &GitCommitRequest{}, CodeInvalidArgument},
		{"log n", &GitLogRequest{N: MaxGitLog + 1}, CodeInvalidArgument},
		{"stage nothing", &GitStageRequest{}, CodeInvalidArgument},
		{"stage both", &GitStageRequest{All: true, Paths: []string{"a"}}, CodeInvalidArgument},
		{"stage empty path", &GitStageRequest{Paths: []string{""}}, CodeInvalidArgument},
		{"branch no name", &GitBranchCreateRequest{}, CodeInvalidArgument},
		{"branch option-like from", &GitBranchCreateRequest{Name: "x", From: "-f"}, CodeInvalidArgument},
		{"checkout option-like", &GitCheckoutRequest{Ref: "--orphan"}, CodeInvalidArgument},
		{"delete no name", &GitBranchDeleteRequest{}, CodeInvalidArgument},
		{"clone no url", &GitCloneRequest{Path: "a"}, CodeInvalidArgument},
		{"clone option-like url", &GitCloneRequest{URL: "-u", Path: "a"}, CodeInvalidArgument},
		{"clone no path", &GitCloneRequest{URL: "https://h/a"}, CodeInvalidArgument},
		{"clone negative depth", &GitCloneRequest{URL: "https://h/a", Path: "a", Depth: -1}, CodeInvalidArgument},
		{"remote option-like", &GitRemoteRequest{Remote: "--exec=x"}, CodeInvalidArgument},
		{"ref without remote", &GitRemoteRequest{Ref: "main"}, CodeInvalidArgument},
		{"diff long ref", &GitDiffRequest{Ref: string(make([]byte, MaxRefLen+1))}, CodeInvalidArgument},
		{"snap sums not whole", &SnapReadRequest{Handle: "h", Sums: make([]byte, 33)}, CodeInvalidArgument},
		{"snap read bad ticket", &SnapReadRequest{Handle: "h", Sums: make([]byte, 32), Ticket: "b-1"}, CodeInvalidArgument},
		{"restore chunks bulk with data", &SnapRestoreChunksRequest{Handle: "h", Sums: make([]byte, SumSize), Sizes: []uint32{5}, Data: []byte("hello"), Ticket: "b1"}, CodeInvalidArgument},
		{"restore chunks bulk too much", &SnapRestoreChunksRequest{Handle: "h", Sums: make([]byte, 65*SumSize), Sizes: func() []uint32 {
			z := make([]uint32, 65)
			for i := range z {
				z[i] = MaxSnapChunk
			}
			return z
		}(), Ticket: "b1"}, CodeInvalidArgument},
		{"restore chunks bulk bad ticket", &SnapRestoreChunksRequest{Handle: "h", Sums: make([]byte, SumSize), Sizes: []uint32{5}, Ticket: "b 1"}, CodeInvalidArgument},
		{"snap entry sizes lie", &SnapManifestPage{Entries: []SnapEntry{{Path: "f", Type: "file", Size: 9, Sums: make([]byte, SumSize), Sizes: []uint32{5}}}}, CodeInvalidArgument},
		{"snap entry huge chunk", &SnapManifestPage{Entries: []SnapEntry{{Path: "f", Type: "file", Size: MaxSnapChunk + 1, Sums: make([]byte, SumSize), Sizes: []uint32{MaxSnapChunk + 1}}}}, CodeInvalidArgument},
		{"snap entry no path", &SnapRestoreManifestRequest{Handle: "h", Entries: []SnapEntry{{Type: "dir"}}}, CodeInvalidArgument},
		{"snap chunks data short", &SnapRestoreChunksRequest{Handle: "h", Sums: make([]byte, SumSize), Sizes: []uint32{5}, Data: []byte("abc")}, CodeInvalidArgument},
		{"snap chunks sizes vs sums", &SnapRestoreChunksRequest{Handle: "h", Sums: make([]byte, 2*SumSize), Sizes: []uint32{3}, Data: []byte("abc")}, CodeInvalidArgument},
		{"snap page negative", &SnapPageRequest{Handle: "h", Offset: -1}, CodeInvalidArgument},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.body.Validate()
			if AsError(err).Code != tc.want || err == nil {
				t.Fatalf("got %v, want %s", err, tc.want)
			}
		})
	}
}

// FuzzDecodeFsGitBodies decodes arbitrary bytes as every file and git body:
// never a panic, and whatever decodes and validates encodes again.
func FuzzDecodeFsGitBodies(f *testing.F) {
	for _, body := range fsGitBodies() {
		b, err := Marshal(body)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte{0xc1})
	f.Add([]byte{0x81, 0xa4, 'd', 'a', 't', 'a', 0xc6, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, seed := range fsGitBodies() {
			v := reflect.New(reflect.TypeOf(seed).Elem()).Interface().(validator)
			if err := Unmarshal(data, v); err != nil {
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
	})
}

// FuzzDecodeFsGitResults decodes arbitrary replies as the results the
// control plane reads from agents.
func FuzzDecodeFsGitResults(f *testing.F) {
	for _, res := range []any{
		&FsOpenResult{Handle: "h", Entry: FileEntry{Name: "a", Path: "a", Type: "file", Size: 3}, Data: []byte("abc")},
		&FsListResult{Entries: []FileEntry{{Name: "a", Path: "a", Type: "dir"}}},
		&GitStatus{IsRepo: true, Entries: []GitStatusEntry{{Path: "b", OrigPath: "a", Kind: "renamed"}}},
		&GitDiff{Files: []GitDiffFile{{Path: "x", Binary: true}}, Patch: "p"},
		&GitLog{Commits: []GitCommit{{OID: "1", Time: time.Unix(1, 0)}}},
	} {
		b, err := EncodeResult("id", res)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := DecodeResponse(data)
		if err != nil {
			return
		}
		for _, v := range []any{&FsOpenResult{}, &FsReadResult{}, &FsListResult{}, &FsWriteResult{},
			&GitStatus{}, &GitDiff{}, &GitLog{}, &GitCommitResult{}} {
			if err := r.Into(v); err != nil && AsError(err).Code == "" {
				t.Fatalf("error without a code: %v", err)
			}
		}
	})
}
