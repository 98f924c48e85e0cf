package authority

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nkeys"

	"github.com/outposthq/outpost/internal/secretfile"
	"github.com/outposthq/outpost/subjects"
)

func TestAuthorityReload(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "auth")
	a1, err := LoadOrCreateAuthority(dir)
	if err != nil {
		t.Fatalf("first load: %v", err)
	}
	a2, err := LoadOrCreateAuthority(dir)
	if err != nil {
		t.Fatalf("second load: %v", err)
	}
	for _, c := range []struct{ name, got, want string }{
		{"operator", a2.OperatorPublicKey(), a1.OperatorPublicKey()},
		{"system account", a2.SystemAccountPublicKey(), a1.SystemAccountPublicKey()},
		{"account", a2.AccountPublicKey(), a1.AccountPublicKey()},
		{"agents account", a2.AgentsAccountPublicKey(), a1.AgentsAccountPublicKey()},
	} {
		if c.got != c.want {
			t.Errorf("%s key after reload = %s, want %s", c.name, c.got, c.want)
		}
	}
	if keys := []string{a1.SystemAccountPublicKey(), a1.AccountPublicKey(), a1.AgentsAccountPublicKey()}; len(slices.Compact(slices.Sorted(slices.Values(keys)))) != 3 {
		t.Errorf("accounts share a key: %v", keys)
	}
	oc, err := jwt.DecodeOperatorClaims(a2.OperatorJWT())
	if err != nil {
		t.Fatalf("operator jwt: %v", err)
	}
	if oc.Subject != a1.OperatorPublicKey() || oc.SystemAccount != a1.SystemAccountPublicKey() {
		t.Errorf("operator jwt subject %s system %s, want %s %s", oc.Subject, oc.SystemAccount, a1.OperatorPublicKey(), a1.SystemAccountPublicKey())
	}

	if runtime.GOOS == "windows" {
		return // no unix permission bits
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("dir mode = %v (%v), want 0700", fi.Mode().Perm(), err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
		fi, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s mode = %v, want 0600", e.Name(), fi.Mode().Perm())
		}
	}
	if want := []string{accountKeyFile, agentsKeyFile, operatorKeyFile, systemKeyFile}; !slices.Equal(names, want) {
		t.Errorf("files = %v, want %v (no temp files left)", names, want)
	}
}

func TestAuthorityRefusesBadKeyFiles(t *testing.T) {
	userSeed := func() []byte {
		kp, _ := nkeys.CreateUser()
		s, _ := kp.Seed()
		return s
	}
	tests := []struct {
		name    string
		file    string
		data    []byte
		mode    os.FileMode
		wantErr error
		unix    bool
	}{
		{name: "loose mode", file: operatorKeyFile, mode: 0o644, wantErr: secretfile.ErrInsecure, unix: true},
		{name: "wrong key kind", file: accountKeyFile, data: userSeed(), mode: 0o600},
		{name: "not a seed", file: systemKeyFile, data: []byte("hello\n"), mode: 0o600},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.unix && runtime.GOOS == "windows" {
				t.Skip("unix permission bits only")
			}
			dir := t.TempDir()
			if _, err := LoadOrCreateAuthority(dir); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, tt.file)
			if tt.data != nil {
				if err := os.WriteFile(path, tt.data, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.Chmod(path, tt.mode); err != nil {
				t.Fatal(err)
			}
			_, err := LoadOrCreateAuthority(dir)
			if err == nil {
				t.Fatal("load succeeded, want an error")
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Fatalf("error %v, want %v", err, tt.wantErr)
			}
		})
	}
}

func TestIssueAgentJWT(t *testing.T) {
	a := newAuthority(t)
	user, _ := nkeys.CreateUser()
	userPub, _ := user.PublicKey()
	userSeed, _ := user.Seed()
	acct, _ := nkeys.CreateAccount()
	acctPub, _ := acct.PublicKey()
	op, _ := nkeys.CreateOperator()
	opPub, _ := op.PublicKey()

	tests := []struct {
		name    string
		agent   subjects.Agent
		key     string
		wantErr bool
	}{
		{name: "ok", agent: agentA1, key: userPub},
		{name: "account key", agent: agentA1, key: acctPub, wantErr: true},
		{name: "operator key", agent: agentA1, key: opPub, wantErr: true},
		{name: "seed instead of public key", agent: agentA1, key: string(userSeed), wantErr: true},
		{name: "garbage", agent: agentA1, key: "UABC", wantErr: true},
		{name: "empty key", agent: agentA1, wantErr: true},
		{name: "wildcard agent", agent: subjects.Agent{Workspace: "ws", ID: "*"}, key: userPub, wantErr: true},
		{name: "dotted workspace", agent: subjects.Agent{Workspace: "ws.x", ID: "a1"}, key: userPub, wantErr: true},
		{name: "empty agent", agent: subjects.Agent{Workspace: "ws"}, key: userPub, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			token, err := a.IssueAgentJWT(tt.agent, tt.key)
			if (err != nil) != tt.wantErr {
				t.Fatalf("IssueAgentJWT error = %v, want error: %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			checkAgentClaims(t, a, tt.agent, tt.key, token)
		})
	}
}

// checkAgentClaims checks that token grants exactly subjects.AgentPermissions.
func checkAgentClaims(t testing.TB, a *Authority, ag subjects.Agent, key, token string) {
	t.Helper()
	uc, err := jwt.DecodeUserClaims(token)
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	perms, err := subjects.AgentPermissions(ag)
	if err != nil {
		t.Fatal(err)
	}
	if uc.Subject != key {
		t.Errorf("subject %s, want %s", uc.Subject, key)
	}
	if uc.Issuer != a.AgentsAccountPublicKey() {
		t.Errorf("issuer %s, want the agents' account %s", uc.Issuer, a.AgentsAccountPublicKey())
	}
	if uc.Name != ag.String() {
		t.Errorf("name %q, want %q", uc.Name, ag.String())
	}
	if uc.Expires != 0 {
		t.Errorf("expires %d, want none", uc.Expires)
	}
	if !slices.Equal(uc.Pub.Allow, perms.PubAllow) || !slices.Equal(uc.Sub.Allow, perms.SubAllow) {
		t.Errorf("pub %v sub %v, want %v %v", uc.Pub.Allow, uc.Sub.Allow, perms.PubAllow, perms.SubAllow)
	}
	if len(uc.Pub.Deny) != 0 || len(uc.Sub.Deny) != 0 {
		t.Errorf("deny lists %v %v, want none", uc.Pub.Deny, uc.Sub.Deny)
	}
	if uc.Resp != nil {
		t.Errorf("resp %+v, want no response permission", uc.Resp)
	}
	if wantTags := []string{"ws:" + ag.Workspace, "agent:" + ag.ID}; !slices.Equal(uc.Tags, wantTags) {
		t.Errorf("tags %v, want %v", uc.Tags, wantTags)
	}
	if uc.BearerToken {
		t.Error("bearer token")
	}
}

func TestAccountJWT(t *testing.T) {
	a := newAuthority(t)
	token, err := a.AccountJWT()
	if err != nil {
		t.Fatal(err)
	}
	ac, err := jwt.DecodeAccountClaims(token)
	if err != nil {
		t.Fatal(err)
	}
	if ac.Subject != a.AccountPublicKey() || ac.Issuer != a.OperatorPublicKey() || ac.Name != AccountName {
		t.Errorf("subject %s issuer %s name %s", ac.Subject, ac.Issuer, ac.Name)
	}
	if !ac.Limits.IsJSEnabled() || !ac.Limits.JetStreamLimits.IsUnlimited() {
		t.Errorf("jetstream limits %+v, want enabled and unlimited", ac.Limits.JetStreamLimits)
	}
	if len(ac.Revocations) != 0 || len(ac.Exports) != 0 || len(ac.Imports) != 0 {
		t.Errorf("revocations %v exports %v imports %v, want none in a new directory", ac.Revocations, ac.Exports, ac.Imports)
	}
}

func TestAgentsAccountJWT(t *testing.T) {
	a := newAuthority(t)
	u1, _ := nkeys.CreateUser()
	pub1, _ := u1.PublicKey()
	acct, _ := nkeys.CreateAccount()
	acctPub, _ := acct.PublicKey()

	tests := []struct {
		name    string
		revoked map[string]int64
		wantErr bool
	}{
		{name: "none", revoked: nil},
		{name: "one user", revoked: map[string]int64{pub1: 1700000000}},
		{name: "account key", revoked: map[string]int64{acctPub: 1700000000}, wantErr: true},
		{name: "all users wildcard", revoked: map[string]int64{"*": 1700000000}, wantErr: true},
		{name: "zero time", revoked: map[string]int64{pub1: 0}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			token, err := a.AgentsAccountJWT(tt.revoked)
			if (err != nil) != tt.wantErr {
				t.Fatalf("AgentsAccountJWT error = %v, want error: %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			ac, err := jwt.DecodeAccountClaims(token)
			if err != nil {
				t.Fatal(err)
			}
			if ac.Subject != a.AgentsAccountPublicKey() || ac.Issuer != a.OperatorPublicKey() || ac.Name != AgentsAccountName {
				t.Errorf("subject %s issuer %s name %s", ac.Subject, ac.Issuer, ac.Name)
			}
			if ac.Limits.IsJSEnabled() {
				t.Errorf("jetstream limits %+v, want JetStream disabled for agents", ac.Limits.JetStreamLimits)
			}
			if !ac.Limits.DisallowBearer || len(ac.Exports) != 0 || len(ac.Imports) != 0 {
				t.Errorf("bearer allowed %v, exports %v, imports %v: want no bearer, no exports, no imports", !ac.Limits.DisallowBearer, ac.Exports, ac.Imports)
			}
			if len(ac.Revocations) != len(tt.revoked) {
				t.Errorf("revocations %v, want %v", ac.Revocations, tt.revoked)
			}
			for k, v := range tt.revoked {
				if ac.Revocations[k] != v {
					t.Errorf("revocation of %s = %d, want %d", k, ac.Revocations[k], v)
				}
			}
		})
	}
}

func FuzzIssueAgentJWT(f *testing.F) {
	user, _ := nkeys.CreateUser()
	userPub, _ := user.PublicKey()
	acct, _ := nkeys.CreateAccount()
	acctPub, _ := acct.PublicKey()
	for _, s := range []struct{ ws, id, key string }{
		{"ws", "a1", userPub},
		{"ws", "a1", acctPub},
		{"ws", "*", userPub},
		{"ws.x", "a1", userPub},
		{"ws", "a1 >", userPub},
		{"", "", ""},
		{"ws", "a1", "UABC"},
	} {
		f.Add(s.ws, s.id, s.key)
	}
	a, err := LoadOrCreateAuthority(f.TempDir())
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, ws, id, key string) {
		ag := subjects.Agent{Workspace: ws, ID: id}
		token, err := a.IssueAgentJWT(ag, key)
		if err != nil {
			return
		}
		if ag.Validate() != nil || !nkeys.IsValidPublicUserKey(key) {
			t.Fatalf("issued for invalid agent %q or key %q", ag, key)
		}
		checkAgentClaims(t, a, ag, key, token)
	})
}
