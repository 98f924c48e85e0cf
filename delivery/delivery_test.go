package delivery

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/outposthq/outpost/wire"
)

func TestStartBy(t *testing.T) {
	now := time.UnixMilli(1_000_000)
	tests := []struct {
		name     string
		deadline time.Time
		window   time.Duration
		want     time.Time
	}{
		{"window first", now.Add(time.Minute), 5 * time.Second, now.Add(5 * time.Second)},
		{"deadline first", now.Add(time.Second), 5 * time.Second, now.Add(time.Second)},
	}
	for _, tt := range tests {
		if got := StartBy(now, tt.deadline, tt.window); !got.Equal(tt.want) {
			t.Errorf("%s: StartBy = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// The caller gives up only when the agent is not there and would refuse
// the request if it woke with it now.
func TestGiveUp(t *testing.T) {
	sb := time.UnixMilli(2_000_000)
	after, at := sb.Add(time.Millisecond), sb.Add(999*time.Microsecond) // at: same millisecond
	tests := []struct {
		name string
		w    Wait
		now  time.Time
		want bool
	}{
		{"online", Wait{WasOnline: true, Online: true, StartBy: sb}, after, false},
		{"lapsed before start-by", Wait{WasOnline: true, StartBy: sb}, sb.Add(-time.Second), false},
		{"lapsed in start-by's millisecond", Wait{WasOnline: true, StartBy: sb}, at, false},
		{"lapsed after start-by", Wait{WasOnline: true, StartBy: sb}, after, true},
		{"never online, within a lease", Wait{Waited: time.Second, MinLease: 3 * time.Second, StartBy: sb}, after, false},
		{"never online, past a lease", Wait{Waited: 3 * time.Second, MinLease: 3 * time.Second, StartBy: sb}, after, true},
	}
	for _, tt := range tests {
		if got := GiveUp(tt.w, tt.now); got != tt.want {
			t.Errorf("%s: GiveUp = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// A request GiveUp lets its caller abandon is one Admit refuses at the
// same instant: the two sides count the start-by time alike.
func TestGiveUpImpliesAdmitRefuses(t *testing.T) {
	sb := time.UnixMilli(3_000_000)
	req := &wire.Request{ID: "r", Op: wire.OpExec, Deadline: sb.Add(time.Hour).UnixMilli(), StartBy: sb.UnixMilli()}
	for d := -2 * time.Millisecond; d <= 2*time.Millisecond; d += 250 * time.Microsecond {
		now := sb.Add(d)
		gaveUp := GiveUp(Wait{WasOnline: true, StartBy: sb}, now)
		refused := Admit(req, now, &Fence{}) != nil
		if gaveUp && !refused {
			t.Fatalf("at start-by%+v the caller gives up but the agent would run the request", d)
		}
	}
}

func TestAdmit(t *testing.T) {
	now := time.UnixMilli(5_000_000)
	ms := func(d time.Duration) int64 { return now.Add(d).UnixMilli() }
	var fence Fence
	if err := fence.Check("s1", 3); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		req    wire.Request
		reason string // "" admitted
	}{
		{"fresh", wire.Request{Deadline: ms(time.Minute), StartBy: ms(time.Second)}, ""},
		{"no start-by", wire.Request{Deadline: ms(time.Minute)}, ""},
		{"expired", wire.Request{Deadline: ms(-time.Millisecond)}, wire.ReasonDeadlinePassed},
		{"late", wire.Request{Deadline: ms(time.Minute), StartBy: ms(-time.Millisecond)}, wire.ReasonDeadlinePassed},
		{"current epoch", wire.Request{Deadline: ms(time.Minute), Session: "s1", Epoch: 3}, ""},
		{"stale epoch", wire.Request{Deadline: ms(time.Minute), Session: "s1", Epoch: 2}, wire.ReasonFenced},
	}
	for _, tt := range tests {
		err := Admit(&tt.req, now, &fence)
		got := ""
		if err != nil {
			got = wire.AsError(err).Reason
		}
		if got != tt.reason || (err == nil) != (tt.reason == "") {
			t.Errorf("%s: Admit = %v, want reason %q", tt.name, err, tt.reason)
		}
		if err != nil && !NotRun(err) {
			t.Errorf("%s: a refusal must prove the request did not run", tt.name)
		}
	}
}

func TestFenceRaisesAndForgets(t *testing.T) {
	var f Fence
	for _, step := range []struct {
		session string
		epoch   uint64
		ok      bool
	}{{"a", 1, true}, {"a", 2, true}, {"a", 1, false}, {"", 0, true}, {"b", 1, true}} {
		if err := f.Check(step.session, step.epoch); (err == nil) != step.ok {
			t.Fatalf("Check(%q, %d) = %v, want ok=%v", step.session, step.epoch, err, step.ok)
		}
	}
	for i := range maxFencedSessions + 10 {
		_ = f.Check(string(rune('c'+i%20))+string(rune(i)), 1)
	}
	if n := len(f.epochs); n > maxFencedSessions {
		t.Fatalf("fence holds %d sessions, more than %d", n, maxFencedSessions)
	}
}

func TestNotRunAndMaybeDelivered(t *testing.T) {
	offline := wire.Errorf(wire.CodeUnavailable, wire.ReasonAgentOffline, "x")
	tests := []struct {
		name                string
		err                 error
		notRun, maybeDelive bool
	}{
		{"nil", nil, false, false},
		{"no responders", offline, true, false},
		{"lapse while waiting", Ambiguous(offline), false, true},
		{"fenced", wire.Errorf(wire.CodeConflict, wire.ReasonFenced, "x"), true, false},
		{"deadline passed", wire.Errorf(wire.CodeDeadlineExceeded, wire.ReasonDeadlinePassed, "x"), true, false},
		{"timeout", Ambiguous(wire.Errorf(wire.CodeDeadlineExceeded, "", "x")), false, true},
		{"agent's answer", wire.Errorf(wire.CodeNotFound, "", "x"), false, false},
		{"plain", errors.New("x"), false, false},
	}
	for _, tt := range tests {
		if got := NotRun(tt.err); got != tt.notRun {
			t.Errorf("%s: NotRun = %v, want %v", tt.name, got, tt.notRun)
		}
		if got := MaybeDelivered(tt.err); got != tt.maybeDelive {
			t.Errorf("%s: MaybeDelivered = %v, want %v", tt.name, got, tt.maybeDelive)
		}
	}
}

// A request at a newer epoch stops the work holding the fence at an older
// one and runs only once that work released it; the older epoch is fenced
// from then on. Work at the same epoch does not wait.
func TestFenceHoldEndsBeforeNewerEpoch(t *testing.T) {
	var f Fence
	now := time.Now()
	req := func(epoch uint64) *wire.Request {
		return &wire.Request{ID: "r", Op: "fs.snap.restore.commit", Deadline: now.Add(time.Minute).UnixMilli(), Session: "s", Epoch: epoch}
	}
	stopped := make(chan error, 1)
	release, err := AdmitHeld(req(1), now, &f, func(err error) { stopped <- err })
	if err != nil {
		t.Fatal(err)
	}
	// The same epoch, and another session, pass at once, held or not.
	if err := Admit(req(1), now, &f); err != nil {
		t.Fatal(err)
	}
	other, err := AdmitHeld(&wire.Request{Deadline: now.Add(time.Minute).UnixMilli(), Session: "t", Epoch: 5}, now, &f, func(error) { t.Error("another session's hold was stopped") })
	if err != nil {
		t.Fatal(err)
	}
	defer other()
	admitted := make(chan error, 1)
	go func() { admitted <- Admit(req(2), now, &f) }()
	select {
	case err := <-stopped:
		if we := wire.AsError(err); we.Code != wire.CodeConflict || we.Reason != wire.ReasonSuperseded {
			t.Fatalf("the hold was stopped with %v, want conflict/superseded", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the newer epoch never stopped the hold")
	}
	select {
	case err := <-admitted:
		t.Fatalf("the newer epoch was admitted (%v) while the older one still held the fence", err)
	case <-time.After(50 * time.Millisecond):
	}
	release()
	release() // a second release does nothing
	if err := <-admitted; err != nil {
		t.Fatalf("the newer epoch after the release: %v", err)
	}
	if _, err := AdmitHeld(req(1), now, &f, func(error) {}); err == nil || wire.AsError(err).Reason != wire.ReasonFenced || !NotRun(err) {
		t.Fatalf("a hold at the older epoch afterwards: %v, want fenced", err)
	}
	// A hold at the current epoch is not stopped by its own epoch.
	r2, err := AdmitHeld(req(2), now, &f, func(error) { t.Error("a hold was stopped by its own epoch") })
	if err != nil {
		t.Fatal(err)
	}
	if err := Admit(req(2), now, &f); err != nil {
		t.Fatal(err)
	}
	r2()
	if n := len(f.holds); n != 1 {
		t.Fatalf("%d sessions still hold the fence, want 1 (t)", n)
	}
}

// A request at a newer epoch waits for held work until its own deadline
// at most: then it is refused (deadline_passed, surely not run), and the
// fence stays raised.
func TestFenceHoldWaitEndsAtDeadline(t *testing.T) {
	var f Fence
	now := time.Now()
	release, err := AdmitHeld(&wire.Request{Deadline: now.Add(time.Minute).UnixMilli(), Session: "s", Epoch: 1}, now, &f, func(error) {})
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	err = Admit(&wire.Request{Deadline: now.Add(100 * time.Millisecond).UnixMilli(), Session: "s", Epoch: 2}, now, &f)
	if we := wire.AsError(err); err == nil || we.Reason != wire.ReasonDeadlinePassed || !NotRun(err) {
		t.Fatalf("a newer epoch waiting past its deadline: %v, want deadline_passed", err)
	}
	if err := f.Check("s", 1); err == nil || wire.AsError(err).Reason != wire.ReasonFenced {
		t.Fatalf("the older epoch afterwards: %v, want fenced", err)
	}
}

// Many requests at rising epochs and holds at once: every hold is
// released before any request at a newer epoch returns from Admit.
func TestFenceHoldsConcurrent(t *testing.T) {
	var f Fence
	now := time.Now()
	var mu sync.Mutex
	active := map[uint64]int{} // holds running, by epoch
	var wg sync.WaitGroup
	for i := range 200 {
		epoch := uint64(i/10 + 1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := &wire.Request{Deadline: now.Add(time.Minute).UnixMilli(), Session: "s", Epoch: epoch}
			if i%2 == 0 {
				release, err := AdmitHeld(r, now, &f, func(error) {})
				if err != nil {
					return
				}
				mu.Lock()
				active[epoch]++
				mu.Unlock()
				time.Sleep(time.Millisecond)
				mu.Lock()
				active[epoch]--
				mu.Unlock()
				release()
				return
			}
			if Admit(r, now, &f) != nil {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			for e, n := range active {
				if e < epoch && n > 0 {
					t.Errorf("a request at epoch %d ran while %d holds at epoch %d did", epoch, n, e)
				}
			}
		}()
	}
	wg.Wait()
}

// Held work that waits for an older epoch's and is itself stopped by a
// newer one meanwhile never runs: it is refused (fenced, surely not run)
// once the older work released the fence, and the newest runs after both.
func TestFenceHoldStoppedWhileWaiting(t *testing.T) {
	var f Fence
	now := time.Now()
	req := func(epoch uint64) *wire.Request {
		return &wire.Request{Deadline: now.Add(time.Minute).UnixMilli(), Session: "s", Epoch: epoch}
	}
	first, err := AdmitHeld(req(1), now, &f, func(error) {})
	if err != nil {
		t.Fatal(err)
	}
	second := make(chan error, 1)
	secondStopped := make(chan struct{})
	go func() {
		release, err := AdmitHeld(req(2), now, &f, func(error) { close(secondStopped) })
		if err == nil {
			release()
		}
		second <- err
	}()
	waitHeld := func(n int) {
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
			f.mu.Lock()
			got := len(f.holds["s"])
			f.mu.Unlock()
			if got == n {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d holds, want %d", got, n)
			}
		}
	}
	waitHeld(2)
	third := make(chan error, 1)
	go func() { third <- Admit(req(3), now, &f) }()
	<-secondStopped
	select {
	case err := <-second:
		t.Fatalf("epoch 2 returned (%v) while epoch 1 still held the fence", err)
	case err := <-third:
		t.Fatalf("epoch 3 admitted (%v) while epoch 1 still held the fence", err)
	case <-time.After(50 * time.Millisecond):
	}
	first()
	if err := <-second; err == nil || wire.AsError(err).Reason != wire.ReasonFenced || !NotRun(err) {
		t.Fatalf("epoch 2, stopped while it waited: %v, want fenced", err)
	}
	if err := <-third; err != nil {
		t.Fatalf("epoch 3: %v", err)
	}
	waitHeld(0)
}

// waitEpoch waits until f's mark for session is epoch (a request at epoch
// reached the fence), for 10 seconds at most.
func waitEpoch(t *testing.T, f *Fence, session string, epoch uint64) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		f.mu.Lock()
		seen := f.epochs[session]
		f.mu.Unlock()
		if seen == epoch {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("epoch %d never reached the fence (it is at %d)", epoch, seen)
		}
	}
}

// A request (held or not) that waited for held work of an older epoch,
// and a request at a newer epoch arrived meanwhile, never runs: once the
// held work released the fence it is refused (fenced, surely not run),
// not let run after the newer epoch was admitted, and the newer one runs.
func TestFenceWaiterFencedByNewerEpoch(t *testing.T) {
	for _, held := range []bool{false, true} {
		t.Run(fmt.Sprintf("held=%v", held), func(t *testing.T) {
			var f Fence
			now := time.Now()
			req := func(epoch uint64) *wire.Request {
				return &wire.Request{Deadline: now.Add(time.Minute).UnixMilli(), Session: "s", Epoch: epoch}
			}
			first, err := AdmitHeld(req(1), now, &f, func(error) {})
			if err != nil {
				t.Fatal(err)
			}
			// Epoch 2 raises the mark, then waits for epoch 1's hold.
			second := make(chan error, 1)
			go func() { second <- Admit(req(2), now, &f) }()
			waitEpoch(t, &f, "s", 2)
			third := make(chan error, 1)
			go func() {
				if !held {
					third <- Admit(req(3), now, &f)
					return
				}
				release, err := AdmitHeld(req(3), now, &f, func(error) { t.Error("epoch 3's hold was stopped") })
				if err == nil {
					defer release()
				}
				third <- err
			}()
			waitEpoch(t, &f, "s", 3)
			first()
			if err := <-second; err == nil || wire.AsError(err).Reason != wire.ReasonFenced || !NotRun(err) {
				t.Fatalf("epoch 2, which waited while epoch 3 was admitted: %v, want fenced", err)
			}
			if err := <-third; err != nil {
				t.Fatalf("epoch 3: %v", err)
			}
		})
	}
}

// A request at a newer epoch that waits for held work never starts past
// its start-by time (its caller may have answered 503, not run, by then):
// once that time passed while it waited it is refused
// (deadline_exceeded/deadline_passed, surely not run), even if the held
// work ends before its deadline.
func TestFenceHoldWaitEndsAtStartBy(t *testing.T) {
	for _, held := range []bool{false, true} {
		t.Run(fmt.Sprintf("held=%v", held), func(t *testing.T) {
			var f Fence
			now := time.Now()
			release, err := AdmitHeld(&wire.Request{Deadline: now.Add(time.Minute).UnixMilli(), Session: "s", Epoch: 1}, now, &f, func(error) {})
			if err != nil {
				t.Fatal(err)
			}
			startBy := time.Now().Add(100 * time.Millisecond)
			r := &wire.Request{Deadline: now.Add(time.Minute).UnixMilli(), StartBy: startBy.UnixMilli(), Session: "s", Epoch: 2}
			admitted := make(chan error, 1)
			go func() {
				if !held {
					admitted <- Admit(r, time.Now(), &f)
					return
				}
				rel, err := AdmitHeld(r, time.Now(), &f, func(error) {})
				if err == nil {
					rel()
				}
				admitted <- err
			}()
			// The held work ends only once the start-by time passed.
			time.Sleep(time.Until(startBy) + 20*time.Millisecond)
			release()
			err = <-admitted
			if we := wire.AsError(err); err == nil || we.Reason != wire.ReasonDeadlinePassed || !NotRun(err) {
				t.Fatalf("a newer epoch that waited past its start-by time: %v, want deadline_passed", err)
			}
			if err := f.Check("s", 1); err == nil || wire.AsError(err).Reason != wire.ReasonFenced {
				t.Fatalf("the older epoch afterwards: %v, want fenced", err)
			}
		})
	}
}
