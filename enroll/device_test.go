package enroll

import (
	"strings"
	"testing"
)

func TestNormalizeUserCode(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
		ok             bool
	}{
		{"canonical", "ABCD-EFGH", "ABCD-EFGH", true},
		{"lower case, no dash", "abcdefgh", "ABCD-EFGH", true},
		{"spaces", " abcd efgh ", "ABCD-EFGH", true},
		{"digits", "2345-6789", "2345-6789", true},
		{"zero is not in the alphabet", "ABCD-EFG0", "", false},
		{"O is not in the alphabet", "ABCD-EFGO", "", false},
		{"one is not in the alphabet", "ABCD-EFG1", "", false},
		{"I is not in the alphabet", "ABCD-EFGI", "", false},
		{"too short", "ABCD-EFG", "", false},
		{"too long", "ABCD-EFGHJ", "", false},
		{"empty", "", "", false},
		{"not ascii", "ABCD-EFGÄ", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := NormalizeUserCode(tc.in)
			if got != tc.want || ok != tc.ok {
				t.Fatalf("NormalizeUserCode(%q) = %q, %v; want %q, %v", tc.in, got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestNewUserCode(t *testing.T) {
	seen := map[string]bool{}
	for range 200 {
		c, err := NewUserCode()
		if err != nil {
			t.Fatal(err)
		}
		if got, ok := NormalizeUserCode(c); !ok || got != c {
			t.Fatalf("NewUserCode made %q, which normalizes to %q, %v", c, got, ok)
		}
		if strings.ContainsAny(c, "0O1I") {
			t.Fatalf("%q has a look-alike", c)
		}
		seen[c] = true
	}
	if len(seen) < 199 {
		t.Fatalf("only %d distinct codes of 200", len(seen))
	}
}

// FuzzNormalizeUserCode: what people type at an approval. A result is
// always canonical and normalizing it again changes nothing.
func FuzzNormalizeUserCode(f *testing.F) {
	for _, s := range []string{"ABCD-EFGH", "abcdefgh", " abcd efgh ", "ABCD-EFG0", "", "ABCD-EFGÄ", "----"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		got, ok := NormalizeUserCode(in)
		if !ok {
			if got != "" {
				t.Fatalf("not ok but %q", got)
			}
			return
		}
		if len(got) != userCodeLen+1 || got[userCodeLen/2] != '-' {
			t.Fatalf("%q -> %q: not XXXX-XXXX", in, got)
		}
		if again, ok := NormalizeUserCode(got); !ok || again != got {
			t.Fatalf("%q -> %q -> %q, %v", in, got, again, ok)
		}
	})
}
