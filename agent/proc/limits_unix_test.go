//go:build unix

package proc

import (
	"context"
	"runtime"
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

// TestExecHugeCapTinyOutput: a 400 MB output cap with two bytes of output
// works, and neither the buffers nor the run allocate anywhere near the cap.
func TestExecHugeCapTinyOutput(t *testing.T) {
	m, _ := newTestManager(t)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	res, err := m.Exec(context.Background(), ExecRequest{Argv: []string{"echo", "hi"}, OutputCap: 400 << 20})
	runtime.ReadMemStats(&after)
	if err != nil || string(res.Stdout) != "hi\n" || res.Truncated {
		t.Fatalf("exec = %+v, %v", res, err)
	}
	if cap(res.Stdout) > minGrowth || cap(res.Stderr) > minGrowth {
		t.Fatalf("output buffers of %d and %d bytes for 3 and 0 bytes of output", cap(res.Stdout), cap(res.Stderr))
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 16<<20 {
		t.Fatalf("the exec allocated %d bytes: the cap was preallocated", grew)
	}
}
