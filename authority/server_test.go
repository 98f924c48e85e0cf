package authority

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats.go"

	"github.com/outposthq/outpost/enroll"
	"github.com/outposthq/outpost/subjects"
)

var (
	agentA1 = subjects.Agent{Workspace: "ws", ID: "a1"}
	agentA2 = subjects.Agent{Workspace: "ws", ID: "a2"}
)

func TestAgentCredsAllowed(t *testing.T) {
	a := newAuthority(t)
	s := startServer(t, a, t.TempDir())
	svc := agentsConn(t, a, s)
	cfg := agentConfig(t, a, s, agentA1)
	errs := newAsyncErrs()
	nc, err := connectAgent(t, cfg, errs.option())
	if err != nil {
		t.Fatalf("agent connect: %v", err)
	}

	t.Run("publish hello", func(t *testing.T) {
		sub, err := svc.SubscribeSync("agent.*.*.hello")
		if err != nil {
			t.Fatal(err)
		}
		defer sub.Unsubscribe()
		if err := svc.Flush(); err != nil {
			t.Fatal(err)
		}
		if err := nc.Publish("agent.ws.a1.hello", []byte("hi")); err != nil {
			t.Fatal(err)
		}
		m, err := sub.NextMsg(waitLong)
		if err != nil {
			t.Fatalf("hello not received: %v", err)
		}
		if m.Subject != "agent.ws.a1.hello" || string(m.Data) != "hi" {
			t.Fatalf("got %s %q, want agent.ws.a1.hello \"hi\"", m.Subject, m.Data)
		}
	})

	t.Run("serve rpc with several replies", func(t *testing.T) {
		const n = 3
		sub, err := nc.Subscribe("agent.ws.a1.rpc", func(m *nats.Msg) {
			for i := range n {
				// Errors surface through the async error channel.
				_ = nc.Publish(m.Reply, fmt.Appendf(nil, "%s-%d", m.Data, i))
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		defer sub.Unsubscribe()
		if err := nc.Flush(); err != nil {
			t.Fatal(err)
		}

		// Every reply reaches the control plane's subscription under the
		// agent's own subjects.
		replies, err := svc.SubscribeSync("agent.ws.a1.reply.cp.>")
		if err != nil {
			t.Fatal(err)
		}
		defer replies.Unsubscribe()
		if err := svc.PublishRequest("agent.ws.a1.rpc", "agent.ws.a1.reply.cp.1", []byte("many")); err != nil {
			t.Fatal(err)
		}
		for i := range n {
			m, err := replies.NextMsg(waitLong)
			if err != nil {
				t.Fatalf("reply %d: %v", i, err)
			}
			if want := fmt.Sprintf("many-%d", i); string(m.Data) != want {
				t.Fatalf("reply %d = %q, want %q", i, m.Data, want)
			}
		}
	})
	errs.expectNone(t)
}

func TestAgentCredsRefusedSubscribe(t *testing.T) {
	a := newAuthority(t)
	s := startServer(t, a, t.TempDir())
	svc := agentsConn(t, a, s)
	cfg := agentConfig(t, a, s, agentA1)

	tests := []struct {
		name    string
		subject string
	}{
		{"other agent rpc", "agent.ws.a2.rpc"},
		{"every agent rpc", "agent.*.*.rpc"},
		{"all agents", "agent.>"},
		{"other workspace", "agent.ws2.a1.rpc"},
		{"global inbox", "_INBOX.>"},
		{"control plane inbox", subjects.ControlPlaneInboxPrefix + ".>"},
		{"everything", ">"},
		{"system", "$SYS.>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := newAsyncErrs()
			nc, err := connectAgent(t, cfg, errs.option())
			if err != nil {
				t.Fatalf("agent connect: %v", err)
			}
			sub, err := nc.SubscribeSync(tt.subject)
			if err != nil {
				t.Fatalf("subscribe: %v", err)
			}
			_ = nc.Flush()
			errs.waitViolation(t, tt.subject)

			// Nothing published by the control plane reaches the refused
			// subscription.
			if err := svc.Publish("agent.ws.a2.rpc", []byte("not for a1")); err != nil {
				t.Fatal(err)
			}
			if err := svc.Flush(); err != nil {
				t.Fatal(err)
			}
			if m, err := sub.NextMsg(quietPeriod); err == nil {
				t.Fatalf("refused subscription %q received %s %q", tt.subject, m.Subject, m.Data)
			}
		})
	}
}

func TestAgentCredsRefusedPublish(t *testing.T) {
	a := newAuthority(t)
	s := startServer(t, a, t.TempDir())
	svc := agentsConn(t, a, s)
	cfg := agentConfig(t, a, s, agentA1)

	tests := []struct {
		name    string
		subject string
	}{
		{"other agent rpc", "agent.ws.a2.rpc"},
		{"other agent hello", "agent.ws.a2.hello"},
		{"jetstream api", "$JS.API.INFO"},
		{"jetstream stream create", "$JS.API.STREAM.CREATE.X"},
		{"control plane inbox without a request", subjects.ControlPlaneInboxPrefix + ".forged"},
		{"system claims update", ClaimsUpdateSubject},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sub, err := svc.SubscribeSync(tt.subject)
			if err != nil {
				t.Fatal(err)
			}
			defer sub.Unsubscribe()
			if err := svc.Flush(); err != nil {
				t.Fatal(err)
			}
			errs := newAsyncErrs()
			nc, err := connectAgent(t, cfg, errs.option())
			if err != nil {
				t.Fatalf("agent connect: %v", err)
			}
			if err := nc.Publish(tt.subject, []byte("forged")); err != nil {
				t.Fatalf("publish: %v", err)
			}
			_ = nc.Flush()
			errs.waitViolation(t, tt.subject)
			if m, err := sub.NextMsg(quietPeriod); err == nil {
				t.Fatalf("refused publish reached %s: %q", m.Subject, m.Data)
			}
		})
	}
}

// revoke pushes the agents' account with keys revoked now.
func revoke(t testing.TB, a *Authority, sys *nats.Conn, keys ...string) time.Duration {
	t.Helper()
	revoked := make(map[string]int64, len(keys))
	now := time.Now().Unix()
	for _, k := range keys {
		revoked[k] = now
	}
	accJWT, err := a.AgentsAccountJWT(revoked)
	if err != nil {
		t.Fatalf("AgentsAccountJWT: %v", err)
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	if err := PushAccount(ctx, sys, accJWT); err != nil {
		t.Fatalf("PushAccount: %v", err)
	}
	return time.Since(start)
}

// waitClosed polls (generously) until nc is closed and returns how long it
// took from start.
func waitClosed(t testing.TB, nc *nats.Conn, closed *closedSignal, start time.Time) time.Duration {
	t.Helper()
	select {
	case <-closed.ch:
	case <-time.After(waitLong):
		t.Fatalf("connection still %v after %v", nc.Status(), waitLong)
	}
	return time.Since(start)
}

func wantAuthRefused(t testing.TB, err error) {
	t.Helper()
	if err == nil {
		t.Fatal("connect succeeded, want an authorization error")
	}
	if !errors.Is(err, nats.ErrAuthorization) && !errors.Is(err, nats.ErrAuthRevoked) {
		t.Fatalf("connect error %v, want nats.ErrAuthorization or nats.ErrAuthRevoked", err)
	}
}

func TestRevocation(t *testing.T) {
	a := newAuthority(t)
	s := startServer(t, a, t.TempDir())
	sys := systemConn(t, a, s)
	svc := agentsConn(t, a, s)
	cfg := agentConfig(t, a, s, agentA1)
	other := agentConfig(t, a, s, agentA2)

	closed := newClosedSignal()
	errs := newAsyncErrs()
	nc, err := connectAgent(t, cfg, nats.NoReconnect(), closed.option(), errs.option())
	if err != nil {
		t.Fatalf("agent connect: %v", err)
	}
	otherNC, err := connectAgent(t, other)
	if err != nil {
		t.Fatalf("other agent connect: %v", err)
	}

	start := time.Now()
	revoke(t, a, sys, publicKeyOf(t, cfg))
	took := waitClosed(t, nc, closed, start)
	t.Logf("revoked connection closed %v after the push began", took)
	if took >= revokeBound {
		t.Fatalf("revoked connection closed after %v, want < %v", took, revokeBound)
	}
	errs.waitFor(t, nats.ErrAuthRevoked)

	_, err = connectAgent(t, cfg)
	wantAuthRefused(t, err)

	// Other agents are untouched.
	if !otherNC.IsConnected() {
		t.Fatalf("other agent's connection is %v", otherNC.Status())
	}
	if _, err := agentRequest(svc, agentA2, nil, waitLong); !errors.Is(err, nats.ErrNoResponders) {
		t.Fatalf("request to a2 without a subscriber: %v, want no responders (server reachable)", err)
	}
	if _, err := connectAgent(t, other); err != nil {
		t.Fatalf("other agent reconnect: %v", err)
	}
}

func TestRotation(t *testing.T) {
	a := newAuthority(t)
	s := startServer(t, a, t.TempDir())
	sys := systemConn(t, a, s)
	svc := agentsConn(t, a, s)

	oldCfg := agentConfig(t, a, s, agentA1)
	closed := newClosedSignal()
	errs := newAsyncErrs()
	oldNC, err := connectAgent(t, oldCfg, nats.NoReconnect(), closed.option(), errs.option())
	if err != nil {
		t.Fatalf("old creds connect: %v", err)
	}

	// Re-enrollment: same agent id, new key, old key revoked.
	newCfg := agentConfig(t, a, s, agentA1)
	if publicKeyOf(t, newCfg) == publicKeyOf(t, oldCfg) {
		t.Fatal("rotation reused the key")
	}
	start := time.Now()
	revoke(t, a, sys, publicKeyOf(t, oldCfg))
	if took := waitClosed(t, oldNC, closed, start); took >= revokeBound {
		t.Fatalf("old connection closed after %v, want < %v", took, revokeBound)
	}
	errs.waitFor(t, nats.ErrAuthRevoked)
	_, err = connectAgent(t, oldCfg)
	wantAuthRefused(t, err)

	nc, err := connectAgent(t, newCfg)
	if err != nil {
		t.Fatalf("new creds connect: %v", err)
	}
	sub, err := nc.Subscribe("agent.ws.a1.rpc", func(m *nats.Msg) { _ = m.Respond([]byte("pong")) })
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	m, err := agentRequest(svc, agentA1, []byte("ping"), waitLong)
	if err != nil {
		t.Fatalf("request to rotated agent: %v", err)
	}
	if string(m.Data) != "pong" {
		t.Fatalf("reply %q, want pong", m.Data)
	}
}

// A revocation pushed before a restart holds after it, before anyone pushes
// again: ConfigureServer carries it forward from the resolver directory.
func TestRevocationSurvivesRestart(t *testing.T) {
	authDir, jwtDir := t.TempDir(), t.TempDir()
	a, err := LoadOrCreateAuthority(authDir)
	if err != nil {
		t.Fatal(err)
	}
	s1 := startServer(t, a, jwtDir)
	cfg := agentConfig(t, a, s1, agentA1)
	kept := agentConfig(t, a, s1, agentA2)
	revoke(t, a, systemConn(t, a, s1), publicKeyOf(t, cfg))
	s1.Shutdown()
	s1.WaitForShutdown()

	a2, err := LoadOrCreateAuthority(authDir)
	if err != nil {
		t.Fatal(err)
	}
	s2 := startServer(t, a2, jwtDir)
	for _, c := range []*enroll.Config{cfg, kept} {
		c.NATSURLs = []string{s2.ClientURL()}
	}
	_, err = connectAgent(t, cfg)
	wantAuthRefused(t, err)
	if _, err := connectAgent(t, kept); err != nil {
		t.Fatalf("unrevoked agent after restart: %v", err)
	}
}

func TestPushAccountErrors(t *testing.T) {
	a := newAuthority(t)
	s := startServer(t, a, t.TempDir())
	svc := serviceConn(t, a, s)
	sys := systemConn(t, a, s)
	accJWT, err := a.AgentsAccountJWT(nil)
	if err != nil {
		t.Fatal(err)
	}
	invalid := invalidAccountJWT(t, a)

	tests := []struct {
		name    string
		conn    *nats.Conn
		jwt     string
		wantErr bool
		wantIs  error
	}{
		{name: "ok", conn: sys, jwt: accJWT},
		{name: "not a jwt", conn: sys, jwt: "garbage", wantErr: true},
		{name: "user jwt", conn: sys, jwt: agentConfig(t, a, s, agentA1).JWT, wantErr: true},
		{name: "not a system user", conn: svc, jwt: accJWT, wantErr: true, wantIs: nats.ErrNoResponders},
		{name: "invalid claims refused by the server", conn: sys, jwt: invalid, wantErr: true},
		{name: "nil connection", conn: nil, jwt: accJWT, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := PushAccount(context.Background(), tt.conn, tt.jwt)
			t.Logf("PushAccount: %v", err)
			if (err != nil) != tt.wantErr {
				t.Fatalf("PushAccount error = %v, want error: %v", err, tt.wantErr)
			}
			if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
				t.Fatalf("PushAccount error = %v, want %v", err, tt.wantIs)
			}
		})
	}
}

// invalidAccountJWT is a well-signed app account JWT the server must refuse
// (mapping weights over 100%).
func invalidAccountJWT(t testing.TB, a *Authority) string {
	t.Helper()
	ac := jwt.NewAccountClaims(a.AccountPublicKey())
	ac.Mappings["foo"] = []jwt.WeightedMapping{{Subject: "bar", Weight: 150}}
	s, err := ac.Encode(a.operator)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// agentRequest sends a request to ag's rpc subject with a reply subject under
// ag's own subjects, as the control plane does, and waits for one reply;
// nats.ErrNoResponders when nobody serves ag.
func agentRequest(nc *nats.Conn, ag subjects.Agent, data []byte, timeout time.Duration) (*nats.Msg, error) {
	subj, err := ag.RPC()
	if err != nil {
		return nil, err
	}
	reply, err := ag.Reply("test", nats.NewInbox()[len(nats.InboxPrefix):])
	if err != nil {
		return nil, err
	}
	sub, err := nc.SubscribeSync(reply)
	if err != nil {
		return nil, err
	}
	defer sub.Unsubscribe()
	if err := nc.PublishRequest(subj, reply, data); err != nil {
		return nil, err
	}
	m, err := sub.NextMsg(timeout)
	if err != nil {
		return nil, err
	}
	if len(m.Data) == 0 && m.Header.Get("Status") == "503" {
		return nil, nats.ErrNoResponders
	}
	return m, nil
}

// An agent cannot reflect a message off its own subjects to gain a publish
// permission on the reply subject: it has no response permission at all,
// and a request whose reply is a JetStream subject is refused outright.
func TestAgentCannotReflect(t *testing.T) {
	a := newAuthority(t)
	s := startServer(t, a, t.TempDir())
	cp := agentsConn(t, a, s)
	cfg := agentConfig(t, a, s, agentA1)

	targets := []string{
		"$KV.outpost_api_keys.forged",
		"$JS.API.STREAM.NAMES",
		"$JS.API.STREAM.DELETE.KV_outpost_agents",
		"$SYS.REQ.CLAIMS.UPDATE",
		"_INBOX.forged",
		subjects.ControlPlaneInboxPrefix + ".forged",
		"agent.ws.a2.rpc",
		"agent.ws.a2.hello",
		"agent.ws.a2.goodbye",
		"agent.ws.a2.reply.cp.1",
	}
	for _, target := range targets {
		t.Run(target, func(t *testing.T) {
			errs := newAsyncErrs()
			nc, err := connectAgent(t, cfg, errs.option())
			if err != nil {
				t.Fatalf("agent connect: %v", err)
			}
			var watch *nats.Subscription
			if strings.HasPrefix(target, "agent.") {
				if watch, err = cp.SubscribeSync(target); err != nil {
					t.Fatal(err)
				}
				defer watch.Unsubscribe()
				if err := cp.Flush(); err != nil {
					t.Fatal(err)
				}
			}
			got := make(chan string, 1)
			sub, err := nc.Subscribe("agent.ws.a1.rpc", func(m *nats.Msg) {
				got <- m.Reply
				_ = nc.Publish(m.Reply, []byte("reflected"))
			})
			if err != nil {
				t.Fatal(err)
			}
			defer sub.Unsubscribe()
			if err := nc.PublishRequest("agent.ws.a1.rpc", target, []byte("x")); err != nil {
				t.Fatal(err)
			}
			if strings.HasPrefix(target, "$JS.") {
				// nats-server (from v2.15.3) refuses a client's publish
				// whose reply is a JetStream subject: the request reaches
				// nobody, so there is nothing to reflect.
				errs.waitViolation(t, target)
				select {
				case r := <-got:
					t.Fatalf("the request with reply %q was delivered", r)
				case <-time.After(quietPeriod):
				}
				return
			}
			select {
			case r := <-got:
				if r != target {
					t.Fatalf("reply subject %q, want %q", r, target)
				}
			case <-time.After(waitLong):
				t.Fatal("the agent never received its own request")
			}
			_ = nc.Flush()
			errs.waitViolation(t, target)
			if watch != nil {
				if m, err := watch.NextMsg(quietPeriod); err == nil {
					t.Fatalf("reflected publish reached %s: %q", m.Subject, m.Data)
				}
			}
		})
	}
}

// A directory made before the agents' account existed held agents as users
// of the app account, with response permissions. Loading it makes the
// agents' account and revokes every app-account user issued before: the old
// agent is refused, the control plane's new users are not.
func TestUpgradeRevokesLegacyAgents(t *testing.T) {
	authDir := t.TempDir()
	a, err := LoadOrCreateAuthority(authDir)
	if err != nil {
		t.Fatal(err)
	}
	// An agent of the old layout: a user of the app account.
	old := agentConfig(t, a, startServer(t, a, t.TempDir()), agentA1)
	uc, err := jwt.DecodeUserClaims(old.JWT)
	if err != nil {
		t.Fatal(err)
	}
	uc.Resp = &jwt.ResponsePermission{MaxMsgs: -1, Expires: time.Minute}
	if old.JWT, err = uc.Encode(a.account); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(authDir, agentsKeyFile)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond) // JWT times are in whole seconds

	upgraded, err := LoadOrCreateAuthority(authDir)
	if err != nil {
		t.Fatal(err)
	}
	if upgraded.AgentsAccountPublicKey() == a.AgentsAccountPublicKey() || upgraded.AccountPublicKey() != a.AccountPublicKey() {
		t.Fatal("the upgrade did not make a new agents' account, or changed the app account")
	}
	s := startServer(t, upgraded, t.TempDir())
	old.NATSURLs = []string{s.ClientURL()}
	_, err = connectAgent(t, old)
	wantAuthRefused(t, err)
	serviceConn(t, upgraded, s) // the control plane's own user still connects
	if _, err := connectAgent(t, agentConfig(t, upgraded, s, agentA1)); err != nil {
		t.Fatalf("an agent enrolled after the upgrade: %v", err)
	}
	// Loading again keeps the cut-off where it was.
	again, err := LoadOrCreateAuthority(authDir)
	if err != nil {
		t.Fatal(err)
	}
	if again.legacyCutoff != upgraded.legacyCutoff || again.legacyCutoff == 0 {
		t.Fatalf("cut-off %d after reload, want %d", again.legacyCutoff, upgraded.legacyCutoff)
	}
}
