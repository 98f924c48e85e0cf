package controlplane

import (
	"sync"
	"time"
)

// limiter is a set of token buckets by key, in memory: the guessing limits
// of device login. Each replica of a control plane keeps its own, which
// multiplies the allowance by the replica count at most.
type limiter struct {
	mu      sync.Mutex
	buckets map[string]*tokenBucket
}

type tokenBucket struct {
	tokens float64
	at     time.Time
}

// maxLimiterKeys bounds the map: past it, full buckets are forgotten.
const maxLimiterKeys = 10000

// fill returns key's bucket refilled to now (burst tokens at most, one per
// every).
func (l *limiter) fill(key string, burst int, every time.Duration, now time.Time) *tokenBucket {
	if l.buckets == nil {
		l.buckets = map[string]*tokenBucket{}
	}
	b := l.buckets[key]
	if b == nil {
		if len(l.buckets) >= maxLimiterKeys {
			l.prune(burst, every, now)
		}
		b = &tokenBucket{tokens: float64(burst), at: now}
		l.buckets[key] = b
	}
	b.tokens = min(float64(burst), b.tokens+float64(now.Sub(b.at))/float64(every))
	b.at = now
	return b
}

// prune drops the buckets that have refilled.
func (l *limiter) prune(burst int, every time.Duration, now time.Time) {
	for k, b := range l.buckets {
		if b.tokens+float64(now.Sub(b.at))/float64(every) >= float64(burst) {
			delete(l.buckets, k)
		}
	}
}

// allow takes a token from key's bucket, reporting whether there was one.
func (l *limiter) allow(key string, burst int, every time.Duration) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.fill(key, burst, every, time.Now())
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// has reports whether key's bucket holds a token, taking none.
func (l *limiter) has(key string, burst int, every time.Duration) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.fill(key, burst, every, time.Now()).tokens >= 1
}
