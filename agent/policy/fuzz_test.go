package policy

import (
	"strings"
	"testing"
)

// FuzzParse: no input panics or hangs Parse, and a policy it accepts
// answers every question without panicking.
func FuzzParse(f *testing.F) {
	for _, s := range parseSeeds {
		f.Add(s.in, ".ssh/x")
	}
	f.Add(`{"denyPaths": ["**/**/a/**/*.pem"]}`, strings.Repeat("a/", 500)+"k.pem")
	f.Fuzz(func(t *testing.T, in, path string) {
		p, err := Parse([]byte(in))
		if err != nil {
			if p != nil {
				t.Fatal("Parse returned a policy with an error")
			}
			return
		}
		_ = p.Hidden(path)
		_ = p.Op("fs.write", true)
		_ = p.Command([]string{path}, "", nil)
		_ = p.Summary("rlimit")
		if again, err := Parse([]byte(in)); err != nil || again.Hidden(path) != p.Hidden(path) {
			t.Fatalf("Parse is not deterministic: %v", err)
		}
	})
}
