package proc

import (
	"errors"
	"os"
	"os/exec"
	"slices"
	"sync/atomic"
	"time"
)

const (
	// eofGrace is how long the pipes get to reach EOF after the group is
	// killed before they are closed from this side.
	eofGrace = 250 * time.Millisecond
	// joinTimeout bounds the wait for the pipe goroutines after that. On
	// unix they always end; on Windows a read blocked on a pipe held by an
	// orphan may not, and Exec must still return.
	joinTimeout = time.Second
)

// stdio is a process's standard streams, seen from the agent: pipes it reads
// and writes itself, so nothing in exec.Cmd waits on them.
type stdio struct {
	stdout, stderr *outputReader
	stdin          *stdinFeeder // nil when there is no stdin data
	childEnds      []*os.File   // the child's ends, closed here after start

	open       atomic.Int32  // readers not yet at EOF
	outputDone chan struct{} // closed when both readers are done
	feedDone   chan struct{} // closed when stdin is fed (or at once)
}

// newStdio creates the pipes and attaches the child's ends to cmd. Output
// beyond limit bytes per stream is read and dropped.
func newStdio(cmd *exec.Cmd, stdin []byte, limit int) (*stdio, error) {
	n := 2
	if len(stdin) > 0 {
		n = 3
	}
	var r, w [3]*os.File
	for i := range n {
		var err error
		if r[i], w[i], err = os.Pipe(); err != nil {
			closeAll(slices.Concat(r[:i], w[:i]))
			return nil, err
		}
	}
	s := &stdio{
		stdout:     newOutputReader(r[0], limit),
		stderr:     newOutputReader(r[1], limit),
		childEnds:  []*os.File{w[0], w[1]},
		outputDone: make(chan struct{}),
		feedDone:   make(chan struct{}),
	}
	cmd.Stdout, cmd.Stderr = w[0], w[1]
	if n == 3 {
		s.childEnds = append(s.childEnds, r[2])
		s.stdin = &stdinFeeder{w: w[2], done: s.feedDone}
		cmd.Stdin = r[2]
	} // else exec.Cmd connects stdin to the null device.
	return s, nil
}

// abort closes every pipe of a process that did not start.
func (s *stdio) abort() {
	closeAll(s.childEnds)
	closeAll([]*os.File{s.stdout.f, s.stderr.f})
	if s.stdin != nil {
		s.stdin.close()
	}
}

// start closes the child's ends and starts feeding and reading.
func (s *stdio) start(stdin []byte) {
	closeAll(s.childEnds)
	s.open.Store(2)
	for _, o := range []*outputReader{s.stdout, s.stderr} {
		go func() {
			o.loop()
			if s.open.Add(-1) == 0 {
				close(s.outputDone)
			}
		}()
	}
	if s.stdin != nil {
		go s.stdin.feed(stdin)
	} else {
		close(s.feedDone)
	}
}

// lastOutput is when either stream last produced data.
func (s *stdio) lastOutput() time.Time {
	a, b := s.stdout.lastOutput(), s.stderr.lastOutput()
	if a.After(b) {
		return a
	}
	return b
}

// finish ends all I/O once the process group is dead: stdin is closed, the
// readers get eofGrace to reach EOF (pipes held by an escaped process are
// then closed from this side) and the goroutines are waited for. It reports
// an error if some goroutine did not end within joinTimeout.
func (s *stdio) finish() error {
	if s.stdin != nil {
		s.stdin.close()
	}
	if !waitFor(s.outputDone, eofGrace) {
		closeAll([]*os.File{s.stdout.f, s.stderr.f})
	}
	deadline := time.Now().Add(joinTimeout)
	ok := waitFor(s.outputDone, time.Until(deadline)) && waitFor(s.feedDone, time.Until(deadline))
	closeAll([]*os.File{s.stdout.f, s.stderr.f})
	if !ok {
		return errors.New("pipe goroutines did not end")
	}
	return nil
}

// result is the kept output of both streams and whether any was dropped.
func (s *stdio) result() (stdout, stderr []byte, truncated bool) {
	stdout, t1 := s.stdout.result()
	stderr, t2 := s.stderr.result()
	return stdout, stderr, t1 || t2
}

func waitFor(ch <-chan struct{}, d time.Duration) bool {
	t := time.NewTimer(max(d, 0))
	defer t.Stop()
	select {
	case <-ch:
		return true
	case <-t.C:
		return false
	}
}

func closeAll(files []*os.File) {
	for _, f := range files {
		_ = f.Close()
	}
}
