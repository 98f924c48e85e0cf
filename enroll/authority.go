package enroll

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nkeys"

	"github.com/outposthq/outpost/subjects"
)

// Names of the accounts and built-in users, as they appear in JWTs and in the
// server's logs.
const (
	AccountName       = "OUTPOST"
	SystemAccountName = "SYS"
	OperatorName      = "outpost"
	serviceUserName   = "outpost-control-plane"
	systemUserName    = "outpost-system"
)

// Files in the authority directory; each holds one nkey seed.
const (
	operatorKeyFile = "operator.nk"
	systemKeyFile   = "system-account.nk"
	accountKeyFile  = "account.nk"
	maxKeyFileSize  = 4 << 10
)

// Authority signs every JWT of an Outpost deployment: the operator, the
// system account, the app account ("OUTPOST") and its users. It holds the
// three private keys in memory; it is safe for concurrent use and immutable
// after LoadOrCreateAuthority.
type Authority struct {
	operator nkeys.KeyPair
	system   nkeys.KeyPair
	account  nkeys.KeyPair

	operatorPub, systemPub, accountPub string
	operatorJWT                        string
}

// LoadOrCreateAuthority loads the operator, system account and app account
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
	if err := os.MkdirAll(dir, privateDirMode); err != nil {
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
	var err error
	if a.operator, err = load(filepath.Join(dir, operatorKeyFile), nkeys.PrefixByteOperator); err != nil {
		return nil, fmt.Errorf("authority: operator key: %w", err)
	}
	if a.system, err = load(filepath.Join(dir, systemKeyFile), nkeys.PrefixByteAccount); err != nil {
		return nil, fmt.Errorf("authority: system account key: %w", err)
	}
	if a.account, err = load(filepath.Join(dir, accountKeyFile), nkeys.PrefixByteAccount); err != nil {
		return nil, fmt.Errorf("authority: account key: %w", err)
	}
	if a.operatorPub, err = a.operator.PublicKey(); err != nil {
		return nil, fmt.Errorf("authority: %w", err)
	}
	if a.systemPub, err = a.system.PublicKey(); err != nil {
		return nil, fmt.Errorf("authority: %w", err)
	}
	if a.accountPub, err = a.account.PublicKey(); err != nil {
		return nil, fmt.Errorf("authority: %w", err)
	}
	if a.systemPub == a.accountPub {
		return nil, errors.New("authority: system and app account share a key")
	}
	oc := jwt.NewOperatorClaims(a.operatorPub)
	oc.Name = OperatorName
	oc.SystemAccount = a.systemPub
	if a.operatorJWT, err = oc.Encode(a.operator); err != nil {
		return nil, fmt.Errorf("authority: sign operator: %w", err)
	}
	return a, nil
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
		err = createFileExclusive(path, line)
		wipe(line)
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
	data, err := readPrivateFile(path, maxKeyFileSize)
	if err != nil {
		return nil, err
	}
	defer wipe(data)
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

func wipe(b []byte) {
	for i := range b {
		b[i] = 'x'
	}
}

// OperatorJWT is the operator's JWT, to trust on every server
// (server.Options.TrustedOperators or an `operator:` config line).
func (a *Authority) OperatorJWT() string { return a.operatorJWT }

// OperatorPublicKey is the operator's public nkey.
func (a *Authority) OperatorPublicKey() string { return a.operatorPub }

// SystemAccountPublicKey is the system account's public nkey
// (server.Options.SystemAccount).
func (a *Authority) SystemAccountPublicKey() string { return a.systemPub }

// AccountPublicKey is the app account's public nkey: every agent and the
// control plane live in it.
func (a *Authority) AccountPublicKey() string { return a.accountPub }

// AccountJWT signs the app account's claims: JetStream enabled without
// limits, bearer user JWTs refused, and Revocations = revoked, which maps a
// user public key to unix seconds: user JWTs for that key issued at or before
// that time are refused and their connections closed. Every key must be an
// nkey user public key and every time positive. The map is copied.
//
// The revocation list is the whole list, not a delta: the caller keeps it
// (the control plane in its state) and passes all of it each time.
func (a *Authority) AccountJWT(revoked map[string]int64) (string, error) {
	ac := jwt.NewAccountClaims(a.accountPub)
	ac.Name = AccountName
	ac.Limits.JetStreamLimits = jwt.JetStreamLimits{
		MemoryStorage: jwt.NoLimit,
		DiskStorage:   jwt.NoLimit,
		Streams:       jwt.NoLimit,
		Consumer:      jwt.NoLimit,
	}
	ac.Limits.DisallowBearer = true
	if len(revoked) > 0 {
		ac.Revocations = make(jwt.RevocationList, len(revoked))
		for k, t := range revoked {
			if !nkeys.IsValidPublicUserKey(k) {
				return "", fmt.Errorf("account jwt: revocation %q: not a user public key", k)
			}
			if t <= 0 {
				return "", fmt.Errorf("account jwt: revocation of %s: time %d is not positive", k, t)
			}
			ac.Revocations[k] = t
		}
	}
	s, err := ac.Encode(a.operator)
	if err != nil {
		return "", fmt.Errorf("account jwt: %w", err)
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
// plane's own user in the app account, with full permissions. Every call
// makes a new user key pair; nothing about it is stored, so keep the bytes
// (or write them with mode 0600) for as long as they are needed.
func (a *Authority) ServiceCreds() ([]byte, error) {
	b, err := userCreds(a.account, serviceUserName)
	if err != nil {
		return nil, fmt.Errorf("service creds: %w", err)
	}
	return b, nil
}

// SystemCreds returns a creds file for a user in the system account, the one
// PushAccount needs. Like ServiceCreds, every call makes a new key pair.
func (a *Authority) SystemCreds() ([]byte, error) {
	b, err := userCreds(a.system, systemUserName)
	if err != nil {
		return nil, fmt.Errorf("system creds: %w", err)
	}
	return b, nil
}

func userCreds(account nkeys.KeyPair, name string) ([]byte, error) {
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

// IssueAgentJWT signs a user JWT for agent ag holding the nkey user public key
// publicKey (made on the agent's machine). Its permissions are exactly
// subjects.AgentPermissions(ag): publish and subscribe agent.<ws>.<agent>.>
// and any number of replies to a request it received, within
// subjects.ResponseWindowSeconds. Its name is ag.String(), its tags
// "ws:<ws>" and "agent:<id>". It does not expire: it is ended by revoking
// publicKey (AccountJWT, PushAccount).
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
	if perms.AllowResponses {
		uc.Resp = &jwt.ResponsePermission{
			MaxMsgs: -1,
			Expires: time.Duration(perms.ResponseWindowSeconds) * time.Second,
		}
	}
	uc.Tags.Add("ws:"+ag.Workspace, "agent:"+ag.ID)
	s, err := uc.Encode(a.account)
	if err != nil {
		return "", fmt.Errorf("agent jwt for %s: %w", ag, err)
	}
	return s, nil
}
