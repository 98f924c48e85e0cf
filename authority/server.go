package authority

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/outposthq/outpost/internal/secretfile"
)

// ClaimsUpdateSubject is where a system-account user publishes an account JWT
// for every server with an update-accepting resolver to store and apply.
const ClaimsUpdateSubject = "$SYS.REQ.CLAIMS.UPDATE"

// DefaultPushTimeout bounds PushAccount when its ctx has no deadline.
const DefaultPushTimeout = 5 * time.Second

// resolverSyncInterval is how often servers in a cluster compare their
// resolver directories and fetch what they miss.
const resolverSyncInterval = time.Minute

// ConfigureServer makes opts trust this authority: TrustedOperators,
// SystemAccount, and an AccountResolver that accepts pushed updates — a
// nats-server "full" DirAccResolver storing account JWTs under jwtDir
// (created 0700 if missing), the same resolver an external server gets from
// `resolver: {type: full, dir: ...}`, so PushAccount works the same against
// both. Accounts are never deleted from it.
//
// The three account JWTs are stored in jwtDir before the server starts. The
// agents' account JWT is signed afresh, carrying forward the revocations of
// the one already in jwtDir (if it was signed by this operator), so a restart
// never forgets a revocation that was pushed before, not even for the moment
// between Start and the caller's first push. The caller still owns the
// revocation list: after Start it should PushAccount(AgentsAccountJWT(current))
// to reconcile, which replaces the stored list with exactly the caller's.
//
// opts.JetStream and opts.StoreDir are the caller's to set.
func (a *Authority) ConfigureServer(opts *server.Options, jwtDir string) error {
	if opts == nil {
		return errors.New("configure server: nil options")
	}
	if jwtDir == "" {
		return errors.New("configure server: empty jwt directory")
	}
	oc, err := jwt.DecodeOperatorClaims(a.operatorJWT)
	if err != nil {
		return fmt.Errorf("configure server: operator jwt: %w", err)
	}
	if err := os.MkdirAll(jwtDir, secretfile.DirMode); err != nil {
		return fmt.Errorf("configure server: %w", err)
	}
	res, err := server.NewDirAccResolver(jwtDir, 0, resolverSyncInterval, server.NoDelete)
	if err != nil {
		return fmt.Errorf("configure server: resolver in %s: %w", jwtDir, err)
	}
	stored, err := a.storedRevocations(res)
	if err != nil {
		res.Close()
		return fmt.Errorf("configure server: %w", err)
	}
	jwts, err := a.accountJWTs(stored)
	if err != nil {
		res.Close()
		return fmt.Errorf("configure server: %w", err)
	}
	for _, j := range jwts {
		if err := res.Store(j.Pub, j.JWT); err != nil {
			res.Close()
			return fmt.Errorf("configure server: store account %s: %w", j.Name, err)
		}
	}
	opts.TrustedOperators = []*jwt.OperatorClaims{oc}
	opts.TrustedKeys = nil
	opts.SystemAccount = a.systemPub
	opts.AccountResolver = res
	return nil
}

// AccountClaim is one account's public key and signed JWT.
type AccountClaim struct {
	Name, Pub, JWT string
}

// AccountJWTs signs every account's JWT, the agents' with no revocations:
// what a server configuration preloads.
func (a *Authority) AccountJWTs() ([]AccountClaim, error) { return a.accountJWTs(nil) }

func (a *Authority) accountJWTs(revoked map[string]int64) ([]AccountClaim, error) {
	sys, err := a.SystemAccountJWT()
	if err != nil {
		return nil, err
	}
	app, err := a.AccountJWT()
	if err != nil {
		return nil, err
	}
	agents, err := a.AgentsAccountJWT(revoked)
	if err != nil {
		return nil, err
	}
	return []AccountClaim{
		{SystemAccountName, a.systemPub, sys},
		{AccountName, a.accountPub, app},
		{AgentsAccountName, a.agentsPub, agents},
	}, nil
}

// storedRevocations reads the revocations of the agents' account JWT already in
// the resolver, if there is one this operator signed. A JWT that does not
// decode or was signed by someone else is ignored: it will be replaced.
func (a *Authority) storedRevocations(res *server.DirAccResolver) (map[string]int64, error) {
	theJWT, err := res.LoadAcc(a.agentsPub)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("load stored account: %w", err)
	}
	ac, err := jwt.DecodeAccountClaims(theJWT)
	if err != nil || ac.Issuer != a.operatorPub || ac.Subject != a.agentsPub {
		return nil, nil
	}
	kept := make(map[string]int64, len(ac.Revocations))
	for k, t := range ac.Revocations {
		if nkeys.IsValidPublicUserKey(k) && t > 0 {
			kept[k] = t
		}
	}
	return kept, nil
}

// claimUpdateReply is the server's reply on ClaimsUpdateSubject
// (server.ServerAPIClaimUpdateResponse, minus the server info).
type claimUpdateReply struct {
	Data *struct {
		Account string `json:"account"`
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"data"`
	Error *struct {
		Account     string `json:"account"`
		Code        int    `json:"code"`
		Description string `json:"description"`
	} `json:"error"`
}

// PushAccount sends accountJWT on ClaimsUpdateSubject over sys, a connection
// of a system-account user (SystemCreds), and waits for a server to confirm it
// stored and applied it: users revoked by it are disconnected at once and
// cannot reconnect. A server's error reply is returned as an error. Without a
// deadline on ctx, DefaultPushTimeout applies.
//
// In a cluster every server stores the update; the first reply decides the
// result, and servers that missed it catch up through the resolver's sync.
func PushAccount(ctx context.Context, sys *nats.Conn, accountJWT string) error {
	if sys == nil {
		return errors.New("push account: nil connection")
	}
	ac, err := jwt.DecodeAccountClaims(accountJWT)
	if err != nil {
		return fmt.Errorf("push account: %w", err)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultPushTimeout)
		defer cancel()
	}
	msg, err := sys.RequestWithContext(ctx, ClaimsUpdateSubject, []byte(accountJWT))
	if errors.Is(err, nats.ErrNoResponders) {
		return fmt.Errorf("push account %s: no server answered on %s (is the connection a system account user, and does the server use a resolver that accepts updates?): %w",
			ac.Subject, ClaimsUpdateSubject, err)
	}
	if err != nil {
		return fmt.Errorf("push account %s: %w", ac.Subject, err)
	}
	var reply claimUpdateReply
	if err := json.Unmarshal(msg.Data, &reply); err != nil {
		return fmt.Errorf("push account %s: undecodable reply %q: %w", ac.Subject, truncate(msg.Data, 200), err)
	}
	if e := reply.Error; e != nil {
		return fmt.Errorf("push account %s: server refused the update (%d): %s", ac.Subject, e.Code, e.Description)
	}
	if reply.Data == nil {
		return fmt.Errorf("push account %s: reply carries neither data nor error: %q", ac.Subject, truncate(msg.Data, 200))
	}
	return nil
}

func truncate(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "..."
	}
	return string(b)
}
