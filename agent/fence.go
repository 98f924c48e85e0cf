package agent

import (
	"sync"

	"github.com/outposthq/outpost/wire"
)

// maxFencedSessions bounds the sessions whose epoch the agent remembers.
const maxFencedSessions = 8192

// fence remembers the highest epoch seen per session and refuses older ones,
// so a stale control-plane replica cannot act on the machine after a swap.
type fence struct {
	mu     sync.Mutex
	epochs map[string]uint64
}

func newFence() *fence { return &fence{epochs: map[string]uint64{}} }

// check admits (session, epoch) if epoch is at least the highest seen, and
// raises the mark; requests outside sessions pass.
func (f *fence) check(session string, epoch uint64) error {
	if session == "" {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	seen, ok := f.epochs[session]
	if ok && epoch < seen {
		return wire.Errorf(wire.CodeConflict, wire.ReasonFenced,
			"session %s is at epoch %d on this agent; a request with epoch %d is stale", session, seen, epoch)
	}
	if !ok && len(f.epochs) >= maxFencedSessions {
		for k := range f.epochs { // forget one at random: its fence restarts at this epoch
			delete(f.epochs, k)
			break
		}
	}
	f.epochs[session] = epoch
	return nil
}
