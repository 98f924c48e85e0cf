//go:build unix

package update

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// trialHelperEnv makes the test binary play a part in
// TestTrialStopsWhenItsAgentDies: "agent" starts a trial and exits while it
// runs, as an agent killed mid-trial does; "trial" waits to be stopped.
const trialHelperEnv = "OUTPOST_TRIAL_TEST_HELPER"

func TestMain(m *testing.M) {
	switch os.Getenv(trialHelperEnv) {
	case "agent":
		os.Exit(helperAgent())
	case "trial":
		os.Exit(helperTrial())
	}
	os.Exit(m.Run())
}

// helperAgent starts the trial the way Handoff does, minus the parent-death
// signal (which systems other than Linux lack), waits for it to run and
// exits without stopping it.
func helperAgent() int {
	dir := os.Getenv("HELPER_DIR")
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), trialHelperEnv+"=trial", TrialEnv+"="+filepath.Join(dir, "marker"))
	if err := cmd.Start(); err != nil {
		return 2
	}
	for i := 0; i < 200; i++ {
		if _, err := os.Stat(filepath.Join(dir, "waiting")); err == nil {
			return 0 // dies with its trial running
		}
		time.Sleep(50 * time.Millisecond)
	}
	return 3
}

// helperTrial is the new version's side: it waits to be told to stop, and
// says when it stops.
func helperTrial() int {
	dir := os.Getenv("HELPER_DIR")
	tr := TrialFromEnv()
	if tr == nil {
		return 2
	}
	_ = os.WriteFile(filepath.Join(dir, "waiting"), nil, 0o600)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tr.WaitStop(ctx)
	if ctx.Err() != nil {
		return 1
	}
	_ = os.WriteFile(filepath.Join(dir, "stopped"), nil, 0o600)
	return 0
}

// A trial whose agent dies (killed mid-trial) stops by itself, where no
// parent-death signal stops it: it must not serve on beside the agent the
// service manager starts next.
func TestTrialStopsWhenItsAgentDies(t *testing.T) {
	dir := t.TempDir()
	agent := exec.Command(os.Args[0], "-test.run=^$")
	agent.Env = append(os.Environ(), trialHelperEnv+"=agent", "HELPER_DIR="+dir)
	// No output captured: the trial would hold the pipe open.
	if err := agent.Run(); err != nil {
		t.Fatalf("helper agent: %v", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(filepath.Join(dir, "stopped")); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the trial did not stop when the agent that started it died")
		}
		time.Sleep(50 * time.Millisecond)
	}
}
