package natstest

import (
	"fmt"
	"net"
	"testing"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
	"github.com/outposthq/outpost/enroll"
	"github.com/outposthq/outpost/subjects"
)

// Auth is a server that trusts an enrollment authority (operator → account →
// users), as the control plane's embedded server does.
type Auth struct {
	Server    *server.Server
	Authority *enroll.Authority
	jwtDir    string
	storeDir  string
}

// StartAuth runs a JWT-authenticated server on loopback with a fresh authority.
func StartAuth(t testing.TB) *Auth {
	t.Helper()
	a, err := enroll.LoadOrCreateAuthority(t.TempDir())
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
	port := x.Server.Addr().(*net.TCPAddr).Port
	x.Server.Shutdown()
	x.Server.WaitForShutdown()
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

// Service connects with the control plane's (unrestricted) credentials.
func (x *Auth) Service(t testing.TB, opts ...nats.Option) *nats.Conn {
	t.Helper()
	creds, err := x.Authority.ServiceCreds()
	if err != nil {
		t.Fatal(err)
	}
	opt, err := enroll.CredsOption(creds)
	if err != nil {
		t.Fatal(err)
	}
	return Connect(t, x.Server, append([]nats.Option{opt, nats.CustomInboxPrefix(subjects.ControlPlaneInboxPrefix)}, opts...)...)
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
