package controlplane

import (
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/outposthq/outpost/wire"
)

// heartbeatEvery is the fake agent's heartbeat interval.
const heartbeatEvery = 200 * time.Millisecond

// fakeAgent is a minimal agent on NATS with the agent's own credentials: it
// says hello, heartbeats and answers exec with a handler.
type fakeAgent struct {
	t        testing.TB
	ta       *testAgent
	nc       *nats.Conn
	instance string

	stop chan struct{}
	wg   sync.WaitGroup
	once sync.Once
}

func startFakeAgent(t testing.TB, ta *testAgent, exec func(*wire.ExecRequest) (*wire.ExecResult, error)) *fakeAgent {
	t.Helper()
	return startFakeAgentOps(t, ta, map[string]fakeOp{wire.OpExec: func(req *wire.Request) []byte {
		var body wire.ExecRequest
		if err := req.DecodeBody(&body); err != nil {
			return wire.EncodeError(req.ID, err)
		}
		res, err := exec(&body)
		if err != nil {
			return wire.EncodeError(req.ID, err)
		}
		reply, _ := wire.EncodeResult(req.ID, res)
		return reply
	}})
}

// fakeOp answers one op with an encoded reply; nil leaves the request
// unanswered.
type fakeOp func(req *wire.Request) []byte

// startFakeAgentOps is a fake agent answering the ops of ops (any other
// is unsupported).
func startFakeAgentOps(t testing.TB, ta *testAgent, ops map[string]fakeOp) *fakeAgent {
	t.Helper()
	nc, err := ta.connect()
	if err != nil {
		t.Fatalf("agent connect: %v", err)
	}
	f := &fakeAgent{t: t, ta: ta, nc: nc, instance: wire.NewID(), stop: make(chan struct{})}
	_, err = nc.Subscribe(mustSubject(t, ta.ag, "rpc"), func(m *nats.Msg) {
		req, err := wire.DecodeRequest(m.Data)
		if err != nil {
			_ = m.Respond(wire.EncodeError("", err))
			return
		}
		op, ok := ops[req.Op]
		if !ok {
			_ = m.Respond(wire.EncodeError(req.ID, wire.Errorf(wire.CodeUnsupported, wire.ReasonUnknownOp, "op %q", req.Op)))
			return
		}
		if reply := op(req); reply != nil {
			_ = m.Respond(reply)
		}
	})
	if err != nil {
		t.Fatalf("agent subscribe: %v", err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	f.publish("hello", &wire.Hello{
		Workspace: ta.ag.Workspace, Agent: ta.ag.ID, Instance: f.instance, Version: "test-1.0",
		Protocol: wire.Version, OS: "linux", Arch: "arm64", Hostname: "fakehost",
		Capabilities: map[string]bool{"pty": true, "git": false}, StartedAt: time.Now(),
	})
	f.wg.Add(1)
	go f.heartbeats()
	t.Cleanup(f.close)
	return f
}

func (f *fakeAgent) publish(kind string, v any) {
	b, err := wire.Marshal(v)
	if err != nil {
		panic(err)
	}
	subj, err := f.ta.ag.Subject(kind)
	if err != nil {
		panic(err)
	}
	_ = f.nc.Publish(subj, b)
	_ = f.nc.Flush()
}

func (f *fakeAgent) heartbeats() {
	defer f.wg.Done()
	tick := time.NewTicker(heartbeatEvery)
	defer tick.Stop()
	var seq uint64
	for {
		seq++
		f.publish("heartbeat", &wire.Heartbeat{Instance: f.instance, Seq: seq, Time: time.Now(), IntervalMs: heartbeatEvery.Milliseconds()})
		select {
		case <-f.stop:
			return
		case <-tick.C:
		}
	}
}

// stopHeartbeats stops heartbeats but stays connected and answering.
func (f *fakeAgent) stopHeartbeats() {
	f.once.Do(func() { close(f.stop) })
	f.wg.Wait()
}

// goodbye says goodbye and disconnects, as a clean stop does.
func (f *fakeAgent) goodbye() {
	f.stopHeartbeats()
	f.publish("goodbye", &wire.Goodbye{Instance: f.instance})
	f.nc.Close()
}

func (f *fakeAgent) close() {
	f.stopHeartbeats()
	f.nc.Close()
}
