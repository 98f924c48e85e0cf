package controlplane

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/outposthq/outpost/controlplane/client"
	"github.com/outposthq/outpost/subjects"
	"github.com/outposthq/outpost/wire"
)

// FuzzSessionBodies sends arbitrary bodies to the session calls that decode
// one, create and swap: the answer is a session whose id is valid and whose
// active backend is one of its backends, or an error body whose code gives
// the status; never a 5xx other than 503.
func FuzzSessionBodies(f *testing.F) {
	seeds := []struct {
		swap bool
		body string
	}{
		{false, `{"id":"s2","backends":{"laptop":{"kind":"agent","agent":"a1"},"cloud":{"kind":"pool","pool":"cloud"}},"active":"laptop"}`},
		{false, `{"backends":{"laptop":{"kind":"agent","agent":"a1"}},"active":"laptop"}`},
		{false, `{"backends":{"cloud":{"kind":"pool","pool":"cloud"}},"active":"cloud"}`},
		{false, `{"backends":{"laptop":{"kind":"agent","agent":"nobody"}},"active":"laptop"}`},
		{false, `{"backends":{"la.ptop":{"kind":"agent","agent":"a1"}},"active":"la.ptop"}`},
		{false, `{"backends":{"x":{"kind":"moon"}},"active":"x"}`},
		{false, `{"backends":{"x":{"kind":"agent","agent":"a1","pool":"p"}},"active":"x"}`},
		{false, `{"backends":{},"active":""}`},
		{false, `{"id":"S1","backends":{"x":{"kind":"agent","agent":"a1"}},"active":"x"}`},
		{false, `null`},
		{false, `[]`},
		{false, `{"backends":{"x":{"kind":"agent","agent":"a1"}},"active":"x","extra":1}`},
		{true, `{"to":"cloud"}`},
		{true, `{"to":"laptop","ifEpoch":1}`},
		{true, `{"to":"laptop","ifEpoch":0}`},
		{true, `{"to":"laptop","ifEpoch":-1}`},
		{true, `{"to":"laptop","ifEpoch":18446744073709551615}`},
		{true, `{"to":""}`},
		{true, `{"to":7}`},
		{true, `{`},
	}
	for _, s := range seeds {
		f.Add(s.swap, []byte(s.body))
	}
	s := startServer(f, testConfig(f))
	cl := adminClient(s)
	ctx := context.Background()
	if _, err := cl.CreateWorkspace(ctx, "w1"); err != nil {
		f.Fatal(err)
	}
	enrollAgent(f, s, "w1", "a1") // enrolled, never online: a laptop asleep
	if _, err := cl.CreateSession(ctx, "w1", client.CreateSessionRequest{ID: "s1", Active: "laptop",
		Backends: map[string]client.SessionBackend{
			"laptop": {Kind: client.KindAgent, Agent: "a1"},
			"cloud":  {Kind: client.KindPool, Pool: "cloud"},
		}}); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, swap bool, body []byte) {
		path := "/v1/workspaces/w1/sessions"
		if swap {
			path += "/s1/swap"
		}
		status, out := call(t, s, "POST", path, s.AdminToken(), body)
		switch {
		case status == 200 || status == 201:
			var sess client.Session
			if err := json.Unmarshal(out, &sess); err != nil {
				t.Fatalf("status %d with body %s: %v", status, out, err)
			}
			if _, ok := sess.Backends[sess.Active]; subjects.ValidateID(sess.ID) != nil || !ok || sess.Epoch < 1 {
				t.Fatalf("status %d with an invalid session: %s", status, out)
			}
		case status >= 500 && status != 503:
			t.Fatalf("status %d for %q: %s", status, body, out)
		default:
			if code, _ := errorCode(t, out); wire.HTTPStatus(code) != status {
				t.Fatalf("status %d with code %s: %s", status, code, out)
			}
		}
	})
}
