package proc

import "time"

// watchHangup sends hangupSignal to the group of a process started with
// Hangup once no reader has been attached for longer than the reader grace
// (see outbuf.attachedUntil), as an ssh session's end hangs up its
// terminal; once. It returns then, or when the leader exits.
func (p *process) watchHangup() {
	for {
		until, attached := p.out.attachedUntil(time.Now())
		if !attached {
			break
		}
		t := time.NewTimer(time.Until(until))
		select {
		case <-p.exited:
			t.Stop()
			return
		case <-t.C:
		}
	}
	if err := p.signalLive(hangupSignal); err == nil {
		p.log.Debug("process hung up: no reader attached", "id", p.id, "pid", p.pid)
	}
}
