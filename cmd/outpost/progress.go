package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"golang.org/x/term"
)

// progressMin is the smallest transfer that shows a progress bar.
const progressMin = 4 << 20

// progress counts bytes through a transfer and redraws one status line on
// a terminal at most every redraw interval.
type progress struct {
	w      io.Writer
	total  int64 // -1 when unknown
	done   int64
	start  time.Time
	last   time.Time
	redraw time.Duration
	// width is the terminal's (0: unknown); a line never reaches it, so
	// that it never wraps and every redraw overwrites the last.
	width int
}

// newProgress returns a progress line on stderr when stderr is a terminal
// and the transfer is large (or of unknown size); else nil, which counts
// nothing and draws nothing.
func newProgress(stderr io.Writer, total int64) *progress {
	f, ok := stderr.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) || total >= 0 && total < progressMin {
		return nil
	}
	width, _, _ := term.GetSize(int(f.Fd()))
	return &progress{w: stderr, total: total, start: time.Now(), redraw: 100 * time.Millisecond, width: width}
}

// add counts n more bytes.
func (p *progress) add(n int) {
	if p == nil {
		return
	}
	p.done += int64(n)
	if now := time.Now(); now.Sub(p.last) >= p.redraw {
		p.last = now
		p.draw()
	}
}

// finish draws the final line and ends it: the last line holds the final
// count and nothing left over from earlier draws.
func (p *progress) finish() {
	if p == nil {
		return
	}
	p.draw()
	fmt.Fprintln(p.w)
}

// draw rewrites the status line: back to its start, the line, then erase
// to the end of the line (a shorter line leaves nothing of a longer one).
func (p *progress) draw() {
	line := p.line()
	if p.width > 1 && len(line) >= p.width {
		line = line[:p.width-1]
	}
	fmt.Fprintf(p.w, "\r%s\x1b[K", line)
}

// line is the status line's text.
func (p *progress) line() string {
	rate := float64(p.done) / max(time.Since(p.start).Seconds(), 1e-3)
	if p.total < 0 {
		return fmt.Sprintf("%s  %s/s", human(p.done), human(int64(rate)))
	}
	pct := 100.0
	if p.total > 0 {
		pct = 100 * float64(p.done) / float64(p.total)
	}
	const width = 30
	bar := make([]byte, width)
	for i := range bar {
		bar[i] = ' '
		if float64(i) < pct/100*width {
			bar[i] = '='
		}
	}
	return fmt.Sprintf("[%s] %5.1f%%  %s / %s  %s/s", bar, pct, human(p.done), human(p.total), human(int64(rate)))
}

// human renders a byte count with a binary unit.
func human(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// progressReader counts what is read through it.
type progressReader struct {
	r io.Reader
	p *progress
}

func (r progressReader) Read(b []byte) (int, error) {
	n, err := r.r.Read(b)
	r.p.add(n)
	return n, err
}

// progressWriter counts what is written through it.
type progressWriter struct {
	w io.Writer
	p *progress
}

func (w progressWriter) Write(b []byte) (int, error) {
	n, err := w.w.Write(b)
	w.p.add(n)
	return n, err
}
