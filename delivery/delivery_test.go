package delivery

import (
	"errors"
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
