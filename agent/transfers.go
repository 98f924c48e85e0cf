package agent

import (
	"crypto/rand"
	"os"
	"sync"
	"time"

	"github.com/outposthq/outpost/agent/fs"
	"github.com/outposthq/outpost/wire"
)

// DefaultTransferIdle is how long an open download or upload may go without
// a request before the agent closes it (an upload is aborted: its temporary
// file removed, the old file left).
const DefaultTransferIdle = 2 * time.Minute

// transfer is one open download (file) or upload (upload).
type transfer struct {
	file   *os.File
	size   int64
	upload *fs.Upload
	timer  *time.Timer
}

// end closes the file or aborts the upload.
func (t *transfer) end() {
	if t.file != nil {
		t.file.Close()
	}
	if t.upload != nil {
		t.upload.Abort()
	}
}

// transfers are the open handles of one agent. Each handle ends on its
// close, commit or abort, after idle time without use, or when the agent
// stops; its timer is its only owner besides the map.
type transfers struct {
	idle time.Duration

	mu     sync.Mutex
	closed bool
	open   map[string]*transfer
}

func newTransfers(idle time.Duration) *transfers {
	return &transfers{idle: idle, open: map[string]*transfer{}}
}

// add registers t under a new handle.
func (ts *transfers) add(t *transfer) (string, error) {
	h := "t" + rand.Text()
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.closed {
		t.end()
		return "", wire.Errorf(wire.CodeUnavailable, wire.ReasonAgentOffline, "agent is stopping")
	}
	ts.open[h] = t
	t.timer = time.AfterFunc(ts.idle, func() { ts.expire(h, t) })
	return h, nil
}

// get returns the transfer of h and restarts its idle clock.
func (ts *transfers) get(h string) (*transfer, error) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	t, ok := ts.open[h]
	if !ok {
		return nil, wire.Errorf(wire.CodeNotFound, "", "no open transfer %q (finished, or idle for over %s)", h, ts.idle)
	}
	t.timer.Reset(ts.idle)
	return t, nil
}

// take removes h and returns its transfer, for a commit, close or abort.
func (ts *transfers) take(h string) (*transfer, error) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	t, ok := ts.open[h]
	if !ok {
		return nil, wire.Errorf(wire.CodeNotFound, "", "no open transfer %q (finished, or idle for over %s)", h, ts.idle)
	}
	t.timer.Stop()
	delete(ts.open, h)
	return t, nil
}

// expire ends t if it is still h's transfer.
func (ts *transfers) expire(h string, t *transfer) {
	ts.mu.Lock()
	if ts.open[h] != t {
		ts.mu.Unlock()
		return
	}
	delete(ts.open, h)
	ts.mu.Unlock()
	t.end()
}

// len is the number of open transfers.
func (ts *transfers) len() int {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return len(ts.open)
}

// close ends every transfer; later adds fail. It is idempotent.
func (ts *transfers) close() {
	ts.mu.Lock()
	ts.closed = true
	open := ts.open
	ts.open = map[string]*transfer{}
	ts.mu.Unlock()
	for _, t := range open {
		t.timer.Stop()
		t.end()
	}
}
