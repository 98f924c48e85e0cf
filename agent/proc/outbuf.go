package proc

import (
	"bytes"
	"sort"
	"sync"
	"time"

	"github.com/outposthq/outpost/wire"
)

// stream is where a chunk of output came from.
type stream uint8

const (
	streamStdout stream = iota + 1
	streamStderr
	streamPTY
)

// String is the stream's wire name.
func (s stream) String() string {
	switch s {
	case streamStdout:
		return wire.StreamStdout
	case streamStderr:
		return wire.StreamStderr
	case streamPTY:
		return wire.StreamPTY
	}
	return "unknown"
}

// chunk is one read from an output stream, as the process wrote it.
type chunk struct {
	seq    uint64
	n      int64 // ordinal among output chunks, from 1
	off    int64 // output bytes (all streams) before this chunk
	stream stream
	data   []byte // never modified once appended
}

// limits bound one process's output buffer.
type limits struct {
	bytes, chunks int // retained output, acknowledged or not
	// window and windowChunks bound the output not yet acknowledged by an
	// attached reader; a pump waits when either is reached. They are a
	// fraction of bytes and chunks, so the rest keeps history a resuming
	// reader may still ask for.
	window, windowChunks int
	grace                time.Duration // a reader stays attached this long after a read
}

// trimmedRingSize is how many dropped chunks are remembered to compute the
// exact size of a gap for a reader whose cursor lies among them.
const trimmedRingSize = 1024

// trimmed is a dropped chunk as the gap arithmetic needs it.
type trimmed struct {
	seq      uint64
	off, end int64 // output offsets before and after it
}

// outbuf is the event log of one process: output chunks, then exit, then
// closed, numbered by one sequence counter from 1.
//
// While a reader is attached (a read waits now, or one ended less than grace
// ago, or the process started less than grace ago), a pump may add output
// only while the unacknowledged output is under the window: the process
// waits for its reader, as under ssh. A read acknowledges everything up to
// its cursor. With no reader attached, or for a detached process, output is
// always taken and the oldest chunks beyond the limits are dropped.
type outbuf struct {
	lim      limits
	detached bool

	mu       sync.Mutex
	changed  chan struct{} // closed and replaced on every change
	chunks   []chunk       // retained, by seq; chunks[head:] are live
	head     int
	bytes    int    // data bytes retained
	seq      uint64 // last sequence number given out
	total    int64  // output bytes produced
	produced int64  // output chunks produced

	ack      uint64 // highest cursor a reader sent
	ackOff   int64  // output bytes acknowledged (or dropped)
	ackN     int64  // output chunks acknowledged (or dropped)
	lastRead time.Time
	readers  int // reads waiting now

	trimSeq  uint64 // highest dropped seq
	trimEnd  int64  // output offset after it
	trimRing []trimmed
	trimNext int // next slot of trimRing once full

	exitSeq   uint64
	exitCode  int
	timedOut  bool
	closedSeq uint64

	blocked int // pumps waiting for the reader

	// watchers run after every new event, outside mu, in the goroutine
	// that added it (attach streams push from there: no handoff). The
	// slice is replaced, never modified.
	watchers []*func()
}

func newOutbuf(lim limits, detached bool, now time.Time) *outbuf {
	return &outbuf{lim: lim, detached: detached, changed: make(chan struct{}), lastRead: now}
}

// notifyLocked wakes everyone waiting for a change.
func (b *outbuf) notifyLocked() {
	close(b.changed)
	b.changed = make(chan struct{})
}

func (b *outbuf) live() []chunk { return b.chunks[b.head:] }

// attachedLocked reports whether a reader counts as attached at now.
func (b *outbuf) attachedLocked(now time.Time) bool {
	if b.detached {
		return false
	}
	return b.readers > 0 || now.Before(b.lastRead.Add(b.lim.grace))
}

// admitWait tells a pump whether it must wait for the reader at now, and
// until when the answer holds without a change (zero: until a change).
func (b *outbuf) admitWaitLocked(now time.Time) (wait bool, until time.Time) {
	if !b.attachedLocked(now) {
		return false, time.Time{}
	}
	if b.total-b.ackOff < int64(b.lim.window) && b.produced-b.ackN < int64(b.lim.windowChunks) {
		return false, time.Time{}
	}
	if b.readers == 0 {
		until = b.lastRead.Add(b.lim.grace)
	}
	return true, until
}

// admit blocks a pump until the buffer takes more output (see outbuf), or
// until stop is closed.
func (b *outbuf) admit(stop <-chan struct{}) {
	b.mu.Lock()
	wait, until := b.admitWaitLocked(time.Now())
	if !wait {
		b.mu.Unlock()
		return
	}
	b.blocked++
	defer func() {
		b.mu.Lock()
		b.blocked--
		b.mu.Unlock()
	}()
	for {
		ch := b.changed
		b.mu.Unlock()
		if !waitChangeOrUntil(ch, stop, until) {
			return
		}
		b.mu.Lock()
		if wait, until = b.admitWaitLocked(time.Now()); !wait {
			b.mu.Unlock()
			return
		}
	}
}

// waiting reports whether a pump waits for the reader now.
func (b *outbuf) waiting() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.blocked > 0
}

// waitChangeOrUntil waits for ch, for until (zero: no limit) or for stop; it
// returns false for stop.
func waitChangeOrUntil(ch, stop <-chan struct{}, until time.Time) bool {
	var expire <-chan time.Time
	if !until.IsZero() {
		t := time.NewTimer(time.Until(until))
		defer t.Stop()
		expire = t.C
	}
	select {
	case <-stop:
		return false
	case <-ch:
	case <-expire:
	}
	return true
}

// write adds a copy of p as one chunk of output.
func (b *outbuf) write(s stream, p []byte) { b.append(s, bytes.Clone(p)) }

// append adds one chunk of output; data is kept as is, the caller must not
// reuse it.
func (b *outbuf) append(s stream, data []byte) {
	if len(data) == 0 {
		return
	}
	now := time.Now()
	b.mu.Lock()
	b.fire(b.appendLocked(now, s, data))
}

func (b *outbuf) appendLocked(now time.Time, s stream, data []byte) []*func() {
	defer b.mu.Unlock()
	b.seq++
	b.produced++
	b.chunks = append(b.chunks, chunk{seq: b.seq, n: b.produced, off: b.total, stream: s, data: data})
	b.total += int64(len(data))
	b.bytes += len(data)
	b.trimLocked(now)
	b.notifyLocked()
	return b.watchers
}

// fire runs the watchers (taken under mu).
func (b *outbuf) fire(ws []*func()) {
	for _, fn := range ws {
		(*fn)()
	}
}

// watch registers fn to run after every new event, and a reader as
// attached until the returned stop (which restarts the grace, as a read's
// end does).
func (b *outbuf) watch(fn func()) (stop func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.readers++
	w := &fn
	b.watchers = append(append([]*func(){}, b.watchers...), w)
	var once sync.Once
	return func() {
		once.Do(func() {
			b.mu.Lock()
			defer b.mu.Unlock()
			b.readers--
			b.lastRead = time.Now()
			ws := make([]*func(), 0, len(b.watchers))
			for _, x := range b.watchers {
				if x != w {
					ws = append(ws, x)
				}
			}
			b.watchers = ws
		})
	}
}

// trimLocked drops the oldest chunks beyond the limits; while a reader is
// attached only those it acknowledged.
func (b *outbuf) trimLocked(now time.Time) {
	attached := b.attachedLocked(now)
	for len(b.live()) > 0 && (b.bytes > b.lim.bytes || len(b.live()) > b.lim.chunks) {
		c := b.chunks[b.head]
		if attached && c.seq > b.ack {
			return
		}
		b.chunks[b.head] = chunk{}
		b.head++
		b.bytes -= len(c.data)
		end := c.off + int64(len(c.data))
		b.trimSeq, b.trimEnd = c.seq, end
		b.rememberTrimmedLocked(trimmed{seq: c.seq, off: c.off, end: end})
		if end > b.ackOff { // dropped unread: no longer owed to anyone
			b.ackOff, b.ackN = end, c.n
		}
	}
	if b.head > 64 && b.head*2 > len(b.chunks) {
		b.chunks = append([]chunk(nil), b.live()...)
		b.head = 0
	}
}

func (b *outbuf) rememberTrimmedLocked(t trimmed) {
	if len(b.trimRing) < trimmedRingSize {
		b.trimRing = append(b.trimRing, t)
		return
	}
	b.trimRing[b.trimNext] = t
	b.trimNext = (b.trimNext + 1) % trimmedRingSize
}

// offsetThroughLocked is the output offset after every event up to seq,
// for a seq at or before the last dropped chunk. When seq is older than the
// remembered dropped chunks it is the oldest one's start: a lower bound of
// the gap.
func (b *outbuf) offsetThroughLocked(seq uint64) int64 {
	if seq == 0 || len(b.trimRing) == 0 {
		return 0
	}
	n := len(b.trimRing)
	at := func(i int) trimmed { return b.trimRing[(b.trimNext+i)%n] } // oldest first
	i := sort.Search(n, func(i int) bool { return at(i).seq > seq })
	if i == 0 {
		return at(0).off
	}
	return at(i - 1).end
}

// exit records the exit event.
func (b *outbuf) exit(code int, timedOut bool) {
	b.mu.Lock()
	b.seq++
	b.exitSeq, b.exitCode, b.timedOut = b.seq, code, timedOut
	b.notifyLocked()
	ws := b.watchers
	b.mu.Unlock()
	b.fire(ws)
}

// close records the closed event; nothing follows it.
func (b *outbuf) close() {
	b.mu.Lock()
	b.seq++
	b.closedSeq = b.seq
	b.notifyLocked()
	ws := b.watchers
	b.mu.Unlock()
	b.fire(ws)
}

// readResult is what one read returns; chunk data aliases the buffer and
// must not be modified.
type readResult struct {
	chunks    []chunk
	next      uint64
	exitSeq   uint64
	exitCode  int
	timedOut  bool
	closedSeq uint64
	dropped   int64
}

// read returns the events after cursor after (acknowledging everything up to
// it): chunks up to maxBytes (each counted with wire.ChunkOverhead; at least
// one), and exit and closed once covered. ok is false when after lies
// beyond the last event.
func (b *outbuf) read(after uint64, maxBytes int) (res readResult, ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if after > b.seq {
		return readResult{}, false
	}
	b.acknowledgeLocked(after)
	b.lastRead = time.Now()
	return b.readLocked(after, maxBytes), true
}

// peek returns what read would, without acknowledging anything: an attach
// stream sends ahead of its acknowledgements (acknowledge). ok is false when after
// lies beyond the last event.
func (b *outbuf) peek(after uint64, maxBytes int) (res readResult, ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if after > b.seq {
		return readResult{}, false
	}
	return b.readLocked(after, maxBytes), true
}

// acknowledge acknowledges every event up to after, as a read of after would;
// false when after lies beyond the last event.
func (b *outbuf) acknowledge(after uint64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if after > b.seq {
		return false
	}
	b.acknowledgeLocked(after)
	b.lastRead = time.Now()
	return true
}

func (b *outbuf) readLocked(after uint64, maxBytes int) (res readResult) {
	live := b.live()
	i := sort.Search(len(live), func(i int) bool { return live[i].seq > after })
	used, j := 0, i
	for ; j < len(live); j++ {
		size := len(live[j].data) + wire.ChunkOverhead
		if j > i && used+size > maxBytes {
			break
		}
		used += size
	}
	res.chunks = append([]chunk(nil), live[i:j]...)
	res.next = b.seq
	if j < len(live) {
		res.next = live[j-1].seq
	}
	if after < b.trimSeq {
		res.dropped = b.trimEnd - b.offsetThroughLocked(after)
	}
	if b.exitSeq != 0 && b.exitSeq <= res.next {
		res.exitSeq, res.exitCode, res.timedOut = b.exitSeq, b.exitCode, b.timedOut
	}
	if b.closedSeq != 0 && b.closedSeq <= res.next {
		res.closedSeq = b.closedSeq
	}
	return res
}

// acknowledgeLocked moves the flow-control point to after if it is ahead.
func (b *outbuf) acknowledgeLocked(after uint64) {
	if after <= b.ack {
		return
	}
	b.ack = after
	live := b.live()
	i := sort.Search(len(live), func(i int) bool { return live[i].seq > after })
	off, n := b.total, b.produced
	if i < len(live) {
		off, n = live[i].off, live[i].n-1
	}
	if off > b.ackOff {
		b.ackOff, b.ackN = off, n
		b.notifyLocked()
	}
}

// waitChange returns a channel closed at the next change, and registers a
// waiting reader until done is called.
func (b *outbuf) waitChange() (ch <-chan struct{}, done func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.readers++
	return b.changed, func() {
		b.mu.Lock()
		b.readers--
		b.lastRead = time.Now()
		b.mu.Unlock()
	}
}

// attachedUntil reports whether a reader counts as attached at now and, if
// so, the earliest time it may stop counting: a waiting read keeps it
// attached for at least the grace after now (its end restarts the grace).
func (b *outbuf) attachedUntil(now time.Time) (until time.Time, attached bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.readers > 0:
		return now.Add(b.lim.grace), true
	case now.Before(b.lastRead.Add(b.lim.grace)):
		return b.lastRead.Add(b.lim.grace), true
	}
	return time.Time{}, false
}
