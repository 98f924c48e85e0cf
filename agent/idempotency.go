package agent

import (
	"container/list"
	"sync"
	"time"
)

// Idempotency memory: how many mutation replies are kept, and for how long.
const (
	idemEntries = 4096
	idemTTL     = 10 * time.Minute
)

// idempotency runs a mutation once per key: a repeat while it runs waits for
// it, a repeat after it ran gets the same reply.
type idempotency struct {
	mu    sync.Mutex
	byKey map[string]*list.Element
	order *list.List // of *idemEntry, oldest first
}

type idemEntry struct {
	key   string
	done  chan struct{}
	reply []byte
	at    time.Time
}

func newIdempotency() *idempotency {
	return &idempotency{byKey: map[string]*list.Element{}, order: list.New()}
}

// do returns the reply of the first run of key, running run if there was none.
func (m *idempotency) do(key string, run func() []byte) []byte {
	m.mu.Lock()
	m.expireLocked(time.Now())
	if el, ok := m.byKey[key]; ok {
		e := el.Value.(*idemEntry)
		m.mu.Unlock()
		<-e.done
		return e.reply
	}
	e := &idemEntry{key: key, done: make(chan struct{}), at: time.Now()}
	m.byKey[key] = m.order.PushBack(e)
	m.mu.Unlock()
	defer close(e.done)
	e.reply = run()
	return e.reply
}

// forget drops key's finished reply, so that the next call with it runs.
func (m *idempotency) forget(key string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if el, ok := m.byKey[key]; ok {
		select {
		case <-el.Value.(*idemEntry).done:
			m.order.Remove(el)
			delete(m.byKey, key)
		default:
		}
	}
}

// expireLocked forgets finished entries past the TTL or the bound.
func (m *idempotency) expireLocked(now time.Time) {
	for el := m.order.Front(); el != nil; {
		e := el.Value.(*idemEntry)
		if now.Sub(e.at) < idemTTL && m.order.Len() <= idemEntries {
			return
		}
		select {
		case <-e.done:
		default:
			return // still running: keep it and everything newer
		}
		next := el.Next()
		m.order.Remove(el)
		delete(m.byKey, e.key)
		el = next
	}
}
