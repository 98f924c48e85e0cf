package proc

import (
	"os"
	"os/exec"
	"time"
)

const (
	// pumpChunk is the size of one read from an output pipe or PTY: a full
	// Linux pipe.
	pumpChunk = 64 << 10
	// eofGrace is how long the output gets to reach its end after the
	// group is killed before it is closed from this side.
	eofGrace = 250 * time.Millisecond
	// joinTimeout bounds the wait for the pumps and the stdin writer after
	// that. On unix they always end; on Windows a read blocked on a pipe
	// may not, and the process must still close.
	joinTimeout = time.Second
)

// pumpSource is one output file and the stream it feeds.
type pumpSource struct {
	f *os.File
	s stream
}

// stdio is a process's standard streams, seen from the agent: pipes or a
// PTY it reads and writes itself, so nothing in exec.Cmd waits on them.
type stdio struct {
	pumps []pumpSource // output to read: stdout and stderr, or the PTY master
	child []*os.File   // the child's ends, closed here once it started
	slave *os.File     // a PTY's slave, kept open until the leader exits
	pty   *os.File     // a PTY's master, nil without a terminal
	stdin *os.File     // the write end of stdin (a PTY's master), nil without
}

// attach sets up cmd's stdio: a PTY of cols × rows, or pipes for stdout and
// stderr and, with stdin, for stdin. Without stdin, stdin is the null
// device.
func attach(cmd *exec.Cmd, tty bool, cols, rows int, stdin bool) (*stdio, error) {
	if tty {
		master, slave, err := attachPTY(cmd, cols, rows)
		if err != nil {
			return nil, err
		}
		return &stdio{pumps: []pumpSource{{master, streamPTY}}, slave: slave, pty: master, stdin: master}, nil
	}
	s := &stdio{}
	for _, st := range []stream{streamStdout, streamStderr} {
		r, w, err := os.Pipe()
		if err != nil {
			s.abort()
			return nil, err
		}
		s.pumps = append(s.pumps, pumpSource{r, st})
		s.child = append(s.child, w)
	}
	cmd.Stdout, cmd.Stderr = s.child[0], s.child[1]
	if stdin {
		r, w, err := os.Pipe()
		if err != nil {
			s.abort()
			return nil, err
		}
		s.child = append(s.child, r)
		cmd.Stdin, s.stdin = r, w
	}
	return s, nil
}

// started closes the child's ends, but a PTY's slave, in the agent.
func (s *stdio) started() { closeAll(s.child) }

// abort closes every file of a process that did not start.
func (s *stdio) abort() {
	closeAll(s.child)
	closeAll(s.pumpFiles())
	closeAll([]*os.File{s.slave, s.stdin})
}

func (s *stdio) pumpFiles() []*os.File {
	fs := make([]*os.File, len(s.pumps))
	for i, p := range s.pumps {
		fs[i] = p.f
	}
	return fs
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
		if f != nil {
			_ = f.Close()
		}
	}
}
