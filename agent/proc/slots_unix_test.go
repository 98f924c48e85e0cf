//go:build unix

package proc

import (
	"context"
	"testing"

	"github.com/outposthq/outpost/wire"
)

// TestMaxProcessesSlots: failed starts give their slot back; a live process
// holds one until its group is gone.
func TestMaxProcessesSlots(t *testing.T) {
	m, err := NewManager(Config{Root: t.TempDir(), MaxProcesses: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	for range 3 {
		if _, _, err := m.Start(StartRequest{Argv: []string{"outpost-no-such-program"}}); err == nil {
			t.Fatal("a missing program started")
		}
		if _, err := m.Exec(context.Background(), ExecRequest{Argv: []string{"outpost-no-such-program"}}); err == nil {
			t.Fatal("a missing program ran")
		}
	}
	id := start(t, m, StartRequest{Argv: []string{"sleep", "60"}})
	_, err = m.Exec(context.Background(), ExecRequest{Argv: []string{"true"}})
	wantError(t, err, wire.CodeUnavailable, wire.ReasonBusy)
	_, _, err = m.Start(StartRequest{Argv: []string{"true"}})
	wantError(t, err, wire.CodeUnavailable, wire.ReasonBusy)
	if _, err := m.Terminate(id); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), generousWait)
	defer cancel()
	if _, err := m.Wait(ctx, id); err != nil {
		t.Fatal(err)
	}
	if res, err := m.Exec(context.Background(), ExecRequest{Argv: []string{"echo", "free"}}); err != nil || string(res.Stdout) != "free\n" {
		t.Fatalf("exec after the process closed: %q, %v", res.Stdout, err)
	}
}
