package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// screen renders what a terminal shows for out: carriage returns, newlines
// and erase-to-end-of-line, the only controls the progress line writes.
func screen(out string) []string {
	lines := []string{""}
	col := 0
	for i := 0; i < len(out); i++ {
		cur := &lines[len(lines)-1]
		switch {
		case out[i] == '\r':
			col = 0
		case out[i] == '\n':
			lines, col = append(lines, ""), 0
		case strings.HasPrefix(out[i:], "\x1b[K"):
			*cur = (*cur)[:col]
			i += 2
		default:
			if col < len(*cur) {
				*cur = (*cur)[:col] + string(out[i]) + (*cur)[col+1:]
			} else {
				*cur += string(out[i])
			}
			col++
		}
	}
	return lines
}

// The line a transfer leaves on the terminal is its final count, with
// nothing left of a longer earlier draw, and it never reaches the
// terminal's width (where it would wrap and every redraw add a line).
func TestProgressLastLineIsClean(t *testing.T) {
	tests := []struct {
		name  string
		total int64
		width int
		want  string // the start of the last line
	}{
		{"known size", 8 << 20, 0, "[==============================] 100.0%  8.0 MiB / 8.0 MiB  "},
		{"unknown size", -1, 0, "8.0 MiB  "},
		{"narrow terminal", 8 << 20, 40, "[==============================] 100.0%"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			// The first draw is long ("1023.9 KiB / 8.0 MiB  1023.9 KiB/s"),
			// the last shorter ("8.0 MiB / 8.0 MiB  2.3 KiB/s").
			p := &progress{w: &out, total: tt.total, start: time.Now().Add(-time.Second), width: tt.width}
			p.done = 1023<<10 + 900
			p.draw()
			p.start, p.done = time.Now().Add(-time.Hour), 8<<20
			p.finish()
			lines := screen(out.String())
			if len(lines) != 2 || lines[1] != "" {
				t.Fatalf("screen %q: want one line and the cursor on the next", lines)
			}
			last := lines[0]
			if !strings.HasPrefix(last, tt.want) {
				t.Fatalf("last line %q, want it to start %q", last, tt.want)
			}
			if tt.width > 0 && len(last) >= tt.width {
				t.Fatalf("last line is %d wide on a terminal of %d: %q", len(last), tt.width, last)
			}
			if tt.width == 0 && !strings.HasSuffix(last, "/s") {
				t.Fatalf("last line %q: leftovers after the rate", last)
			}
		})
	}
}
