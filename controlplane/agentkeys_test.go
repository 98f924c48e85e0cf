package controlplane

import (
	"context"
	"net/http"
	"testing"

	"github.com/outposthq/outpost/controlplane/client"
	"github.com/outposthq/outpost/enroll"
	"github.com/outposthq/outpost/wire"
)

// A public key is bound to one agent for good: reusing another agent's key
// (public keys show in logs) or a revoked one is refused with 409 key_in_use
// before the token is spent.
func TestEnrollRefusesKeyInUse(t *testing.T) {
	s := startServer(t, testConfig(t))
	ctx := context.Background()
	admin := adminClient(s)
	for _, ws := range []string{"wsa", "wsb"} {
		if _, err := admin.CreateWorkspace(ctx, ws); err != nil {
			t.Fatal(err)
		}
	}
	victim := enrollAgent(t, s, "wsa", "victim")
	rotated := enrollAgent(t, s, "wsa", "rot")
	enrollAgent(t, s, "wsa", "rot") // rotation revokes rotated.pub
	gone := enrollAgent(t, s, "wsa", "gone")
	if err := admin.RevokeAgent(ctx, "wsa", "gone"); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name       string
		ws, agent  string // the token's
		reqName    string
		key        string
		wantStatus int
	}{
		{name: "another workspace's agent's key", ws: "wsb", key: victim.pub, wantStatus: http.StatusConflict},
		{name: "another agent's key, same workspace", ws: "wsa", agent: "other", key: victim.pub, wantStatus: http.StatusConflict},
		{name: "another agent's key, by name", ws: "wsa", reqName: "named", key: victim.pub, wantStatus: http.StatusConflict},
		{name: "a key rotated away", ws: "wsa", agent: "rot", key: rotated.pub, wantStatus: http.StatusConflict},
		{name: "a revoked agent's key", ws: "wsb", key: gone.pub, wantStatus: http.StatusConflict},
		{name: "a revoked agent's key, same agent", ws: "wsa", agent: "gone", key: gone.pub, wantStatus: http.StatusConflict},
		{name: "its own current key again", ws: "wsa", agent: "victim", key: victim.pub, wantStatus: http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tok, err := admin.CreateEnrollmentToken(ctx, tt.ws, client.EnrollmentTokenRequest{Agent: tt.agent})
			if err != nil {
				t.Fatal(err)
			}
			status, body := call(t, s, "POST", "/v1/enroll", "", enroll.Request{Token: tok.Token, PublicKey: tt.key, Name: tt.reqName})
			if status != tt.wantStatus {
				t.Fatalf("enroll: %d %s, want %d", status, body, tt.wantStatus)
			}
			if status == http.StatusOK {
				return
			}
			if code, reason := errorCode(t, body); code != wire.CodeConflict || reason != wire.ReasonKeyInUse {
				t.Fatalf("error %s/%s, want conflict/key_in_use", code, reason)
			}
			// The token was not spent: a fresh key enrolls with it.
			redeem(t, s, tok.Token, tt.reqName)
		})
	}

	// The victim was untouched throughout.
	nc, err := victim.connect()
	if err != nil {
		t.Fatalf("victim's credentials: %v", err)
	}
	nc.Close()
}
