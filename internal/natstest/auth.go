package natstest

import (
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
	"github.com/nats-io/nuid"
	"github.com/outposthq/outpost/authority"
	"github.com/outposthq/outpost/enroll"
	"github.com/outposthq/outpost/subjects"
)

// Auth is a server that trusts an enrollment authority (operator → account →
// users), as the control plane's embedded server does.
type Auth struct {
	Server    *server.Server
	Authority *authority.Authority
	jwtDir    string
	storeDir  string
}

// StartAuth runs a JWT-authenticated server on loopback with a fresh authority.
func StartAuth(t testing.TB) *Auth {
	t.Helper()
	a, err := authority.LoadOrCreateAuthority(t.TempDir())
	if err != nil {
		t.Fatalf("authority: %v", err)
	}
	x := &Auth{Authority: a, jwtDir: t.TempDir(), storeDir: t.TempDir()}
	x.Server = Start(t, x.configure(-1))
	return x
}

// Restart stops the server and starts it again on the same port and stores,
// as an operator restarting NATS would.
func (x *Auth) Restart(t testing.TB) {
	t.Helper()
	x.Resume(t, x.Stop())
}

// Stop shuts the server down and returns its port, for Resume.
func (x *Auth) Stop() int {
	port := x.Server.Addr().(*net.TCPAddr).Port
	x.Server.Shutdown()
	x.Server.WaitForShutdown()
	return port
}

// Resume starts the server again on port (Stop's) with the same stores.
func (x *Auth) Resume(t testing.TB, port int) {
	t.Helper()
	x.Server = Start(t, x.configure(port))
}

func (x *Auth) configure(port int) func(*server.Options) {
	return func(o *server.Options) {
		o.Port, o.StoreDir = port, x.storeDir
		if err := x.Authority.ConfigureServer(o, x.jwtDir); err != nil {
			panic(fmt.Sprintf("configure server: %v", err))
		}
	}
}

// Service connects as the control plane does to talk to agents: its user of
// the agents' account (agent.> only).
func (x *Auth) Service(t testing.TB, opts ...nats.Option) *nats.Conn {
	t.Helper()
	creds, err := x.Authority.AgentsServiceCreds()
	if err != nil {
		t.Fatal(err)
	}
	opt, err := enroll.CredsOption(creds)
	if err != nil {
		t.Fatal(err)
	}
	return Connect(t, x.Server, append([]nats.Option{opt}, opts...)...)
}

// Identity enrolls ag directly: a fresh nkey pair and a user JWT with the
// agent's permissions, as the agent's config file would hold.
func (x *Auth) Identity(t testing.TB, ag subjects.Agent) *enroll.Config {
	t.Helper()
	kp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := kp.PublicKey()
	seed, _ := kp.Seed()
	jwt, err := x.Authority.IssueAgentJWT(ag, pub)
	if err != nil {
		t.Fatal(err)
	}
	return &enroll.Config{
		URL: "http://127.0.0.1:1", Workspace: ag.Workspace, Agent: ag.ID,
		NATSURLs: []string{x.Server.ClientURL()}, JWT: jwt, Seed: string(seed),
	}
}

// Request sends data to ag's rpc subject with a reply subject under ag's own
// subjects, as the control plane's rpc client does (agents may publish only
// there), and waits for one reply; nats.ErrNoResponders when nobody serves
// ag. For tests that hand-craft what the rpc client never sends.
func Request(nc *nats.Conn, ag subjects.Agent, data []byte, timeout time.Duration) (*nats.Msg, error) {
	subj, err := ag.RPC()
	if err != nil {
		return nil, err
	}
	reply, err := ag.Reply("natstest", nuid.Next())
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
