package controlplane

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/outposthq/outpost/controlplane/client"
	"github.com/outposthq/outpost/enroll"
	"github.com/outposthq/outpost/subjects"
	"github.com/outposthq/outpost/wire"
)

func TestEnroll(t *testing.T) {
	s := startServer(t, testConfig(t))
	ctx := context.Background()
	admin := adminClient(s)
	if _, err := admin.CreateWorkspace(ctx, "ws1"); err != nil {
		t.Fatal(err)
	}
	newToken := func(t *testing.T, req client.EnrollmentTokenRequest) string {
		t.Helper()
		tok, err := admin.CreateEnrollmentToken(ctx, "ws1", req)
		if err != nil {
			t.Fatal(err)
		}
		return tok.Token
	}
	enrollStatus := func(t *testing.T, token string) (int, wire.Code) {
		t.Helper()
		pub, _ := newKeys(t)
		status, body := call(t, s, "POST", "/v1/enroll", "", enroll.Request{Token: token, PublicKey: pub})
		if status == http.StatusOK {
			return status, ""
		}
		code, _ := errorCode(t, body)
		return status, code
	}

	t.Run("credentials connect", func(t *testing.T) {
		tok, err := admin.CreateEnrollmentToken(ctx, "ws1", client.EnrollmentTokenRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if d := time.Until(tok.ExpiresAt); d < 890*time.Second || d > 900*time.Second {
			t.Fatalf("default ttl: expires in %s", d)
		}
		a := redeem(t, s, tok.Token, "my-laptop")
		if a.ag.ID != "my-laptop" || a.ag.Workspace != "ws1" {
			t.Fatalf("agent id = %v, want ws1/my-laptop (the name)", a.ag)
		}
		if len(a.urls) == 0 || a.urls[0] != s.NATSURLs()[0] {
			t.Fatalf("natsUrls = %v", a.urls)
		}
		nc, err := a.connect()
		if err != nil {
			t.Fatalf("connect with enrolled credentials: %v", err)
		}
		defer nc.Close()
		// It may use its own subjects...
		sub, err := nc.SubscribeSync(mustSubject(t, a.ag, "rpc"))
		if err != nil {
			t.Fatal(err)
		}
		if err := nc.Publish(mustSubject(t, a.ag, "rpc"), []byte("hi")); err != nil {
			t.Fatal(err)
		}
		if _, err := sub.NextMsg(waitShort); err != nil {
			t.Fatalf("own subject round trip: %v", err)
		}
	})

	t.Run("generated ids", func(t *testing.T) {
		a := redeem(t, s, newToken(t, client.EnrollmentTokenRequest{}), "Not A Valid Id")
		if !strings.HasPrefix(a.ag.ID, "agent-") || len(a.ag.ID) != len("agent-")+6 {
			t.Fatalf("generated id %q", a.ag.ID)
		}
		got, err := admin.GetAgent(ctx, "ws1", a.ag.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Name != "Not A Valid Id" || got.Hostname != "box" || got.OS != "linux" || got.Arch != "amd64" {
			t.Fatalf("agent from enroll request: %+v", got)
		}
		p := redeem(t, s, newToken(t, client.EnrollmentTokenRequest{Pool: "gpu"}), "")
		if !strings.HasPrefix(p.ag.ID, "gpu-") {
			t.Fatalf("pool agent id %q", p.ag.ID)
		}
		named := redeem(t, s, newToken(t, client.EnrollmentTokenRequest{Agent: "fixed"}), "other-name")
		if named.ag.ID != "fixed" {
			t.Fatalf("token's agent id ignored: %q", named.ag.ID)
		}
	})

	t.Run("used token", func(t *testing.T) {
		tok := newToken(t, client.EnrollmentTokenRequest{})
		if status, _ := enrollStatus(t, tok); status != 200 {
			t.Fatalf("first use: %d", status)
		}
		if status, code := enrollStatus(t, tok); status != 401 || code != wire.CodeUnauthenticated {
			t.Fatalf("second use: %d %s, want 401 unauthenticated", status, code)
		}
	})

	t.Run("bad public key keeps the token", func(t *testing.T) {
		tok := newToken(t, client.EnrollmentTokenRequest{})
		status, body := call(t, s, "POST", "/v1/enroll", "", enroll.Request{Token: tok, PublicKey: "not-a-key"})
		if code, _ := errorCode(t, body); status != 400 || code != wire.CodeInvalidArgument {
			t.Fatalf("bad key: %d %s", status, body)
		}
		if status, _ := enrollStatus(t, tok); status != 200 {
			t.Fatalf("token was spent by a bad request: %d", status)
		}
	})

	t.Run("a name cannot take over an enrolled agent", func(t *testing.T) {
		first := redeem(t, s, newToken(t, client.EnrollmentTokenRequest{}), "taken")
		if first.ag.ID != "taken" {
			t.Fatalf("name as id: %q", first.ag.ID)
		}
		tok := newToken(t, client.EnrollmentTokenRequest{})
		pub, _ := newKeys(t)
		status, body := call(t, s, "POST", "/v1/enroll", "", enroll.Request{Token: tok, PublicKey: pub, Name: "taken"})
		if code, _ := errorCode(t, body); status != 409 || code != wire.CodeConflict {
			t.Fatalf("enroll under a taken name: %d %s, want 409", status, body)
		}
		if status, _ := enrollStatus(t, tok); status != 200 {
			t.Fatalf("the refused token was spent: %d", status)
		}
		again := redeem(t, s, newToken(t, client.EnrollmentTokenRequest{Agent: "taken"}), "")
		if again.ag.ID != "taken" {
			t.Fatalf("a token naming the agent re-enrolls it: %q", again.ag.ID)
		}
	})

	t.Run("expired token", func(t *testing.T) {
		tok := newToken(t, client.EnrollmentTokenRequest{TTLSeconds: 1})
		time.Sleep(1100 * time.Millisecond) // the token's life, not synchronisation
		if status, code := enrollStatus(t, tok); status != 401 || code != wire.CodeUnauthenticated {
			t.Fatalf("expired: %d %s, want 401", status, code)
		}
	})

	t.Run("concurrent double use", func(t *testing.T) {
		for range 5 {
			tok := newToken(t, client.EnrollmentTokenRequest{})
			const n = 4
			statuses := make(chan int, n)
			var wg sync.WaitGroup
			for range n {
				wg.Go(func() {
					pub, _ := newKeys(t)
					status, _ := call(t, s, "POST", "/v1/enroll", "", enroll.Request{Token: tok, PublicKey: pub})
					statuses <- status
				})
			}
			wg.Wait()
			close(statuses)
			ok := 0
			for st := range statuses {
				switch st {
				case 200:
					ok++
				case 401:
				default:
					t.Fatalf("status %d", st)
				}
			}
			if ok != 1 {
				t.Fatalf("%d of %d concurrent uses succeeded, want exactly 1", ok, n)
			}
		}
	})

	t.Run("re-enroll rotates", func(t *testing.T) {
		old := enrollAgent(t, s, "ws1", "rot")
		oldNC, err := old.connect()
		if err != nil {
			t.Fatal(err)
		}
		defer oldNC.Close()
		closed := make(chan struct{})
		oldNC.SetClosedHandler(func(*nats.Conn) { close(closed) })

		newer := enrollAgent(t, s, "ws1", "rot")
		if newer.ag != old.ag {
			t.Fatalf("rotation changed the id: %v vs %v", newer.ag, old.ag)
		}
		select {
		case <-closed:
		case <-time.After(waitShort):
			t.Fatal("old connection still open after rotation")
		}
		if nc, err := old.connect(); err == nil {
			nc.Close()
			t.Fatal("old credentials still accepted after rotation")
		}
		nc, err := newer.connect()
		if err != nil {
			t.Fatalf("new credentials refused: %v", err)
		}
		nc.Close()
		got, err := admin.GetAgent(ctx, "ws1", "rot")
		if err != nil {
			t.Fatal(err)
		}
		if got.ID != "rot" {
			t.Fatalf("agent after rotation: %+v", got)
		}
	})

	t.Run("no other agents subjects", func(t *testing.T) {
		a := enrollAgent(t, s, "ws1", "iso")
		nc, err := a.connect()
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		errs := make(chan error, 4)
		nc.SetErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { errs <- err })
		other := subjects.Agent{Workspace: "ws1", ID: "rot"}
		if _, err := nc.SubscribeSync(mustSubject(t, other, "rpc")); err != nil {
			t.Fatal(err)
		}
		_ = nc.Flush()
		select {
		case err := <-errs:
			if !strings.Contains(strings.ToLower(err.Error()), "permission") {
				t.Fatalf("unexpected async error: %v", err)
			}
		case <-time.After(waitShort):
			t.Fatal("subscribing to another agent's subject was allowed")
		}
	})
}
