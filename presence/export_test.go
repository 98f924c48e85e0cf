package presence

// SweepOnce runs one sweep now, as the tracker's goroutine does every
// Config.Sweep.
func (t *Tracker) SweepOnce() { t.sweepOnce() }

// Scans is how many sweeps so far looked at every agent.
func (t *Tracker) Scans() int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.scans
}
