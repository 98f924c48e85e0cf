package controlplane

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"testing"

	"github.com/outposthq/outpost/controlplane/client"
	"github.com/outposthq/outpost/wire"
)

func TestSearchAndFind(t *testing.T) {
	e := newFilesEnv(t)
	ctx := context.Background()
	writeFile(t, filepath.Join(e.root, ".gitignore"), "ignored/\n", 0o644)
	writeFile(t, filepath.Join(e.root, "ignored", "x.txt"), "TODO ignored\n", 0o644)
	writeFile(t, filepath.Join(e.root, "bin.dat"), "TODO\x00", 0o644)
	for i := range 30 {
		writeFile(t, filepath.Join(e.root, "src", fmt.Sprintf("f%02d.go", i)), fmt.Sprintf("package src\n// TODO %d\n", i), 0o644)
	}
	res, err := e.tgt.Search(ctx, client.SearchOptions{Query: "TODO"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Matches) != 30 || res.Truncated || res.Matches[0] != (client.SearchMatch{Path: "src/f00.go", Line: 2, Column: 4, Text: "// TODO 0"}) {
		t.Fatalf("search: %d matches, truncated %v, first %+v", len(res.Matches), res.Truncated, res.Matches)
	}
	res, err = e.tgt.Search(ctx, client.SearchOptions{Query: `TODO 1\d`, Regex: true, MaxResults: 5})
	if err != nil || len(res.Matches) != 5 || !res.Truncated {
		t.Fatalf("regex search with maxResults 5: %+v, %v", res, err)
	}
	found, err := e.tgt.Find(ctx, "", "f2?.go", 0)
	if err != nil || len(found.Entries) != 10 || found.Entries[0].Path != "src/f20.go" || found.Entries[0].Type != "file" || found.Truncated {
		t.Fatalf("find: %+v, %v", found, err)
	}
	for _, tc := range []struct {
		suffix string
		status int
		reason string
	}{
		{"/fs/search?query=", 400, ""},
		{"/fs/search?query=x&maxResults=0", 400, ""},
		{"/fs/search?query=x&maxResults=10001", 400, ""},
		{"/fs/search?query=(&regex=true", 400, ""},
		{"/fs/search?query=x&path=../x", 403, wire.ReasonOutsideRoot},
		{"/fs/search?query=x&path=nope", 404, ""},
		{"/fs/find?glob=", 400, ""},
		{"/fs/find?glob=*&path=../x", 403, wire.ReasonOutsideRoot},
	} {
		status, body := rawCall(t, e, http.MethodGet, tc.suffix, nil)
		if status != tc.status {
			t.Errorf("%s: %d, want %d: %s", tc.suffix, status, tc.status, body)
			continue
		}
		if _, reason := errorCode(t, body); reason != tc.reason {
			t.Errorf("%s: reason %q, want %q", tc.suffix, reason, tc.reason)
		}
	}
	// The JSON has the contract's field names.
	_, body := rawCall(t, e, http.MethodGet, "/fs/search?query=TODO+29", nil)
	var raw map[string]any
	if err := json.Unmarshal(body, &raw); err != nil || raw["truncated"] != false || len(raw["matches"].([]any)) != 1 {
		t.Errorf("search JSON: %s", body)
	}
}
