package console

import (
	"net/http"
	"strings"
	"testing"
)

var acceptCases = []struct {
	name, header string
	want         bool
}{
	{"none", "", false},
	{"gzip", "gzip", true},
	{"list", "br, gzip, deflate", true},
	{"weighted", "gzip;q=0.8, br", true},
	{"refused", "gzip;q=0", false},
	{"refused decimal", "br, gzip; q=0.000", false},
	{"spaces", "  gzip ;q=0.5", true},
	{"other", "br, deflate", false},
	{"prefix only", "gzipx", false},
	{"identity", "identity", false},
}

func TestAcceptsGzip(t *testing.T) {
	for _, c := range acceptCases {
		t.Run(c.name, func(t *testing.T) {
			r := &http.Request{Header: http.Header{"Accept-Encoding": {c.header}}}
			if got := acceptsGzip(r); got != c.want {
				t.Errorf("acceptsGzip(%q) = %v, want %v", c.header, got, c.want)
			}
		})
	}
}

// FuzzAcceptsGzip: any Accept-Encoding header is read without a panic, and
// gzip is chosen only when the header names it.
func FuzzAcceptsGzip(f *testing.F) {
	for _, c := range acceptCases {
		f.Add(c.header)
	}
	f.Fuzz(func(t *testing.T, header string) {
		r := &http.Request{Header: http.Header{"Accept-Encoding": {header}}}
		if acceptsGzip(r) && !strings.Contains(header, "gzip") {
			t.Errorf("acceptsGzip(%q) without gzip in it", header)
		}
	})
}
