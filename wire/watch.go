package wire

// Watch ops (API.md's fs/watch). start finds or makes the agent's watch
// of a directory (shared by every client of the same path and
// recursion); poll returns its events after a seq, waiting up to waitMs
// for one. Both are reads: repeating either is harmless.
const (
	OpFsWatchStart = "fs.watch.start"
	OpFsWatchPoll  = "fs.watch.poll"
)

// Watch limits.
const (
	// MaxWatchWait bounds a poll's wait, below the call timeout.
	MaxWatchWait = 30000
	// MaxWatchEvents bounds the events of one poll reply.
	MaxWatchEvents = 1000
)

func init() {
	RegisterOp(OpFsWatchStart, OpInfo{})
	RegisterOp(OpFsWatchPoll, OpInfo{})
}

// FsWatchStartRequest is the body of fs.watch.start.
type FsWatchStartRequest struct {
	Path      string `msgpack:"path"`
	Recursive bool   `msgpack:"rec,omitempty"`
}

// Validate checks the path.
func (r *FsWatchStartRequest) Validate() error { return validPath("path", r.Path) }

// FsWatchStartResult names the watch; Next is the seq its next event gets.
type FsWatchStartResult struct {
	Handle string `msgpack:"h"`
	Next   uint64 `msgpack:"next"`
}

// FsWatchPollRequest is the body of fs.watch.poll: events after seq After.
type FsWatchPollRequest struct {
	Handle string `msgpack:"h"`
	After  uint64 `msgpack:"after"`
	WaitMs int    `msgpack:"wait,omitempty"`
}

// Validate checks the handle and wait.
func (r *FsWatchPollRequest) Validate() error {
	if err := validHandle(r.Handle); err != nil {
		return err
	}
	if r.WaitMs < 0 || r.WaitMs > MaxWatchWait {
		return Errorf(CodeInvalidArgument, "", "wait must be 0 to %d ms", MaxWatchWait)
	}
	return nil
}

// FsWatchEvent is one change: op create, write, remove or rename, or
// overflow (the kernel dropped events; Path empty).
type FsWatchEvent struct {
	Seq  uint64 `msgpack:"seq"`
	Path string `msgpack:"path"`
	Op   string `msgpack:"op"`
}

// FsWatchPollResult is the result of fs.watch.poll. Reset says After was
// outside the retained window (events were lost, or the watch is a new
// one): Events then start at the oldest retained.
type FsWatchPollResult struct {
	Events []FsWatchEvent `msgpack:"ev"`
	Reset  bool           `msgpack:"reset,omitempty"`
}
