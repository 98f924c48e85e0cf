package controlplane

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/outposthq/outpost/controlplane/client"
	"github.com/outposthq/outpost/enroll"
	"github.com/outposthq/outpost/subjects"
	"github.com/outposthq/outpost/wire"
)

// deviceAgent is a machine in the middle of a device login.
type deviceAgent struct {
	pub  string
	seed []byte
	code enroll.DeviceCode
}

func askDeviceCode(t *testing.T, s *Server, name string) *deviceAgent {
	t.Helper()
	pub, seed := newKeys(t)
	status, body := call(t, s, "POST", "/v1/device/code", "", enroll.DeviceCodeRequest{PublicKey: pub, Name: name, Hostname: "box-" + name, OS: "linux", Arch: "arm64"})
	if status != http.StatusOK {
		t.Fatalf("device code: %d %s", status, body)
	}
	d := &deviceAgent{pub: pub, seed: seed}
	if err := json.Unmarshal(body, &d.code); err != nil {
		t.Fatal(err)
	}
	return d
}

// poll does one POST /v1/device/token and returns its status and either the
// enrollment or the error's reason.
func (d *deviceAgent) poll(t *testing.T, s *Server) (int, *enroll.Response, string) {
	t.Helper()
	status, body := call(t, s, "POST", "/v1/device/token", "", enroll.DeviceTokenRequest{DeviceCode: d.code.DeviceCode})
	if status == http.StatusOK {
		r, err := enroll.DecodeResponse(body)
		if err != nil {
			t.Fatal(err)
		}
		return status, r, ""
	}
	_, reason := errorCode(t, body)
	return status, nil, reason
}

func deviceConfig(t *testing.T) Config {
	cfg := testConfig(t)
	cfg.DeviceInterval = time.Second
	return cfg
}

func TestDeviceLoginApproved(t *testing.T) {
	s := startServer(t, deviceConfig(t))
	ctx := context.Background()
	admin := adminClient(s)
	if _, err := admin.CreateWorkspace(ctx, "ws1"); err != nil {
		t.Fatal(err)
	}
	d := askDeviceCode(t, s, "laptop")
	if d.code.Interval != 1 || d.code.ExpiresIn != int(DefaultDeviceCodeTTL/time.Second) {
		t.Fatalf("interval %d, expiresIn %d", d.code.Interval, d.code.ExpiresIn)
	}
	if got, ok := enroll.NormalizeUserCode(d.code.UserCode); !ok || got != d.code.UserCode {
		t.Fatalf("user code %q is not canonical", d.code.UserCode)
	}
	if want := s.PublicURL() + DeviceVerificationPath; d.code.VerificationURI != want || !strings.HasPrefix(d.code.VerificationURIComplete, want+"?code=") {
		t.Fatalf("verification uris %q, %q", d.code.VerificationURI, d.code.VerificationURIComplete)
	}
	if !strings.HasPrefix(d.code.EnrollCommand, "outpost agent login --url ") {
		t.Fatalf("enrollCommand %q", d.code.EnrollCommand)
	}

	// Pending, then polled again at once: slow_down, with a longer interval.
	if status, _, reason := d.poll(t, s); status != 400 || reason != wire.ReasonAuthorizationPending {
		t.Fatalf("first poll: %d %s", status, reason)
	}
	if status, _, reason := d.poll(t, s); status != 400 || reason != wire.ReasonSlowDown {
		t.Fatalf("poll at once: %d %s, want slow_down", status, reason)
	}

	// The approver sees the machine, typing the code in lower case without
	// its dash.
	typed := strings.ToLower(strings.ReplaceAll(d.code.UserCode, "-", ""))
	seen, err := admin.DeviceApproval(ctx, "ws1", typed)
	if err != nil {
		t.Fatal(err)
	}
	if seen.Hostname != "box-laptop" || seen.OS != "linux" || seen.Arch != "arm64" || seen.State != "pending" || seen.PublicKey != d.pub || seen.UserCode != d.code.UserCode {
		t.Fatalf("approval view: %+v", seen)
	}
	got, err := admin.DecideDeviceLogin(ctx, "ws1", client.DeviceApprovalRequest{UserCode: typed})
	if err != nil {
		t.Fatal(err)
	}
	if got.State != "approved" || got.Agent != "laptop" || got.Workspace != "ws1" {
		t.Fatalf("approval: %+v", got)
	}
	// A second approval of the same code finds nothing pending.
	if _, err := admin.DecideDeviceLogin(ctx, "ws1", client.DeviceApprovalRequest{UserCode: typed}); !errors.Is(err, wire.ErrNotFound) {
		t.Fatalf("second approval: %v, want not_found", err)
	}

	status, resp, reason := d.poll(t, s)
	if status != 200 {
		t.Fatalf("poll after approval: %d %s", status, reason)
	}
	if resp.Workspace != "ws1" || resp.Agent != "laptop" {
		t.Fatalf("enrolled as %s/%s", resp.Workspace, resp.Agent)
	}
	a := &testAgent{ag: subjects.Agent{Workspace: resp.Workspace, ID: resp.Agent}, seed: d.seed, pub: d.pub, jwt: resp.JWT, urls: resp.NATSURLs}
	nc, err := a.connect()
	if err != nil {
		t.Fatalf("the device login's credentials do not connect: %v", err)
	}
	nc.Close()
	ag, err := admin.GetAgent(ctx, "ws1", "laptop")
	if err != nil || ag.Hostname != "box-laptop" || ag.OS != "linux" {
		t.Fatalf("agent record: %+v, %v", ag, err)
	}
	// Single use: the code is spent.
	if status, _, _ := d.poll(t, s); status != http.StatusUnauthorized {
		t.Fatalf("poll after the credentials were handed out: %d, want 401", status)
	}
}

func TestDeviceLoginDecisions(t *testing.T) {
	cfg := deviceConfig(t)
	cfg.DeviceCodeTTL = 2 * time.Second
	s := startServer(t, cfg)
	ctx := context.Background()
	admin := adminClient(s)
	for _, ws := range []string{"ws1", "ws2"} {
		if _, err := admin.CreateWorkspace(ctx, ws); err != nil {
			t.Fatal(err)
		}
	}
	key, err := admin.CreateKey(ctx, "ws2")
	if err != nil {
		t.Fatal(err)
	}
	ws2 := client.New(s.URL(), key)
	enrollAgent(t, s, "ws1", "taken")

	t.Run("denied", func(t *testing.T) {
		d := askDeviceCode(t, s, "denied")
		out, err := admin.DecideDeviceLogin(ctx, "ws1", client.DeviceApprovalRequest{UserCode: d.code.UserCode, Deny: true})
		if err != nil || out.State != "denied" {
			t.Fatalf("deny: %+v, %v", out, err)
		}
		if status, _, reason := d.poll(t, s); status != 400 || reason != wire.ReasonAccessDenied {
			t.Fatalf("poll: %d %s, want access_denied", status, reason)
		}
	})
	t.Run("expired", func(t *testing.T) {
		d := askDeviceCode(t, s, "late")
		waitFor(t, waitLong, "the code to expire", func() bool {
			_, _, reason := d.poll(t, s)
			return reason == wire.ReasonExpiredToken
		})
		if _, err := admin.DecideDeviceLogin(ctx, "ws1", client.DeviceApprovalRequest{UserCode: d.code.UserCode}); !errors.Is(err, wire.ErrNotFound) {
			t.Fatalf("approving an expired code: %v, want not_found", err)
		}
	})
	t.Run("name taken, then rotation named", func(t *testing.T) {
		d := askDeviceCode(t, s, "taken")
		_, err := admin.DecideDeviceLogin(ctx, "ws1", client.DeviceApprovalRequest{UserCode: d.code.UserCode})
		if !errors.Is(err, wire.ErrConflict) || !strings.Contains(err.Error(), "--agent taken") {
			t.Fatalf("approving a taken name: %v, want conflict naming --agent", err)
		}
		out, err := admin.DecideDeviceLogin(ctx, "ws1", client.DeviceApprovalRequest{UserCode: d.code.UserCode, Agent: "taken", Pool: "p1"})
		if err != nil || out.Agent != "taken" || out.Pool != "p1" {
			t.Fatalf("approve --agent taken: %+v, %v", out, err)
		}
		if status, resp, reason := d.poll(t, s); status != 200 || resp.Agent != "taken" || resp.Pool != "p1" {
			t.Fatalf("poll: %d %+v %s", status, resp, reason)
		}
	})
	t.Run("a workspace key approves into its own workspace only", func(t *testing.T) {
		d := askDeviceCode(t, s, "")
		if _, err := ws2.DecideDeviceLogin(ctx, "ws1", client.DeviceApprovalRequest{UserCode: d.code.UserCode}); !errors.Is(err, wire.ErrPermissionDenied) {
			t.Fatalf("ws2 key approving into ws1: %v", err)
		}
		out, err := ws2.DecideDeviceLogin(ctx, "ws2", client.DeviceApprovalRequest{UserCode: d.code.UserCode, Pool: "cloud"})
		if err != nil || out.Workspace != "ws2" || !strings.HasPrefix(out.Agent, "cloud-") {
			t.Fatalf("approve: %+v, %v", out, err)
		}
	})
	t.Run("bad input", func(t *testing.T) {
		for _, tc := range []struct {
			name, path string
			body       any
			status     int
		}{
			{"not an nkey", "/v1/device/code", enroll.DeviceCodeRequest{PublicKey: "nope"}, 400},
			{"unknown field", "/v1/device/code", `{"publicKey":"x","extra":1}`, 400},
			{"unknown device code", "/v1/device/token", enroll.DeviceTokenRequest{DeviceCode: "opd_nothing"}, 401},
			{"not a device code", "/v1/device/token", enroll.DeviceTokenRequest{DeviceCode: "opt_x"}, 401},
		} {
			if status, body := call(t, s, "POST", tc.path, "", tc.body); status != tc.status {
				t.Errorf("%s: %d %s, want %d", tc.name, status, body, tc.status)
			}
		}
		if _, err := admin.DecideDeviceLogin(ctx, "ws1", client.DeviceApprovalRequest{UserCode: "ABCD-EFGH", Agent: "Bad Id"}); !errors.Is(err, wire.ErrInvalidArgument) {
			t.Errorf("bad agent id: %v", err)
		}
	})
}

// Guessing user codes: a caller's unknown codes run out its allowance, and
// then even a right code is refused for a while; another caller is not
// affected.
func TestDeviceLoginGuessingLimited(t *testing.T) {
	s := startServer(t, deviceConfig(t))
	ctx := context.Background()
	admin := adminClient(s)
	for _, ws := range []string{"ws1", "ws2"} {
		if _, err := admin.CreateWorkspace(ctx, ws); err != nil {
			t.Fatal(err)
		}
	}
	k1, err := admin.CreateKey(ctx, "ws1")
	if err != nil {
		t.Fatal(err)
	}
	guesser := client.New(s.URL(), k1)
	d := askDeviceCode(t, s, "target")
	misses := 0
	for i := range approvalGuessBurst + 1 {
		guess := fmt.Sprintf("ZZZZ-ZZ%c%c", enroll.UserCodeAlphabet[i%32], enroll.UserCodeAlphabet[(i/32)%32])
		if guess == d.code.UserCode {
			continue
		}
		_, err := guesser.DecideDeviceLogin(ctx, "ws1", client.DeviceApprovalRequest{UserCode: guess})
		if errors.Is(err, wire.ErrNotFound) {
			misses++
			continue
		}
		var we *wire.Error
		if !errors.As(err, &we) || we.Reason != wire.ReasonTooManyAttempts || we.HTTPStatus() != http.StatusTooManyRequests {
			t.Fatalf("guess %d: %v, want not_found then too_many_attempts (429)", i, err)
		}
		break
	}
	if misses != approvalGuessBurst {
		t.Fatalf("%d unknown codes answered before the limit, want %d", misses, approvalGuessBurst)
	}
	if _, err := guesser.DecideDeviceLogin(ctx, "ws1", client.DeviceApprovalRequest{UserCode: d.code.UserCode}); !errors.Is(err, wire.ErrUnavailable) {
		t.Fatalf("the right code after the limit: %v, want refused", err)
	}
	if out, err := admin.DecideDeviceLogin(ctx, "ws2", client.DeviceApprovalRequest{UserCode: d.code.UserCode}); err != nil || out.Agent != "target" {
		t.Fatalf("another caller approving: %+v, %v", out, err)
	}
}
