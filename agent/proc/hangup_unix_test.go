//go:build unix

package proc

import (
	"context"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestHangup: a process started with Hangup gets SIGHUP once no reader has
// been attached for longer than the grace, and not while one reads; a
// detached one, or one without Hangup, is never hung up.
func TestHangup(t *testing.T) {
	const grace = 300 * time.Millisecond
	m, err := NewManager(Config{Root: t.TempDir(), ReaderGrace: grace})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	sleep := []string{"sleep", "60"}
	hup := start(t, m, StartRequest{Argv: sleep, Hangup: true})
	read := start(t, m, StartRequest{Argv: sleep, Hangup: true})
	detached := start(t, m, StartRequest{Argv: sleep, Hangup: true, Detached: true})
	plain := start(t, m, StartRequest{Argv: sleep})

	// A reader keeps read attached with long-polls, as the attach
	// WebSocket does, until stopReading.
	ctx, stopReading := context.WithCancel(context.Background())
	var reader sync.WaitGroup
	reader.Add(1)
	go func() {
		defer reader.Done()
		for ctx.Err() == nil {
			if _, err := m.Read(ctx, read, 0, 0, grace/2); err != nil {
				return
			}
		}
	}()
	defer func() { stopReading(); reader.Wait() }()

	info := waitClosed(t, m, hup)
	if info.ExitCode == nil || *info.ExitCode != 128+int(syscall.SIGHUP) {
		t.Fatalf("hangup process exit %v, want %d (SIGHUP)", info.ExitCode, 128+int(syscall.SIGHUP))
	}
	// Several graces later the others still run.
	time.Sleep(4 * grace)
	for _, id := range []string{read, detached, plain} {
		if in, err := m.Get(id); err != nil || !in.Running {
			t.Fatalf("%s: %+v, %v; want running", id, in, err)
		}
	}
	stopReading()
	reader.Wait()
	info = waitClosed(t, m, read)
	if info.ExitCode == nil || *info.ExitCode != 128+int(syscall.SIGHUP) {
		t.Fatalf("process whose reader left: exit %v, want SIGHUP", info.ExitCode)
	}
}
