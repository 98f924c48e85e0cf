package proc

import "sync"

// capBuffer keeps the first limit bytes written to it and counts the rest.
// It grows with what it keeps, never past limit: a huge limit with little
// output costs little memory.
type capBuffer struct {
	limit     int
	buf       []byte
	truncated bool // bytes past limit were written
}

// minGrowth is the first allocation of a capBuffer that keeps anything.
const minGrowth = 4 << 10

// write keeps what fits under the limit; it never refuses bytes.
func (b *capBuffer) write(p []byte) {
	keep := min(max(b.limit-len(b.buf), 0), len(p))
	if keep < len(p) {
		b.truncated = true
	}
	if keep == 0 {
		return
	}
	if cap(b.buf)-len(b.buf) < keep {
		b.grow(keep)
	}
	b.buf = append(b.buf, p[:keep]...)
}

// grow makes room for n more bytes: at least doubling, at most limit.
func (b *capBuffer) grow(n int) {
	size := min(max(2*cap(b.buf), len(b.buf)+n, minGrowth), b.limit)
	grown := make([]byte, len(b.buf), size)
	copy(grown, b.buf)
	b.buf = grown
}

// take hands over the kept bytes; later writes keep nothing.
func (b *capBuffer) take() []byte {
	out := b.buf
	b.buf, b.limit = nil, 0
	return out
}

// capture is the sink of an Exec: the first limit bytes of stdout and of
// stderr. It takes output as fast as the process writes it, so the process
// never waits for it.
type capture struct {
	mu             sync.Mutex
	stdout, stderr capBuffer
}

func newCapture(limit int) *capture {
	return &capture{stdout: capBuffer{limit: limit}, stderr: capBuffer{limit: limit}}
}

func (c *capture) admit(<-chan struct{}) {}
func (c *capture) waiting() bool         { return false }
func (c *capture) exit(int, bool)        {}
func (c *capture) close()                {}

func (c *capture) write(s stream, p []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s == streamStderr {
		c.stderr.write(p)
	} else {
		c.stdout.write(p)
	}
}

// result hands over the kept bytes (no copy: the process has closed) and
// says whether any were dropped.
func (c *capture) result() (stdout, stderr []byte, truncated bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	truncated = c.stdout.truncated || c.stderr.truncated
	return c.stdout.take(), c.stderr.take(), truncated
}
