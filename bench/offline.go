package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/outposthq/outpost/authority"
	"github.com/outposthq/outpost/controlplane/client"
	"github.com/outposthq/outpost/enroll"
	"github.com/outposthq/outpost/subjects"
	"github.com/outposthq/outpost/wire"
)

// benchOffline: how fast a call to an enrolled agent that is not connected
// is answered 503 through HTTP, next to a raw NATS request to the same
// subject answered "no responders" by the same server.
func benchOffline(ctx context.Context, e *env) ([]row, error) {
	const id = "gone"
	if _, err := e.enroll(ctx, client.EnrollmentTokenRequest{Agent: id}); err != nil {
		return nil, err
	}
	target := e.cl.Agent(e.ws, id)
	remote, err := measure(e.n, func() error {
		_, err := target.Exec(ctx, client.ExecRequest{Argv: []string{"true"}})
		if !errors.Is(err, &wire.Error{Code: wire.CodeUnavailable}) {
			return fmt.Errorf("exec on an offline agent: %v, want 503 unavailable", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	nc, err := serviceConn(e)
	if err != nil {
		return nil, err
	}
	defer nc.Close()
	subj, err := subjects.Agent{Workspace: e.ws, ID: id}.RPC()
	if err != nil {
		return nil, err
	}
	raw, err := measure(e.n, func() error {
		_, err := nc.Request(subj, []byte("x"), 5*time.Second)
		if !errors.Is(err, nats.ErrNoResponders) {
			return fmt.Errorf("raw request: %v, want no responders", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	p50 := remote.pct(50)
	return []row{
		{Name: "offline agent answered 503, p50 (HTTP vs raw NATS no-responders)", Outpost: ms(p50), Baseline: ms(raw.pct(50)),
			Ratio: ratio(p50, raw.pct(50)), Goal: "≤ 10 ms", Met: yesNo(p50 <= 10*time.Millisecond)},
		{Name: "offline agent answered 503, p99", Outpost: ms(remote.pct(99)), Baseline: ms(raw.pct(99)),
			Ratio: ratio(remote.pct(99), raw.pct(99)), Goal: "≤ 10 ms", Met: yesNo(remote.pct(99) <= 10*time.Millisecond)},
	}, nil
}

// serviceConn connects to the env's embedded NATS as a user of the app
// account, signed by the control plane's own authority.
func serviceConn(e *env) (*nats.Conn, error) {
	a, err := authority.LoadAuthority(filepath.Join(e.dir, "state", "auth"))
	if err != nil {
		return nil, err
	}
	creds, err := a.ServiceCreds()
	if err != nil {
		return nil, err
	}
	auth, err := enroll.CredsOption(creds)
	if err != nil {
		return nil, err
	}
	opts := []nats.Option{auth}
	if e.tls { // the agents' way in: wss:// through the API's port
		hc, err := e.httpClient()
		if err != nil {
			return nil, err
		}
		opts = append(opts, nats.Secure(hc.Transport.(*http.Transport).TLSClientConfig))
	}
	return nats.Connect(e.srv.NATSURLs()[0], opts...)
}
