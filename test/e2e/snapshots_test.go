package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/outposthq/outpost/controlplane/client"
)

// fileSums is the hex SHA-256 of every regular file under dir, by
// relative path, and the agent's temporary files found.
func fileSums(t *testing.T, dir string) (map[string]string, []string) {
	t.Helper()
	sums := map[string]string{}
	var temps []string
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if strings.HasPrefix(fi.Name(), ".outpost-tmp-") {
			temps = append(temps, rel)
			return nil
		}
		if fi.Mode().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sums[rel] = sha256Hex(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return sums, temps
}

// A restore cut short by SIGKILL of the agent leaves every file either
// as it was or as the snapshot has it, never a part; the agent started
// again sweeps its temporary files, and the restore run again completes.
func TestRestoreInterruptedByAgentCrash(t *testing.T) {
	cp := startControlPlane(t)
	ws := cp.workspace("w1")
	src, dst := t.TempDir(), t.TempDir()
	const files = 150
	oldSums, newSums := map[string]string{}, map[string]string{}
	for i := range files {
		name := fmt.Sprintf("f%03d.bin", i)
		newSums[name] = writeRandom(t, filepath.Join(src, name), 1<<20+16*i)
		oldSums[name] = writeRandom(t, filepath.Join(dst, name), 1<<19+16*i+8)
	}
	startAgent(t, cp.enroll(ws, "laptop", ""), src)
	cloudCfg := cp.enroll(ws, "cloud", "")
	cloud := startAgent(t, cloudCfg, dst)
	cp.waitStatus(ws, "laptop", "online")
	cp.waitStatus(ws, "cloud", "online")
	sn, err := cp.cl.Agent(ws, "laptop").CreateSnapshot(ctx(t), client.CreateSnapshotRequest{})
	if err != nil {
		t.Fatal(err)
	}

	done := make(chan error, 1)
	go func() {
		_, err := cp.cl.Agent(ws, "cloud").RestoreSnapshot(ctx(t), sn.ID, client.RestoreSnapshotRequest{})
		done <- err
	}()
	// Kill the agent once the first new file is in place.
	waitFor(t, 2*time.Minute, "a first file restored", func() error {
		for name, want := range newSums {
			if b, err := os.ReadFile(filepath.Join(dst, name)); err == nil && sha256Hex(b) == want {
				return nil
			}
		}
		select {
		case err := <-done:
			return errStop{fmt.Errorf("the restore ended before a file was seen: %v", err)}
		default:
		}
		return fmt.Errorf("none yet")
	})
	cloud.kill()
	if err := <-done; err == nil {
		t.Fatal("the restore succeeded although its agent was killed")
	}
	sums, _ := fileSums(t, dst)
	var nOld, nNew int
	for name := range newSums {
		switch sums[name] {
		case newSums[name]:
			nNew++
		case oldSums[name]:
			nOld++
		default:
			t.Errorf("%s is neither old nor new after the crash", name)
		}
	}
	if nOld == 0 {
		t.Fatalf("every file was already new (%d): the kill came too late to test anything", nNew)
	}
	t.Logf("after the crash: %d files new, %d old", nNew, nOld)

	startAgent(t, cloudCfg, dst)
	cp.waitStatus(ws, "cloud", "online")
	if _, temps := fileSums(t, dst); len(temps) > 0 {
		t.Fatalf("temporary files left after the agent started again: %v", temps)
	}
	res, err := cp.cl.Agent(ws, "cloud").RestoreSnapshot(ctx(t), sn.ID, client.RestoreSnapshotRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if res.TransferredBytes >= sn.Bytes {
		t.Errorf("the second restore sent %d of %d bytes: what the first wrote was sent again", res.TransferredBytes, sn.Bytes)
	}
	sums, _ = fileSums(t, dst)
	for name, want := range newSums {
		if sums[name] != want {
			t.Errorf("%s differs after the second restore", name)
		}
	}
}

// The laptop is killed (SIGKILL) mid-session: a swap with carry restores
// the session's last periodic snapshot onto the cloud and says so.
func TestCarryAfterLaptopKilled(t *testing.T) {
	cp := startControlPlane(t)
	ws := cp.workspace("w1")
	laptopDir, cloudDir := t.TempDir(), t.TempDir()
	want := map[string]string{}
	for i := range 20 {
		name := fmt.Sprintf("src/f%02d.txt", i)
		os.MkdirAll(filepath.Join(laptopDir, "src"), 0o755)
		want[name] = writeRandom(t, filepath.Join(laptopDir, name), 1000+i)
	}
	laptop := startAgent(t, cp.enroll(ws, "laptop", ""), laptopDir)
	startAgent(t, cp.enroll(ws, "cloud", ""), cloudDir)
	cp.waitStatus(ws, "laptop", "online")
	cp.waitStatus(ws, "cloud", "online")
	if _, err := cp.cl.CreateSession(ctx(t), ws, client.CreateSessionRequest{ID: "s1", Active: "laptop", SnapshotEveryMs: 1000,
		Backends: map[string]client.SessionBackend{"laptop": {Kind: "agent", Agent: "laptop"}, "cloud": {Kind: "agent", Agent: "cloud"}}}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, statusTimeout, "a periodic snapshot", func() error {
		snaps, err := cp.cl.ListSnapshots(ctx(t), ws)
		if err == nil && len(snaps) == 0 {
			err = fmt.Errorf("none yet")
		}
		return err
	})
	laptop.kill()
	s, err := cp.cl.Swap(ctx(t), ws, "s1", client.SwapRequest{To: "cloud", Carry: true})
	if err != nil {
		t.Fatal(err)
	}
	if s.Active != "cloud" || s.LastCarry == nil || s.LastCarry.From != "laptop" || s.LastCarry.Files != 20 || time.Since(s.LastCarry.TakenAt) > time.Minute {
		t.Fatalf("after the carry: active %s, lastCarry %+v", s.Active, s.LastCarry)
	}
	got, _ := fileSums(t, cloudDir)
	for name, sum := range want {
		if got[name] != sum {
			t.Errorf("%s on the cloud: %q, want %q", name, got[name], sum)
		}
	}
}
