//go:build !agent

package main

import "testing"

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"1": 1, "512KiB": 512 << 10, "500MiB": 500 << 20, "20GiB": 20 << 30, "2g": 2 << 30, "1 TiB": 1 << 40, "7B": 7} {
		if got, err := parseSize(in); err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "0", "-1GiB", "GiB", "1.5GiB", "3 PB", "9999999999TiB"} {
		if got, err := parseSize(in); err == nil {
			t.Errorf("parseSize(%q) = %d, want an error", in, got)
		}
	}
}
