package controlplane

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/outposthq/outpost/controlplane/client"
	"github.com/outposthq/outpost/enroll"
	"github.com/outposthq/outpost/internal/kvjson"
	"github.com/outposthq/outpost/wire"
)

// keyIDs are the ids of keys.
func keyIDs(keys []client.KeyInfo) []string {
	var ids []string
	for _, k := range keys {
		ids = append(ids, k.ID)
	}
	return ids
}

// wantSecretsAbsent fails if body holds any of the secrets or their hashes.
func wantSecretsAbsent(t *testing.T, body []byte, secrets ...string) {
	t.Helper()
	for _, sec := range secrets {
		if strings.Contains(string(body), sec) || strings.Contains(string(body), enroll.HashToken(sec)) {
			t.Fatalf("listing %s reveals a secret or its hash", body)
		}
	}
}

func TestWorkspaceKeys(t *testing.T) {
	s := startServer(t, testConfig(t))
	ctx := context.Background()
	admin := adminClient(s)
	for _, ws := range []string{"ws1", "ws2"} {
		if _, err := admin.CreateWorkspace(ctx, ws); err != nil {
			t.Fatal(err)
		}
	}
	k1, err := admin.CreateKeyWithID(ctx, "ws1")
	if err != nil {
		t.Fatal(err)
	}
	k2, err := admin.CreateKeyWithID(ctx, "ws1")
	if err != nil {
		t.Fatal(err)
	}
	other, err := admin.CreateKeyWithID(ctx, "ws2")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []*client.Key{k1, k2, other} {
		if !strings.HasPrefix(k.ID, keyIDPrefix) || len(k.ID) != len(keyIDPrefix)+20 || strings.Contains(k.Token, strings.TrimPrefix(k.ID, keyIDPrefix)) {
			t.Fatalf("key id %q of token %q: want key_ and 20 hex digits, nothing of the token", k.ID, k.Token)
		}
	}
	// A key stored before keys had ids is listed under an id derived from
	// its record, the same every time.
	legacy, legacyHash, err := enroll.NewAPIKey()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kvjson.Create(ctx, s.st.apiKeys, hashKey(legacyHash), &keyRecord{Workspace: "ws1", CreatedAt: time.Now().UTC()}); err != nil {
		t.Fatal(err)
	}

	status, body := call(t, s, "GET", "/v1/workspaces/ws1/keys", s.AdminToken(), nil)
	if status != http.StatusOK || !strings.HasPrefix(string(body), `{"keys":[{"id":"`) || !strings.Contains(string(body), `"createdAt":"`) {
		t.Fatalf("list: %d %s", status, body)
	}
	wantSecretsAbsent(t, body, k1.Token, k2.Token, legacy)
	keys, err := admin.ListKeys(ctx, "ws1")
	if err != nil || len(keys) != 3 || keys[0].ID != k1.ID || keys[1].ID != k2.ID || slices.Contains(keyIDs(keys), other.ID) {
		t.Fatalf("list ws1 = %v, %v; want %s, %s and the legacy key", keyIDs(keys), err, k1.ID, k2.ID)
	}
	legacyID := keys[2].ID
	if again, _ := admin.ListKeys(ctx, "ws1"); !slices.Equal(keyIDs(again), keyIDs(keys)) || !strings.HasPrefix(legacyID, keyIDPrefix) {
		t.Fatalf("ids changed between listings: %v then %v", keyIDs(keys), keyIDs(again))
	}
	if strings.Contains(legacyHash, strings.TrimPrefix(legacyID, keyIDPrefix)) {
		t.Fatalf("legacy id %s is part of the key's hash", legacyID)
	}

	t.Run("lastUsed", func(t *testing.T) {
		if _, err := client.New(s.URL(), k1.Token).GetWorkspace(ctx, "ws1"); err != nil {
			t.Fatal(err)
		}
		waitFor(t, waitLong, "k1's lastUsed", func() bool {
			keys, err := admin.ListKeys(ctx, "ws1")
			return err == nil && !keys[0].LastUsed.IsZero() && time.Since(keys[0].LastUsed) < time.Minute
		})
		if keys, _ := admin.ListKeys(ctx, "ws1"); !keys[1].LastUsed.IsZero() {
			t.Fatalf("unused key %s has lastUsed %s", keys[1].ID, keys[1].LastUsed)
		}
	})

	t.Run("admin only", func(t *testing.T) {
		for _, c := range []struct{ method, path string }{
			{"GET", "/v1/workspaces/ws1/keys"},
			{"DELETE", "/v1/workspaces/ws1/keys/" + k2.ID},
		} {
			if status, body := call(t, s, c.method, c.path, k1.Token, nil); status != http.StatusForbidden {
				t.Fatalf("%s %s with a workspace key: %d %s, want 403", c.method, c.path, status, body)
			}
		}
	})

	t.Run("delete", func(t *testing.T) {
		for _, c := range []struct {
			name, id, token string
		}{
			{"new key", k1.ID, k1.Token},
			{"legacy key", legacyID, legacy},
		} {
			if err := admin.DeleteKey(ctx, "ws1", c.id); err != nil {
				t.Fatalf("%s: delete: %v", c.name, err)
			}
			// At once: no wait for caches.
			if status, body := call(t, s, "GET", "/v1/workspaces/ws1", c.token, nil); status != http.StatusUnauthorized {
				t.Fatalf("%s after delete: %d %s, want 401", c.name, status, body)
			}
			if err := admin.DeleteKey(ctx, "ws1", c.id); !errors.Is(err, wire.ErrNotFound) {
				t.Fatalf("%s: delete again: %v, want not_found", c.name, err)
			}
		}
		// Another workspace's key is not found through ws1, and works on.
		if err := admin.DeleteKey(ctx, "ws1", other.ID); !errors.Is(err, wire.ErrNotFound) {
			t.Fatalf("delete ws2's key through ws1: %v, want not_found", err)
		}
		for _, k := range []*client.Key{k2, other} {
			ws := map[string]string{k2.ID: "ws1", other.ID: "ws2"}[k.ID]
			if _, err := client.New(s.URL(), k.Token).GetWorkspace(ctx, ws); err != nil {
				t.Fatalf("key %s after deleting others: %v", k.ID, err)
			}
		}
		if keys, err := admin.ListKeys(ctx, "ws1"); err != nil || !slices.Equal(keyIDs(keys), []string{k2.ID}) {
			t.Fatalf("list after delete = %v, %v; want only %s", keyIDs(keys), err, k2.ID)
		}
		if status, body := call(t, s, "DELETE", "/v1/workspaces/ws1/keys/Bad.Id", s.AdminToken(), nil); status != http.StatusBadRequest {
			t.Fatalf("bad id: %d %s, want 400", status, body)
		}
	})
}

func TestEnrollmentTokenList(t *testing.T) {
	s := startServer(t, testConfig(t))
	ctx := context.Background()
	admin := adminClient(s)
	for _, ws := range []string{"ws1", "ws2"} {
		if _, err := admin.CreateWorkspace(ctx, ws); err != nil {
			t.Fatal(err)
		}
	}
	newToken := func(ws string, req client.EnrollmentTokenRequest) *client.EnrollmentToken {
		t.Helper()
		tok, err := admin.CreateEnrollmentToken(ctx, ws, req)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(tok.ID, tokenIDPrefix) || len(tok.ID) != len(tokenIDPrefix)+20 {
			t.Fatalf("token id %q: want tok_ and 20 hex digits", tok.ID)
		}
		return tok
	}
	forAgent := newToken("ws1", client.EnrollmentTokenRequest{Agent: "a1"})
	forPool := newToken("ws1", client.EnrollmentTokenRequest{Pool: "cloud"})
	used := newToken("ws1", client.EnrollmentTokenRequest{})
	redeem(t, s, used.Token, "")
	otherWS := newToken("ws2", client.EnrollmentTokenRequest{})
	// An expired token, and one stored before tokens had ids.
	now := time.Now().UTC()
	expired, expiredHash, _ := enroll.NewToken()
	legacy, legacyHash, _ := enroll.NewToken()
	for hash, rec := range map[string]*tokenRecord{
		expiredHash: {ID: newRecordID(tokenIDPrefix), Workspace: "ws1", CreatedAt: now.Add(-time.Hour), ExpiresAt: now.Add(-time.Minute)},
		legacyHash:  {Workspace: "ws1", CreatedAt: now, ExpiresAt: now.Add(time.Hour)},
	} {
		if _, err := kvjson.Create(ctx, s.st.tokens, hashKey(hash), rec); err != nil {
			t.Fatal(err)
		}
	}

	key, err := admin.CreateKey(ctx, "ws1")
	if err != nil {
		t.Fatal(err)
	}
	status, body := call(t, s, "GET", "/v1/workspaces/ws1/enrollment-tokens", key, nil)
	if status != http.StatusOK || !strings.HasPrefix(string(body), `{"tokens":[{"id":"`) {
		t.Fatalf("list with the workspace's key: %d %s", status, body)
	}
	wantSecretsAbsent(t, body, forAgent.Token, forPool.Token, used.Token, expired, legacy)
	if status, body := call(t, s, "GET", "/v1/workspaces/ws2/enrollment-tokens", key, nil); status != http.StatusForbidden {
		t.Fatalf("list another workspace's: %d %s, want 403", status, body)
	}
	toks, err := admin.ListEnrollmentTokens(ctx, "ws1")
	if err != nil || len(toks) != 3 {
		t.Fatalf("list = %+v, %v; want the agent's, the pool's and the legacy token", toks, err)
	}
	byID := map[string]client.EnrollmentTokenInfo{}
	for _, tok := range toks {
		byID[tok.ID] = tok
	}
	if a, p := byID[forAgent.ID], byID[forPool.ID]; a.Agent != "a1" || p.Pool != "cloud" || !a.ExpiresAt.Equal(forAgent.ExpiresAt) || a.Pool != "" || p.Agent != "" {
		t.Fatalf("listed %+v and %+v", a, p)
	}
	delete(byID, forAgent.ID)
	delete(byID, forPool.ID)
	var legacyID string
	for id := range byID {
		legacyID = id
	}
	if !strings.HasPrefix(legacyID, tokenIDPrefix) || legacyID == used.ID || legacyID == otherWS.ID {
		t.Fatalf("legacy token listed as %q", legacyID)
	}

	pub, _ := newKeys(t)
	for _, c := range []struct{ name, id, token string }{
		{"new token", forAgent.ID, forAgent.Token},
		{"legacy token", legacyID, legacy},
	} {
		status, body := call(t, s, "DELETE", "/v1/workspaces/ws1/enrollment-tokens/"+c.id, key, nil)
		if status != http.StatusNoContent {
			t.Fatalf("%s: delete: %d %s, want 204", c.name, status, body)
		}
		status, body = call(t, s, "POST", "/v1/enroll", "", enroll.Request{Token: c.token, PublicKey: pub})
		if code, _ := errorCode(t, body); status != http.StatusUnauthorized || code != wire.CodeUnauthenticated {
			t.Fatalf("%s: enroll after delete: %d %s, want 401", c.name, status, body)
		}
		if err := admin.DeleteEnrollmentToken(ctx, "ws1", c.id); !errors.Is(err, wire.ErrNotFound) {
			t.Fatalf("%s: delete again: %v, want not_found", c.name, err)
		}
	}
	if err := admin.DeleteEnrollmentToken(ctx, "ws1", otherWS.ID); !errors.Is(err, wire.ErrNotFound) {
		t.Fatalf("delete ws2's token through ws1: %v, want not_found", err)
	}
	if toks, err := admin.ListEnrollmentTokens(ctx, "ws1"); err != nil || len(toks) != 1 || toks[0].ID != forPool.ID {
		t.Fatalf("list after delete = %+v, %v; want only %s", toks, err, forPool.ID)
	}
	// The tokens left still enroll.
	redeem(t, s, forPool.Token, "")
	redeem(t, s, otherWS.Token, "")
}
