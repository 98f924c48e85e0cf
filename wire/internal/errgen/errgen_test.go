package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// wireDir is the wire package, from this package's directory.
const wireDir = "../.."

// TestGeneratedFilesAreCurrent fails when errors_generated.go or a generated
// table of PROTOCOL.md or docs/API.md differs from what reasons.json makes.
func TestGeneratedFilesAreCurrent(t *testing.T) {
	tab, err := load(filepath.Join(wireDir, "reasons.json"))
	if err != nil {
		t.Fatal(err)
	}
	files, err := render(tab, func(p string) ([]byte, error) { return os.ReadFile(filepath.Join(wireDir, p)) })
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 1+len(docs) {
		t.Fatalf("rendered %d files, want %d", len(files), 1+len(docs))
	}
	for p, want := range files {
		got, err := os.ReadFile(filepath.Join(wireDir, p))
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("wire/%s is not what wire/reasons.json makes: run go generate ./wire\n%s", p, firstDiff(string(got), string(want)))
		}
	}
}

// firstDiff describes the first line where got and want differ.
func firstDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := range max(len(g), len(w)) {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return "line " + strconv.Itoa(i+1) + ":\n  have: " + gl + "\n  want: " + wl
		}
	}
	return ""
}

func TestParseRefusesBadTables(t *testing.T) {
	const codes = `"codes": [{"code": "conflict", "status": 409, "meaning": "m"}, {"code": "later", "status": 502, "meaning": "m", "planned": true}]`
	tests := []struct {
		name, json, want string
	}{
		{"ok", `{` + codes + `, "reasons": [{"reason": "a_b", "code": "conflict", "meaning": "m"}]}`, ""},
		{"unknown field", `{` + codes + `, "reasons": [{"reason": "a", "code": "conflict", "meaning": "m", "meanig": "x"}]}`, "unknown field"},
		{"no meaning", `{` + codes + `, "reasons": [{"reason": "a", "code": "conflict", "meaning": " "}]}`, "no meaning"},
		{"pipe in meaning", `{` + codes + `, "reasons": [{"reason": "a", "code": "conflict", "meaning": "a | b"}]}`, "holds |"},
		{"unknown code", `{` + codes + `, "reasons": [{"reason": "a", "code": "nope", "meaning": "m"}]}`, "unknown code"},
		{"not snake", `{` + codes + `, "reasons": [{"reason": "aB", "code": "conflict", "meaning": "m"}]}`, "snake_case"},
		{"twice", `{` + codes + `, "reasons": [{"reason": "a", "code": "conflict", "meaning": "m"}, {"reason": "a", "code": "conflict", "meaning": "n"}]}`, "twice"},
		{"code twice", `{"codes": [{"code": "conflict", "status": 409, "meaning": "m"}, {"code": "conflict", "status": 409, "meaning": "m"}], "reasons": []}`, "twice"},
		{"bad status", `{"codes": [{"code": "conflict", "status": 299, "meaning": "m"}], "reasons": []}`, "not an HTTP error status"},
		{"status is the code's", `{` + codes + `, "reasons": [{"reason": "a", "code": "conflict", "status": 409, "meaning": "m"}]}`, "leave it out"},
		{"name is the default", `{` + codes + `, "reasons": [{"reason": "a_id", "code": "conflict", "name": "AID", "meaning": "m"}]}`, "leave it out"},
		{"live reason of a planned code", `{` + codes + `, "reasons": [{"reason": "a", "code": "later", "meaning": "m"}]}`, "must be"},
		{"rows disagree", `{` + codes + `, "reasons": [{"reason": "a", "code": "conflict", "meaning": "m"}, {"reason": "a", "code": "later", "meaning": "m", "planned": true}]}`, "disagree"},
		{"one constant, two reasons", `{` + codes + `, "reasons": [{"reason": "a", "code": "conflict", "name": "X", "meaning": "m"}, {"reason": "x", "code": "conflict", "meaning": "m"}]}`, "both make"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parse([]byte(tc.json))
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("parse: %v, want no error", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("parse: %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestCamel(t *testing.T) {
	for in, want := range map[string]string{
		"agent_offline":     "AgentOffline",
		"not_a_tty":         "NotATTY",
		"invalid_id":        "InvalidID",
		"nats_disconnected": "NATSDisconnected",
		"busy":              "Busy",
	} {
		if got := camel(in); got != want {
			t.Errorf("camel(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSplice(t *testing.T) {
	doc := "a\n<!-- errgen:x begin: note -->\nold\n<!-- errgen:x end -->\nb\n"
	got, err := splice([]byte(doc), "x", "new\n")
	if want := "a\n<!-- errgen:x begin: note -->\nnew\n<!-- errgen:x end -->\nb\n"; err != nil || string(got) != want {
		t.Fatalf("splice = %q, %v; want %q", got, err, want)
	}
	for _, bad := range []string{"a\n", "<!-- errgen:x begin -->\n", "<!-- errgen:x end -->\n<!-- errgen:x begin -->\n"} {
		if _, err := splice([]byte(bad), "x", ""); err == nil {
			t.Errorf("splice(%q) = nil error, want one", bad)
		}
	}
}
