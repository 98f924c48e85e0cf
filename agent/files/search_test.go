package files

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

func searchTree(t *testing.T) *fixture {
	fx := newFixture(t)
	for name, content := range map[string]string{
		".gitignore":            "*.log\n/build/\n!keep.log\n# comment\n",
		"src/main.go":           "package main\n\nfunc main() { needle() }\n",
		"src/util.go":           "package main\n// needle here\nvar x = 1 // and needle\n",
		"src/app.log":           "needle in a log\n",
		"src/keep.log":          "needle kept\n",
		"build/out.txt":         "needle built\n",
		"src/build/gen.txt":     "needle generated, not anchored\n",
		"src/vendor/.gitignore": "*.txt\n",
		"src/vendor/v.txt":      "needle vendored\n",
		"src/vendor/v.go":       "needle vendored go\n",
		"bin/blob":              "needle\x00binary",
		".git/config":           "needle in git\n",
		"crlf.txt":              "one\r\nneedle two\r\n",
	} {
		mustWrite(t, filepath.Join(fx.root, filepath.FromSlash(name)), content)
	}
	mustSymlink(t, "../outside", filepath.Join(fx.root, "out"))
	return fx
}

func TestSearch(t *testing.T) {
	fx := searchTree(t)
	for _, tc := range []struct {
		name  string
		opts  SearchOptions
		want  []string
		trunc bool
	}{
		{"literal", SearchOptions{Query: "needle", MaxResults: 100}, []string{
			"crlf.txt:2:1:needle two", "src/build/gen.txt:1:1:needle generated, not anchored", "src/keep.log:1:1:needle kept",
			"src/main.go:3:15:func main() { needle() }", "src/util.go:2:4:// needle here", "src/util.go:3:18:var x = 1 // and needle",
			"src/vendor/v.go:1:1:needle vendored go"}, false},
		{"regex", SearchOptions{Query: `^var \w+`, Regex: true, MaxResults: 100}, []string{"src/util.go:3:1:var x = 1 // and needle"}, false},
		{"glob", SearchOptions{Query: "needle", Glob: "*.go", MaxResults: 100}, []string{
			"src/main.go:3:15:func main() { needle() }", "src/util.go:2:4:// needle here", "src/util.go:3:18:var x = 1 // and needle", "src/vendor/v.go:1:1:needle vendored go"}, false},
		{"subdir keeps the root's ignores", SearchOptions{Path: "src", Query: "needle", Glob: "*.log", MaxResults: 100}, []string{"src/keep.log:1:1:needle kept"}, false},
		{"truncated", SearchOptions{Path: "src/util.go", Query: "needle", MaxResults: 1}, []string{"src/util.go:2:4:// needle here"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ms, trunc, err := fx.fs.Search(context.Background(), tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, m := range ms {
				got = append(got, fmt.Sprintf("%s:%d:%d:%s", m.Path, m.Line, m.Column, m.Text))
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") || trunc != tc.trunc {
				t.Errorf("got (truncated %v)\n%s\nwant (truncated %v)\n%s", trunc, strings.Join(got, "\n"), tc.trunc, strings.Join(tc.want, "\n"))
			}
		})
	}
	for _, opts := range []SearchOptions{{Query: ""}, {Query: "(", Regex: true}, {Path: "../outside", Query: "x"}} {
		if _, _, err := fx.fs.Search(context.Background(), opts); err == nil {
			t.Errorf("%+v: no error", opts)
		}
	}
	if _, _, err := fx.fs.Search(context.Background(), SearchOptions{Path: "../outside", Query: "x", MaxResults: 1}); kindOf(err) != outsideRoot {
		t.Errorf("outside: %v", err)
	}
}

func TestFind(t *testing.T) {
	fx := searchTree(t)
	for _, tc := range []struct {
		path, glob string
		max        int
		want       string
		trunc      bool
	}{
		{"", "*.log", 10, "src/app.log src/keep.log", false},
		{"", "src/**/*.txt", 10, "src/build/gen.txt src/vendor/v.txt", false},
		{"src", "vendor/*", 10, "src/vendor/.gitignore src/vendor/v.go src/vendor/v.txt", false},
		{"", "*.go", 2, "src/main.go src/util.go", true},
		{"", "config", 10, "", false},
		{"", "out", 10, "out", false},
	} {
		es, trunc, err := fx.fs.Find(context.Background(), tc.path, tc.glob, tc.max)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range es {
			got = append(got, e.Path)
		}
		if strings.Join(got, " ") != tc.want || trunc != tc.trunc {
			t.Errorf("find %s %s: %v (truncated %v), want %s (%v)", tc.path, tc.glob, got, trunc, tc.want, tc.trunc)
		}
	}
}

func FuzzGlobRegexp(f *testing.F) {
	for _, s := range []string{"*.go", "**/x", "a/**", "[!a-z]?", "[", "\\", "a[b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, g string) {
		compileGlob(g)
		parseIgnore(".", g)
	})
}
