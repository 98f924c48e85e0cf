package controlplane

import (
	"cmp"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/outposthq/outpost/controlplane/client"
	"github.com/outposthq/outpost/internal/kvjson"
	"github.com/outposthq/outpost/subjects"
)

// KV buckets, all prefixed "outpost_". Values are JSON so that the nats CLI
// can read them. Secrets are stored only as hashes.
const (
	bucketWorkspaces  = "outpost_workspaces"     // <ws> → workspaceRecord
	bucketAPIKeys     = "outpost_api_keys"       // <hash of key> → keyRecord
	bucketTokens      = "outpost_enroll_tokens"  // <hash of token> → tokenRecord
	bucketAgents      = "outpost_agents"         // <ws>.<agent> → agentRecord
	bucketRevocations = "outpost_revocations"    // <user public key> → revocationRecord
	bucketAgentKeys   = "outpost_agent_keys"     // <user public key> → keyBinding, never deleted
	bucketSessions    = "outpost_sessions"       // <ws>.<session> → routing.State
	bucketClaims      = "outpost_claims"         // <ws>.<agent> → a session's lease on a pool agent
	bucketDevice      = "outpost_device_logins"  // d.<hash of device code> → deviceRecord; u.<hash of user code> → userCodeRecord
	bucketAttach      = "outpost_attach_tickets" // <hash of ticket> → attachTicketRecord, for attachTicketTTL
	bucketLastSeen    = "outpost_last_seen"      // <ws>.<shard> → seenShard (lastseen.go)
	// bucketLinks (links.go): <id> → linkRecord
)

// maxTokenTTL bounds an enrollment token's life; the token bucket forgets
// entries a day after that, so used and expired tokens do not pile up.
const maxTokenTTL = 30 * 24 * time.Hour

type workspaceRecord struct {
	ID        string    `json:"id"`
	CreatedAt time.Time `json:"createdAt"`
	// NoAgentUpdates turns the agents' self-update off.
	NoAgentUpdates bool `json:"noAgentUpdates,omitempty"`
}

func (r *workspaceRecord) api() *client.Workspace {
	return &client.Workspace{ID: r.ID, CreatedAt: r.CreatedAt, AgentUpdates: !r.NoAgentUpdates}
}

type keyRecord struct {
	// ID names the key in the API (see recordID); records made before ids
	// have none.
	ID        string    `json:"id,omitempty"`
	Workspace string    `json:"workspace"`
	CreatedAt time.Time `json:"createdAt"`
	LastUsed  time.Time `json:"lastUsed,omitzero"`
}

type tokenRecord struct {
	ID        string    `json:"id,omitempty"` // as keyRecord's
	Workspace string    `json:"workspace"`
	Agent     string    `json:"agent,omitempty"`
	Pool      string    `json:"pool,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
	ExpiresAt time.Time `json:"expiresAt"`
	Used      bool      `json:"used"`
	UsedAt    time.Time `json:"usedAt,omitzero"`
	UsedBy    string    `json:"usedBy,omitempty"` // the agent id it enrolled
}

type agentRecord struct {
	Workspace  string    `json:"workspace"`
	ID         string    `json:"id"`
	Name       string    `json:"name"`
	Pool       string    `json:"pool,omitempty"`
	PublicKey  string    `json:"publicKey"`
	EnrolledAt time.Time `json:"enrolledAt"`
	Revoked    bool      `json:"revoked,omitempty"`
	RevokedAt  time.Time `json:"revokedAt,omitzero"`
	LastSeen   time.Time `json:"lastSeen,omitzero"`
	// From the latest hello (or the enroll request until one arrives).
	Instance     string          `json:"instance,omitempty"`
	Version      string          `json:"version,omitempty"`
	Protocol     int             `json:"protocol,omitempty"`
	OS           string          `json:"os,omitempty"`
	Arch         string          `json:"arch,omitempty"`
	Hostname     string          `json:"hostname,omitempty"`
	Capabilities map[string]bool `json:"capabilities,omitempty"`
}

func (a *agentRecord) agent() subjects.Agent {
	return subjects.Agent{Workspace: a.Workspace, ID: a.ID}
}

type revocationRecord struct {
	RevokedAt int64  `json:"revokedAt"` // unix seconds
	Workspace string `json:"workspace"`
	Agent     string `json:"agent"`
}

// keyBinding records which agent an enrolled public key belongs to. A key is
// bound once, for good: enrolling it for another agent is refused.
type keyBinding struct {
	Workspace string    `json:"workspace"`
	Agent     string    `json:"agent"`
	BoundAt   time.Time `json:"boundAt"`
}

func (b *keyBinding) agent() subjects.Agent {
	return subjects.Agent{Workspace: b.Workspace, ID: b.Agent}
}

// bucket is what the control plane does with a KV bucket of its own. A
// cachedKV implements each method itself: one added here without a cached
// version does not compile, where it would otherwise read past the cache.
type bucket interface {
	kvjson.KV
	Delete(ctx context.Context, key string, opts ...jetstream.KVDeleteOpt) error
}

// store is the control plane's state in JetStream KV.
type store struct {
	workspaces, apiKeys, agents    bucket // cached: read on every call
	tokens, revocations, agentKeys bucket
	sessions, claims               jetstream.KeyValue // routing's
	device                         bucket             // device logins
	attachTickets                  bucket             // single use, shared by every replica
	links                          bucket             // cached: read on every preview request
	lastSeen                       bucket             // written once a minute, read at start
	// caches mirror the buckets read on every call in memory.
	caches []*cachedKV
}

// cache mirrors kv in memory (see cachedKV) until the store is closed.
func (st *store) cache(kv jetstream.KeyValue) *cachedKV {
	c := newCachedKV(kv)
	st.caches = append(st.caches, c)
	return c
}

// close stops the caches' watches.
func (st *store) close() {
	for _, c := range st.caches {
		c.close()
	}
}

// storeRetry paces retries of bucket creation while JetStream comes up.
const (
	storeRetry = 250 * time.Millisecond
	// storeAttempt bounds one attempt. A restart under a fleet of
	// thousands reconnecting at once keeps nats-server's server lock
	// busy with their connects, and JetStream's requests wait behind it:
	// at 5,000 agents here a consumer create took 24 s, so attempts of 3 s
	// each timed out until the control plane gave up and exited.
	storeAttempt = 10 * time.Second
	// storeReadyFor bounds the retries: JetStream that is not there by
	// then (not enabled, no permission) is a configuration error.
	storeReadyFor = 90 * time.Second
)

// untilReady runs f until it succeeds, for at most storeReadyFor or until
// ctx ends, each attempt bounded by storeAttempt: a cluster that is still
// electing its JetStream leader (all of it starting together) answers with
// errors for a few seconds, and requests that reach no leader go
// unanswered. The error is f's first.
func untilReady(ctx context.Context, f func(context.Context) error) error {
	ctx, stop := context.WithTimeout(ctx, storeReadyFor)
	defer stop()
	var first error
	for {
		attempt, cancel := context.WithTimeout(ctx, storeAttempt)
		err := f(attempt)
		cancel()
		if err == nil {
			return nil
		}
		if first == nil {
			first = err
		}
		select {
		case <-ctx.Done():
			return first
		case <-time.After(storeRetry):
		}
	}
}

func openStore(ctx context.Context, js jetstream.JetStream, replicas int) (*store, error) {
	open := func(bucket, desc string, ttl time.Duration) (jetstream.KeyValue, error) {
		cfg := jetstream.KeyValueConfig{
			Bucket:      bucket,
			Description: desc,
			History:     1,
			TTL:         ttl,
			Storage:     jetstream.FileStorage,
			Replicas:    replicas,
		}
		var kv jetstream.KeyValue
		err := untilReady(ctx, func(ctx context.Context) (err error) {
			kv, err = openBucket(ctx, js, cfg)
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("kv bucket %s (replicas %d): %w", bucket, replicas, err)
		}
		return kv, nil
	}
	var st store
	var workspaces, apiKeys, agents jetstream.KeyValue
	var err error
	if workspaces, err = open(bucketWorkspaces, "outpost workspaces", 0); err != nil {
		return nil, err
	}
	if apiKeys, err = open(bucketAPIKeys, "outpost workspace API keys by hash", 0); err != nil {
		return nil, err
	}
	if st.tokens, err = open(bucketTokens, "outpost enrollment tokens by hash", maxTokenTTL+24*time.Hour); err != nil {
		return nil, err
	}
	if agents, err = open(bucketAgents, "outpost enrolled agents", 0); err != nil {
		return nil, err
	}
	if st.revocations, err = open(bucketRevocations, "outpost revoked agent public keys", 0); err != nil {
		return nil, err
	}
	if st.agentKeys, err = open(bucketAgentKeys, "outpost agent public keys, each bound to one agent", 0); err != nil {
		return nil, err
	}
	if st.sessions, err = open(bucketSessions, "outpost sessions", 0); err != nil {
		return nil, err
	}
	if st.claims, err = open(bucketClaims, "outpost pool agents claimed by sessions", 0); err != nil {
		return nil, err
	}
	if st.device, err = open(bucketDevice, "outpost device logins by hashes of their codes", 2*time.Hour); err != nil {
		return nil, err
	}
	if st.attachTickets, err = open(bucketAttach, "outpost attach tickets by hash, single use", attachTicketTTL); err != nil {
		return nil, err
	}
	if st.lastSeen, err = open(bucketLastSeen, "outpost agents' last seen times, a key per shard of a workspace", 0); err != nil {
		return nil, err
	}
	links, err := open(bucketLinks, "outpost preview links", maxLinkTTL+24*time.Hour)
	if err != nil {
		return nil, err
	}
	st.links = st.cache(links)
	// Every call reads its workspace (and its caller's key) and its agent.
	st.workspaces, st.apiKeys, st.agents = st.cache(workspaces), st.cache(apiKeys), st.cache(agents)
	return &st, nil
}

// openBucket makes bucket as cfg says, or updates it to that, and binds
// it. With more than one replica it makes the bucket's stream itself, with
// direct gets off, so that its reads go to the stream's leader. With direct
// gets, which nats.go's KV turns on, any replica of a replicated stream
// answers a read, and a follower that has not yet applied a write answers
// with the value before it, or "not found" for a key just created: a
// session created or swapped through one control-plane replica was missing
// or stale through the other for a moment. The leader answers a read only
// with what it has applied, and it applies a write before acknowledging it.
//
// Direct gets are never on, not even for a moment: a KeyValue reads with
// direct gets if they were on when it last read its stream's info (every
// Status does, kvjson.List with it), and once they are off no server
// answers them. Made by CreateOrUpdateKeyValue and then turned off, a
// replica starting while another ran cut the other's reads off ("no
// responders") until its next Status.
func openBucket(ctx context.Context, js jetstream.JetStream, cfg jetstream.KeyValueConfig) (jetstream.KeyValue, error) {
	if cfg.Replicas <= 1 {
		return js.CreateOrUpdateKeyValue(ctx, cfg)
	}
	if _, err := js.CreateOrUpdateStream(ctx, kvStreamConfig(cfg)); err != nil {
		return nil, err
	}
	return js.KeyValue(ctx, cfg.Bucket)
}

// kvStreamConfig is the stream CreateOrUpdateKeyValue makes for cfg (as
// nats.go v1.56.0 does, for the fields the control plane sets), with
// direct gets off. TestKVStreamConfig compares the two.
func kvStreamConfig(cfg jetstream.KeyValueConfig) jetstream.StreamConfig {
	duplicates := 2 * time.Minute
	if cfg.TTL > 0 && cfg.TTL < duplicates {
		duplicates = cfg.TTL
	}
	return jetstream.StreamConfig{
		Name:              "KV_" + cfg.Bucket,
		Description:       cfg.Description,
		Subjects:          []string{"$KV." + cfg.Bucket + ".>"},
		MaxMsgsPerSubject: int64(max(cfg.History, 1)),
		MaxBytes:          cmp.Or(cfg.MaxBytes, -1),
		MaxAge:            cfg.TTL,
		MaxMsgSize:        cmp.Or(cfg.MaxValueSize, -1),
		Storage:           cfg.Storage,
		Replicas:          cfg.Replicas,
		AllowRollup:       true,
		DenyDelete:        true,
		Duplicates:        duplicates,
		MaxMsgs:           -1,
		MaxConsumers:      -1,
		Discard:           jetstream.DiscardNew,
	}
}

// hashKey makes a secret's hash usable as a KV key.
func hashKey(hash string) string {
	for i := 0; i < len(hash); i++ {
		c := hash[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return "x" + hex.EncodeToString([]byte(hash))
		}
	}
	return hash
}

func agentKey(ag subjects.Agent) string { return ag.Workspace + "." + ag.ID }

// revocations returns every revoked public key with its time, the input of
// the account JWT.
func (st *store) revokedKeys(ctx context.Context) (map[string]int64, error) {
	out := map[string]int64{}
	err := kvjson.List(ctx, st.revocations, ">", func(key string, _ uint64, r *revocationRecord) {
		out[key] = r.RevokedAt
	})
	return out, err
}

// agentRecords lists the agents of ws, revoked ones included, sorted by id.
func (st *store) agentRecords(ctx context.Context, ws string) ([]*agentRecord, error) {
	var out []*agentRecord
	err := kvjson.List(ctx, st.agents, ws+".*", func(_ string, _ uint64, a *agentRecord) { out = append(out, a) })
	if err != nil {
		return nil, err
	}
	sortAgents(out)
	return out, nil
}

func sortAgents(as []*agentRecord) {
	slices.SortFunc(as, func(a, b *agentRecord) int {
		return cmp.Or(strings.Compare(a.Workspace, b.Workspace), strings.Compare(a.ID, b.ID))
	})
}

func isRevisionMismatch(err error) bool { return errors.Is(err, jetstream.ErrKeyRevisionMismatch) }
