// Package authority is the control plane's NATS signing authority: the
// operator, the system account, the control plane's account and the agents'
// account, the user JWTs of each, the server configuration that trusts them
// and the pushes that carry revocations. Only the control plane links it: the
// agent daemon never holds a signing key (see the dependency test).
//
// Account layout (the isolation boundary between agents and everything else):
//
//	operator "outpost"
//	├── system account "SYS"            — SystemCreds: pushes account updates
//	├── account "OUTPOST"               — JetStream (the control plane's state)
//	│   └── control-plane user          — ServiceCreds
//	└── account "OUTPOST_AGENTS"        — no JetStream; revocations live here
//	    ├── control-plane user          — AgentsServiceCreds: agent.> only
//	    └── one user per agent          — IssueAgentJWT: its own subjects only
//
// The two application accounts share nothing: no exports, no imports. The
// control plane reaches agents through its own user in the agents' account,
// so nothing an agent publishes can reach JetStream, KV or the control
// plane's inboxes, whatever subject or reply subject it names.
package authority

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nkeys"

	"github.com/outposthq/outpost/internal/secretfile"
	"github.com/outposthq/outpost/subjects"
)

// Names of the accounts and built-in users, as they appear in JWTs and in the
// server's logs.
const (
	AccountName       = "OUTPOST"
	AgentsAccountName = "OUTPOST_AGENTS"
	SystemAccountName = "SYS"
	OperatorName      = "outpost"
	serviceUserName   = "outpost-control-plane"
	agentsUserName    = "outpost-control-plane-agents"
	systemUserName    = "outpost-system"
)

// Files in the authority directory; each key file holds one nkey seed.
const (
	operatorKeyFile = "operator.nk"
	systemKeyFile   = "system-account.nk"
	accountKeyFile  = "account.nk"
	agentsKeyFile   = "agents-account.nk"
	// legacyCutoffFile holds the unix time up to which users of the OUTPOST
	// account are revoked wholesale: agents enrolled before the agents'
	// account existed were users of OUTPOST, with response permissions.
	legacyCutoffFile = "legacy-agents-cutoff"
	maxKeyFileSize   = 4 << 10
)

// Authority signs every JWT of an Outpost deployment: the operator, the
// system account, the app account ("OUTPOST") and its users. It holds the
// three private keys in memory; it is safe for concurrent use and immutable
// after LoadOrCreateAuthority.
type Authority struct {
	operator nkeys.KeyPair
	system   nkeys.KeyPair
	account  nkeys.KeyPair
	agents   nkeys.KeyPair

	operatorPub, systemPub, accountPub, agentsPub string
	operatorJWT                                   string
	// legacyCutoff revokes every OUTPOST user issued at or before it (unix
	// seconds); zero when the directory never held the old layout.
	legacyCutoff int64
}

// LoadOrCreateAuthority loads the operator, system, app and agents account
// keys from dir, creating whichever is missing. dir is created with mode 0700
// if it does not exist; each key file is written once, atomically, mode 0600,
// and refused on load when group or others can access it (unix). Two processes
// racing to create the same key end up with one key: the loser loads the
// winner's.
//
// The operator JWT is signed afresh on every load; it names the system account
// and carries no expiry.
func LoadOrCreateAuthority(dir string) (*Authority, error) {
	if dir == "" {
		return nil, errors.New("authority: empty directory")
	}
	if err := os.MkdirAll(dir, secretfile.DirMode); err != nil {
		return nil, fmt.Errorf("authority: %w", err)
	}
	if err := markLegacy(dir); err != nil {
		return nil, fmt.Errorf("authority: %w", err)
	}
	return loadAuthority(dir, loadOrCreateKey)
}

// LoadAuthority loads an authority that already exists in dir and creates
// nothing: control-plane replicas sharing an external NATS must sign with
// the one authority its servers trust, never a fresh one of their own.
func LoadAuthority(dir string) (*Authority, error) {
	if dir == "" {
		return nil, errors.New("authority: empty directory")
	}
	return loadAuthority(dir, loadKey)
}

func loadAuthority(dir string, load func(string, nkeys.PrefixByte) (nkeys.KeyPair, error)) (*Authority, error) {
	a := &Authority{}
	keys := []struct {
		kp   *nkeys.KeyPair
		pub  *string
		file string
		kind nkeys.PrefixByte
	}{
		{&a.operator, &a.operatorPub, operatorKeyFile, nkeys.PrefixByteOperator},
		{&a.system, &a.systemPub, systemKeyFile, nkeys.PrefixByteAccount},
		{&a.account, &a.accountPub, accountKeyFile, nkeys.PrefixByteAccount},
		{&a.agents, &a.agentsPub, agentsKeyFile, nkeys.PrefixByteAccount},
	}
	for _, k := range keys {
		kp, err := load(filepath.Join(dir, k.file), k.kind)
		if err != nil {
			return nil, fmt.Errorf("authority: %s: %w", k.file, err)
		}
		if *k.pub, err = kp.PublicKey(); err != nil {
			return nil, fmt.Errorf("authority: %s: %w", k.file, err)
		}
		*k.kp = kp
	}
	if a.systemPub == a.accountPub || a.systemPub == a.agentsPub || a.accountPub == a.agentsPub {
		return nil, errors.New("authority: two accounts share a key")
	}
	var err error
	if a.legacyCutoff, err = readCutoff(filepath.Join(dir, legacyCutoffFile)); err != nil {
		return nil, fmt.Errorf("authority: %w", err)
	}
	oc := jwt.NewOperatorClaims(a.operatorPub)
	oc.Name = OperatorName
	oc.SystemAccount = a.systemPub
	if a.operatorJWT, err = oc.Encode(a.operator); err != nil {
		return nil, fmt.Errorf("authority: sign operator: %w", err)
	}
	return a, nil
}

// markLegacy records, once, that dir held the old layout (agents as users of
// the OUTPOST account): an app account key without an agents account key.
// Every OUTPOST user issued up to a second before now is revoked from then
// on; the control plane's own users are issued afresh at every start.
func markLegacy(dir string) error {
	if _, err := os.Stat(filepath.Join(dir, accountKeyFile)); err != nil {
		return nil // a new directory: nothing to cut off
	}
	if _, err := os.Stat(filepath.Join(dir, agentsKeyFile)); err == nil {
		return nil
	}
	cutoff := strconv.FormatInt(time.Now().Unix()-1, 10) + "\n"
	err := secretfile.CreateExclusive(filepath.Join(dir, legacyCutoffFile), []byte(cutoff))
	if err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("legacy cutoff: %w", err)
	}
	return nil
}

func readCutoff(path string) (int64, error) {
	data, err := secretfile.Read(path, 64)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	t, err := strconv.ParseInt(string(bytes.TrimSpace(data)), 10, 64)
	if err != nil || t <= 0 {
		return 0, fmt.Errorf("%s: not a positive unix time: %q", path, data)
	}
	return t, nil
}

// loadOrCreateKey reads the seed in path, or creates one of kind there.
func loadOrCreateKey(path string, kind nkeys.PrefixByte) (nkeys.KeyPair, error) {
	for range 2 {
		kp, err := loadKey(path, kind)
		if err == nil || !errors.Is(err, fs.ErrNotExist) {
			return kp, err
		}
		kp, err = nkeys.CreatePair(kind)
		if err != nil {
			return nil, err
		}
		// Seed returns the key pair's own buffer: copy, never wipe it.
		seed, err := kp.Seed()
		if err != nil {
			return nil, err
		}
		line := append(bytes.Clone(seed), '\n')
		err = secretfile.CreateExclusive(path, line)
		secretfile.Wipe(line)
		if err == nil {
			return kp, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, err
		}
		// Somebody else created it meanwhile: load theirs.
	}
	return loadKey(path, kind)
}

func loadKey(path string, kind nkeys.PrefixByte) (nkeys.KeyPair, error) {
	data, err := secretfile.Read(path, maxKeyFileSize)
	if err != nil {
		return nil, err
	}
	defer secretfile.Wipe(data)
	seed := bytes.TrimSpace(data)
	prefix, _, err := nkeys.DecodeSeed(seed)
	if err != nil {
		return nil, fmt.Errorf("%s: not an nkey seed: %w", path, err)
	}
	if prefix != kind {
		return nil, fmt.Errorf("%s: seed is a %s key, want %s", path, prefix, kind)
	}
	return nkeys.FromSeed(seed)
}

// OperatorJWT is the operator's JWT, to trust on every server
// (server.Options.TrustedOperators or an `operator:` config line).
func (a *Authority) OperatorJWT() string { return a.operatorJWT }

// OperatorPublicKey is the operator's public nkey.
func (a *Authority) OperatorPublicKey() string { return a.operatorPub }

// SystemAccountPublicKey is the system account's public nkey
// (server.Options.SystemAccount).
func (a *Authority) SystemAccountPublicKey() string { return a.systemPub }

// AccountPublicKey is the app account's public nkey: the control plane's
// state (JetStream) lives in it.
func (a *Authority) AccountPublicKey() string { return a.accountPub }

// AgentsAccountPublicKey is the agents' account public nkey: every agent,
// and the control plane's connection to them, live in it.
func (a *Authority) AgentsAccountPublicKey() string { return a.agentsPub }

// AccountJWT signs the app account's claims: JetStream enabled without
// limits, bearer user JWTs refused, and, after an upgrade from the layout in
// which agents were users of this account, every user issued before the
// upgrade revoked.
func (a *Authority) AccountJWT() (string, error) {
	ac := jwt.NewAccountClaims(a.accountPub)
	ac.Name = AccountName
	ac.Limits.JetStreamLimits = jwt.JetStreamLimits{
		MemoryStorage: jwt.NoLimit,
		DiskStorage:   jwt.NoLimit,
		Streams:       jwt.NoLimit,
		Consumer:      jwt.NoLimit,
	}
	ac.Limits.DisallowBearer = true
	if a.legacyCutoff > 0 {
		ac.Revocations = jwt.RevocationList{jwt.All: a.legacyCutoff}
	}
	s, err := ac.Encode(a.operator)
	if err != nil {
		return "", fmt.Errorf("account jwt: %w", err)
	}
	return s, nil
}

// AgentsAccountJWT signs the agents' account claims: JetStream disabled,
// bearer user JWTs refused, and Revocations = revoked, which maps a user
// public key to unix seconds: user JWTs for that key issued at or before that
// time are refused and their connections closed. Every key must be an nkey
// user public key and every time positive. The map is copied.
//
// The revocation list is the whole list, not a delta: the caller keeps it
// (the control plane in its state) and passes all of it each time.
func (a *Authority) AgentsAccountJWT(revoked map[string]int64) (string, error) {
	ac := jwt.NewAccountClaims(a.agentsPub)
	ac.Name = AgentsAccountName
	ac.Limits.DisallowBearer = true
	if len(revoked) > 0 {
		ac.Revocations = make(jwt.RevocationList, len(revoked))
		for k, t := range revoked {
			if !nkeys.IsValidPublicUserKey(k) {
				return "", fmt.Errorf("agents account jwt: revocation %q: not a user public key", k)
			}
			if t <= 0 {
				return "", fmt.Errorf("agents account jwt: revocation of %s: time %d is not positive", k, t)
			}
			ac.Revocations[k] = t
		}
	}
	s, err := ac.Encode(a.operator)
	if err != nil {
		return "", fmt.Errorf("agents account jwt: %w", err)
	}
	return s, nil
}

// SystemAccountJWT signs the system account's claims.
func (a *Authority) SystemAccountJWT() (string, error) {
	ac := jwt.NewAccountClaims(a.systemPub)
	ac.Name = SystemAccountName
	s, err := ac.Encode(a.operator)
	if err != nil {
		return "", fmt.Errorf("system account jwt: %w", err)
	}
	return s, nil
}

// ServiceCreds returns a creds file (jwt.FormatUserConfig) for the control
// plane's own user in the app account, with full permissions there. Every call
// makes a new user key pair; nothing about it is stored, so keep the bytes
// (or write them with mode 0600) for as long as they are needed.
func (a *Authority) ServiceCreds() ([]byte, error) {
	b, err := userCreds(a.account, serviceUserName, nil)
	if err != nil {
		return nil, fmt.Errorf("service creds: %w", err)
	}
	return b, nil
}

// SystemCreds returns a creds file for a user in the system account, the one
// PushAccount needs. Like ServiceCreds, every call makes a new key pair.
func (a *Authority) SystemCreds() ([]byte, error) {
	b, err := userCreds(a.system, systemUserName, nil)
	if err != nil {
		return nil, fmt.Errorf("system creds: %w", err)
	}
	return b, nil
}

// AgentsServiceCreds returns a creds file for the control plane's user in
// the agents' account: publish and subscribe on agent.> (requests to agents,
// their replies and presence), nothing else. Like ServiceCreds, every call
// makes a new key pair.
func (a *Authority) AgentsServiceCreds() ([]byte, error) {
	all := subjects.Root + ".>"
	b, err := userCreds(a.agents, agentsUserName, func(uc *jwt.UserClaims) {
		uc.Pub.Allow.Add(all)
		uc.Sub.Allow.Add(all)
	})
	if err != nil {
		return nil, fmt.Errorf("agents service creds: %w", err)
	}
	return b, nil
}

func userCreds(account nkeys.KeyPair, name string, restrict func(*jwt.UserClaims)) ([]byte, error) {
	kp, err := nkeys.CreateUser()
	if err != nil {
		return nil, err
	}
	defer kp.Wipe()
	pub, err := kp.PublicKey()
	if err != nil {
		return nil, err
	}
	uc := jwt.NewUserClaims(pub)
	uc.Name = name
	if restrict != nil {
		restrict(uc)
	}
	token, err := uc.Encode(account)
	if err != nil {
		return nil, err
	}
	seed, err := kp.Seed() // kp's own buffer, wiped with kp
	if err != nil {
		return nil, err
	}
	return jwt.FormatUserConfig(token, seed)
}

// IssueAgentJWT signs a user JWT in the agents' account for agent ag
// holding the nkey user public key publicKey (made on the agent's machine).
// Its permissions are exactly subjects.AgentPermissions(ag), with no response
// permission. Its name is ag.String(), its tags subjects.AgentTags(ag)
// ("ws:<ws>" and "agent:<id>", which presence reads in NATS's events).
// It does not expire: it is ended by revoking publicKey (AgentsAccountJWT,
// PushAccount).
func (a *Authority) IssueAgentJWT(ag subjects.Agent, publicKey string) (string, error) {
	if !nkeys.IsValidPublicUserKey(publicKey) {
		return "", fmt.Errorf("agent jwt for %s: %q is not an nkey user public key", ag, publicKey)
	}
	perms, err := subjects.AgentPermissions(ag)
	if err != nil {
		return "", fmt.Errorf("agent jwt: %w", err)
	}
	uc := jwt.NewUserClaims(publicKey)
	uc.Name = ag.String()
	uc.Pub.Allow.Add(perms.PubAllow...)
	uc.Sub.Allow.Add(perms.SubAllow...)
	uc.Tags.Add(subjects.AgentTags(ag)...)
	s, err := uc.Encode(a.agents)
	if err != nil {
		return "", fmt.Errorf("agent jwt for %s: %w", ag, err)
	}
	return s, nil
}
