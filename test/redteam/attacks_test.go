package redteam

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
	"github.com/outposthq/outpost/controlplane/client"
	"github.com/outposthq/outpost/enroll"
	"github.com/outposthq/outpost/subjects"
	"github.com/outposthq/outpost/wire"
)

// target is a subject an attacker must never reach, with what the attack
// sends there and how its effect would show if it got through.
type target struct {
	name    string
	subject func(marker string) string
	payload func(t *testing.T, marker string) []byte
	// effect fails the test when the attack had its effect.
	effect func(t *testing.T, w *world, marker string)
}

// mintedKey is the workspace key an attacker would mint for wsb by writing
// its record straight into the API keys bucket.
func mintedKey(marker string) string { return enroll.APIKeyPrefix + marker }

func targets() []target {
	text := func(_ *testing.T, m string) []byte { return []byte(m) }
	fixed := func(s string) func(string) string { return func(string) string { return s } }
	agentSubj := func(ag subjects.Agent, kind string) func(string) string {
		return func(string) string { s, _ := ag.Subject(kind); return s }
	}
	return []target{
		{
			name: "mint a workspace key in KV",
			subject: func(m string) string {
				return "$KV.outpost_api_keys." + enroll.HashToken(mintedKey(m))
			},
			payload: func(t *testing.T, m string) []byte {
				b, _ := json.Marshal(map[string]any{"workspace": "wsb", "createdAt": time.Now().UTC(), "note": m})
				return b
			},
			effect: func(t *testing.T, w *world, m string) {
				_, err := client.New(w.cp.URL(), mintedKey(m)).GetWorkspace(context.Background(), "wsb")
				if !errors.Is(err, &wire.Error{Code: wire.CodeUnauthenticated}) {
					t.Fatalf("the minted key for wsb: %v, want 401 unauthenticated", err)
				}
			},
		},
		{name: "list streams", subject: fixed("$JS.API.STREAM.NAMES"), payload: text},
		{name: "read the agents bucket", subject: fixed("$JS.API.DIRECT.GET.KV_outpost_agents"), payload: text},
		{name: "create a stream", subject: func(m string) string { return "$JS.API.STREAM.CREATE." + m },
			payload: func(_ *testing.T, m string) []byte {
				b, _ := json.Marshal(map[string]any{"name": m, "subjects": []string{m + ".>"}})
				return b
			}},
		{name: "delete the agents bucket", subject: fixed("$JS.API.STREAM.DELETE.KV_outpost_agents"), payload: text},
		{name: "push account claims", subject: fixed("$SYS.REQ.CLAIMS.UPDATE"), payload: text},
		{name: "ping the servers", subject: fixed("$SYS.REQ.SERVER.PING"), payload: text},
		{name: "the global inbox", subject: fixed("_INBOX.forged"), payload: text},
		{name: "the control plane's inbox", subject: fixed(subjects.ControlPlaneInboxPrefix + ".forged"), payload: text},
		{name: "take over another tenant's daemon", subject: agentSubj(victimID, subjects.KindRPC), payload: takeover},
		{name: "take over a neighbour's daemon", subject: agentSubj(neighbourID, subjects.KindRPC), payload: takeover},
		{name: "forge another tenant's hello", subject: agentSubj(victimID, subjects.KindHello), payload: forgedHello},
		{name: "forge another tenant's goodbye", subject: agentSubj(victimID, subjects.KindGoodbye), payload: text},
		{name: "forge a neighbour's heartbeat", subject: agentSubj(neighbourID, subjects.KindHeartbeat), payload: text},
		{name: "answer for another tenant", subject: func(string) string { s, _ := victimID.Reply("cp", "1"); return s }, payload: text},
		{name: "forge a neighbour's audit event", subject: agentSubj(neighbourID, subjects.KindAudit), payload: auditEvent,
			effect: noAuditEvent(neighbourID)},
		{name: "write another tenant's audit copy", subject: fixed("outpost.audit." + victimID.Workspace + "." + victimID.ID), payload: auditEvent,
			effect: noAuditEvent(victimID)},
		{name: "everything", subject: fixed("forged"), payload: text},
	}
}

// auditEvent is an audit event carrying the marker.
func auditEvent(_ *testing.T, m string) []byte {
	b, _ := json.Marshal(map[string]any{"id": m, "time": time.Now().UTC(), "op": "exec", "argv": []string{m}, "result": "ok"})
	return b
}

// noAuditEvent fails when ag's audit copy in the control plane holds the marker.
func noAuditEvent(ag subjects.Agent) func(t *testing.T, w *world, m string) {
	return func(t *testing.T, w *world, m string) {
		req, _ := http.NewRequest("GET", w.cp.URL()+"/v1/workspaces/"+ag.Workspace+"/audit?agent="+ag.ID+"&limit=1000", nil)
		req.Header.Set("Authorization", "Bearer "+w.cp.AdminToken())
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var page struct{ Events []map[string]any }
		if err := json.NewDecoder(resp.Body).Decode(&page); err != nil || resp.StatusCode != 200 {
			t.Fatalf("audit of %v: %d %v", ag, resp.StatusCode, err)
		}
		for _, e := range page.Events {
			if e["id"] == m {
				t.Fatalf("the forged audit event landed in %v's copy: %v", ag, e)
			}
		}
	}
}

// takeover is the probe a starting daemon sends to stop the live one.
func takeover(t *testing.T, m string) []byte {
	req, err := wire.NewRequest(wire.OpProbe, nil, time.Now().Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	b, err := wire.EncodeRequest(req, &wire.ProbeRequest{Instance: m, Takeover: true})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// forgedHello claims to be the victim, from a fake host.
func forgedHello(t *testing.T, m string) []byte {
	b, err := wire.Marshal(&wire.Hello{Workspace: victimID.Workspace, Agent: victimID.ID, Instance: m, Hostname: m,
		Capabilities: map[string]bool{}, StartedAt: time.Now(), HeartbeatMs: 60000})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestPublish attacks every target two ways, from the first connection and
// from a second one with the same credentials: a direct publish, and a
// reflection (a request to itself whose reply subject is the target, then
// the reply: nats-server grants a response permission for it when the
// credentials allow responses).
func TestPublish(t *testing.T) {
	w := newWorld(t)
	first, firstErrs := w.attackerConn(t)
	second, secondErrs := w.attackerConn(t)
	conns := []struct {
		name string
		nc   *nats.Conn
		errs *asyncErrs
	}{{"first connection", first, firstErrs}, {"second connection, same credentials", second, secondErrs}}
	ways := []struct {
		name string
		send func(t *testing.T, nc *nats.Conn, subject string, data []byte)
	}{
		{"direct", func(t *testing.T, nc *nats.Conn, subject string, data []byte) {
			if err := nc.PublishRequest(subject, w.attackerInbox(), data); err != nil {
				t.Fatal(err)
			}
		}},
		{"reflected", w.reflect},
	}
	for _, c := range conns {
		for _, way := range ways {
			for _, tg := range targets() {
				t.Run(c.name+"/"+way.name+"/"+tg.name, func(t *testing.T) {
					m := newMarker()
					subj := tg.subject(m)
					way.send(t, c.nc, subj, tg.payload(t, m))
					c.errs.waitViolation(t, subj)
					w.checkNoBreach(t, m)
					if tg.effect != nil {
						tg.effect(t, w, m)
					}
				})
			}
		}
	}
	w.checkIntact(t)
	// Every refusal is logged, naming the credentials (the agent's public
	// key, which its record holds).
	kp, err := nkeys.FromSeed([]byte(w.attacker.Seed))
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := kp.PublicKey()
	for _, tg := range targets() {
		subj := tg.subject("x")
		if subj == tg.subject("y") && !strings.Contains(w.log.String(), `Publish Violation - Subject \"`+subj+`\"`) {
			t.Errorf("the control plane's log has no refused publish to %s", subj)
		}
	}
	if log := w.log.String(); !strings.Contains(log, "jwt:"+pub) {
		t.Fatalf("the control plane's log never names the attacker's key %s", pub)
	}
}

// attackerInbox is a reply subject the attacker may use: its own inbox.
func (w *world) attackerInbox() string {
	in, _ := attackerID.Inbox()
	return in + ".x"
}

// reflect sends data to subject by reflection: the attacker serves its own
// rpc subject, sends itself a request whose reply subject is the target and
// answers it. The attacker itself receiving the request is required, else
// the attack was not tried; except that nats-server (from v2.15.3) refuses
// a client's request whose reply is a JetStream subject, so such a request
// must reach nobody (the caller then waits for that refusal).
func (w *world) reflect(t *testing.T, nc *nats.Conn, subject string, data []byte) {
	t.Helper()
	own, _ := attackerID.RPC()
	got := make(chan string, 1)
	sub, err := nc.Subscribe(own, func(m *nats.Msg) {
		_ = nc.Publish(m.Reply, data)
		got <- m.Reply
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := nc.PublishRequest(own, subject, []byte("bounce")); err != nil {
		t.Fatal(err)
	}
	if strings.HasPrefix(subject, "$JS.") {
		select {
		case r := <-got:
			t.Fatalf("the request with reply %q was delivered", r)
		case <-time.After(quietPeriod):
		}
		return
	}
	select {
	case r := <-got:
		if r != subject {
			t.Fatalf("reflected with reply %q, want %q", r, subject)
		}
	case <-time.After(waitLong):
		t.Fatal("the attacker never received its own request")
	}
	_ = nc.Flush()
}

// TestSubscribe tries to listen where the attacker must not, while the
// control plane really talks to the victims.
func TestSubscribe(t *testing.T) {
	w := newWorld(t)
	for _, subj := range []string{
		">", "agent.>", "agent.*.*.rpc", "agent.wsb.b1.rpc", "agent.wsb.b1.>", "agent.wsa.a2.rpc",
		"agent.*.*.reply.>", "agent.*.*.hello", "agent.wsa.a1.reply.>",
		"_INBOX.>", subjects.ControlPlaneInboxPrefix + ".>", "$KV.>", "$JS.>", "$JS.API.>", "$SYS.>",
	} {
		t.Run(subj, func(t *testing.T) {
			nc, errs := w.attackerConn(t)
			subs := make([]*nats.Subscription, 0, 2)
			for _, queue := range []string{"", "steal"} {
				sub, err := nc.QueueSubscribeSync(subj, queue)
				if err != nil {
					t.Fatal(err)
				}
				subs = append(subs, sub)
			}
			_ = nc.Flush()
			errs.waitViolation(t, subj)
			w.checkIntact(t) // traffic to every victim, and state reads
			for _, sub := range subs {
				if m, err := sub.NextMsg(quietPeriod); err == nil {
					t.Fatalf("refused subscription %q received %s %q", subj, m.Subject, m.Data)
				}
			}
		})
	}
}

// TestForgedIdentityFields: what an agent says about itself in a message
// body never overrides the identity its credentials and subject give.
func TestForgedIdentityFields(t *testing.T) {
	w := newWorld(t)
	nc, _ := w.attackerConn(t)
	m := newMarker()
	for _, kind := range []string{subjects.KindHello, subjects.KindHeartbeat, subjects.KindGoodbye} {
		own, _ := attackerID.Subject(kind)
		if err := nc.Publish(own, forgedHello(t, m)); err != nil {
			t.Fatal(err)
		}
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	// Enrollment with forged fields: the token decides the workspace and id.
	tok, err := w.admin.CreateEnrollmentToken(context.Background(), "wsa", client.EnrollmentTokenRequest{})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(map[string]any{"token": tok.Token, "publicKey": "UA" + strings.Repeat("A", 54),
		"name": victimID.ID, "workspace": victimID.Workspace, "agent": victimID.ID})
	resp, err := http.Post(w.cp.URL()+"/v1/enroll", "application/json", strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	var got enroll.Response
	_ = json.NewDecoder(resp.Body).Decode(&got)
	resp.Body.Close()
	if resp.StatusCode == http.StatusOK && got.Workspace != "wsa" {
		t.Fatalf("an enrollment with a wsa token landed in %q", got.Workspace)
	}
	w.checkIntact(t)
}

// checkNoBreach fails when a message carrying marker reached anything but
// the attacker's own subjects. Watchers are given a moment to see it.
func (w *world) checkNoBreach(t *testing.T, marker string) {
	t.Helper()
	time.Sleep(quietPeriod) // the absence of a message is what is checked
	for _, b := range w.breaches(marker) {
		t.Errorf("BREACH: %s reached %s in account %s: %q", marker, b.subject, b.account, b.data)
	}
	if t.Failed() {
		t.FailNow()
	}
}

// checkIntact checks what every attack must leave alone: the victims still
// run the daemon they started with, are online as themselves and serve the
// control plane; the state buckets are all there.
func (w *world) checkIntact(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	for id, v := range w.victims {
		select {
		case err := <-v.done:
			t.Fatalf("victim %s's daemon stopped: %v", id, err)
		default:
		}
		got, err := w.admin.GetAgent(ctx, id.Workspace, id.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != "online" || got.Hostname != v.hostname {
			t.Fatalf("victim %s: status %s hostname %q, want online %q", id, got.Status, got.Hostname, v.hostname)
		}
		res, err := w.admin.Agent(id.Workspace, id.ID).Exec(ctx, client.ExecRequest{Argv: []string{"cat", "victim.txt"}})
		if err != nil || res.Stdout != "secret of "+id.String() {
			t.Fatalf("victim %s no longer serves its owner: %v %+v", id, err, res)
		}
	}
	for _, ws := range []string{"wsa", "wsb"} {
		agents, err := w.admin.ListAgents(ctx, ws)
		if err != nil || len(agents) == 0 {
			t.Fatalf("agents of %s: %v %v", ws, agents, err)
		}
	}
}
