package main

import "testing"

func TestParseAuthor(t *testing.T) {
	tests := []struct {
		in, name, email string
		ok              bool
	}{
		{"Ada Lovelace <ada@example.com>", "Ada Lovelace", "ada@example.com", true},
		{"  Ada   <ada@example.com>  ", "Ada", "ada@example.com", true},
		{"Ada", "", "", false},
		{"<ada@example.com>", "", "", false},
		{"Ada <>", "", "", false},
		{"Ada <ada@example.com> extra", "", "", false},
		{"Ada ada@example.com>", "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			name, email, ok := parseAuthor(tt.in)
			if ok != tt.ok || ok && (name != tt.name || email != tt.email) {
				t.Fatalf("parseAuthor(%q) = %q, %q, %v; want %q, %q, %v", tt.in, name, email, ok, tt.name, tt.email, tt.ok)
			}
		})
	}
}
