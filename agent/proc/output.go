package proc

import (
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// readChunk is the size of one read from an output pipe.
const readChunk = 32 << 10

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

// outputReader drains one output pipe of a process into a capBuffer, as fast
// as the process writes, so the process never blocks on it.
type outputReader struct {
	f *os.File

	mu  sync.Mutex
	buf capBuffer

	last atomic.Int64 // time of the last read with data, Unix nanoseconds
}

func newOutputReader(f *os.File, limit int) *outputReader {
	return &outputReader{f: f, buf: capBuffer{limit: limit}}
}

// loop reads until EOF or until f is closed.
func (o *outputReader) loop() {
	p := make([]byte, readChunk)
	for {
		n, err := o.f.Read(p)
		if n > 0 {
			o.mu.Lock()
			o.buf.write(p[:n])
			o.mu.Unlock()
			o.last.Store(time.Now().UnixNano())
		}
		if err != nil {
			return
		}
	}
}

// lastOutput is when data was last read, or the zero time.
func (o *outputReader) lastOutput() time.Time {
	if ns := o.last.Load(); ns != 0 {
		return time.Unix(0, ns)
	}
	return time.Time{}
}

// result hands over the kept bytes (no copy: the run is over) and says
// whether any were dropped.
func (o *outputReader) result() ([]byte, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	truncated := o.buf.truncated
	return o.buf.take(), truncated
}

// stdinFeeder writes a request's stdin to the process, then closes it.
type stdinFeeder struct {
	w    *os.File
	once sync.Once
	done chan struct{}
}

// feed writes data and closes the pipe; a process that exits without reading
// it all makes the write fail, which is fine.
func (s *stdinFeeder) feed(data []byte) {
	defer close(s.done)
	_, _ = s.w.Write(data)
	s.close()
}

// close closes the pipe, which also ends a write blocked on a full pipe.
func (s *stdinFeeder) close() {
	s.once.Do(func() { _ = s.w.Close() })
}
