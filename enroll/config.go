package enroll

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/outposthq/outpost/subjects"

	"github.com/outposthq/outpost/internal/secretfile"
)

// maxConfigSize bounds the config file LoadConfig reads.
const maxConfigSize = 1 << 20

// Config is what an enrolled agent keeps on disk: who it is, where to
// connect, and its credentials. Seed is the agent's private nkey; the file
// holding a Config is mode 0600 and the seed goes nowhere else.
type Config struct {
	URL       string   `json:"url"`            // the control plane's base URL it enrolled with
	Workspace string   `json:"workspace"`      // required
	Agent     string   `json:"agent"`          // required
	Pool      string   `json:"pool,omitempty"` // empty: not in a pool
	NATSURLs  []string `json:"natsUrls"`       // required, at least one
	JWT       string   `json:"jwt"`            // user JWT issued for Seed's public key
	Seed      string   `json:"seed"`           // nkey user seed ("SU...")
	// CA is the control plane's CA (PEM), pinned at enrollment: the agent's
	// TLS connections trust it and nothing else. Empty: the system's roots.
	CA string `json:"ca,omitempty"`
}

// String describes c for logs without its credentials.
func (c *Config) String() string {
	if c == nil {
		return "<nil>"
	}
	return fmt.Sprintf("agent %s/%s (pool %q) via %s, nats %v", c.Workspace, c.Agent, c.Pool, c.URL, c.NATSURLs)
}

// GoString keeps %#v from printing the seed.
func (c *Config) GoString() string { return "enroll.Config{" + c.String() + "}" }

// AgentID is the agent's identity.
func (c *Config) AgentID() subjects.Agent {
	return subjects.Agent{Workspace: c.Workspace, ID: c.Agent}
}

// Validate checks that c is complete and consistent: valid ids, at least one
// NATS URL, a user seed, and a JWT issued to that seed's public key.
func (c *Config) Validate() error {
	if err := c.AgentID().Validate(); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	if c.Pool != "" {
		if err := subjects.ValidateID(c.Pool); err != nil {
			return fmt.Errorf("config: pool: %w", err)
		}
	}
	if len(c.NATSURLs) == 0 {
		return errors.New("config: no natsUrls")
	}
	for _, u := range c.NATSURLs {
		if strings.TrimSpace(u) == "" || strings.ContainsAny(u, ", \t\n") {
			return fmt.Errorf("config: bad nats url %q", u)
		}
	}
	kp, err := nkeys.FromSeed([]byte(c.Seed))
	if err != nil {
		return fmt.Errorf("config: seed: %w", err)
	}
	defer kp.Wipe()
	pub, err := kp.PublicKey()
	if err != nil {
		return fmt.Errorf("config: seed: %w", err)
	}
	if !nkeys.IsValidPublicUserKey(pub) {
		return errors.New("config: seed is not a user seed")
	}
	uc, err := jwt.DecodeUserClaims(c.JWT)
	if err != nil {
		return fmt.Errorf("config: jwt: %w", err)
	}
	if _, err := c.CAPool(); err != nil {
		return err
	}
	if uc.Subject != pub {
		return fmt.Errorf("config: jwt was issued to %s, not to this seed's key %s", uc.Subject, pub)
	}
	return nil
}

// Save validates c and writes it to path as JSON, atomically (a temp file in
// the same directory, then a rename) with mode 0600, also when path existed
// with a looser mode.
func (c *Config) Save(path string) error {
	if err := c.Validate(); err != nil {
		return err
	}
	data, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	data = append(data, '\n')
	defer wipe(data)
	return secretfile.WriteAtomic(path, data)
}

// LoadConfig reads and validates the config at path. On unix it refuses a
// file that group or others can access (ErrInsecureFile), saying to chmod 600
// it.
func LoadConfig(path string) (*Config, error) {
	data, err := secretfile.Read(path, maxConfigSize)
	if err != nil {
		return nil, fmt.Errorf("load config: %w", err)
	}
	defer wipe(data)
	var c Config
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("load config %s: %w", path, err)
	}
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("load config %s: %w", filepath.Clean(path), err)
	}
	return &c, nil
}

// NATSServers is NATSURLs joined for nats.Connect.
func (c *Config) NATSServers() string { return strings.Join(c.NATSURLs, ",") }

// NATSOptions are the options that authenticate as this agent: its JWT, a
// callback signing the server's nonce with the seed held in memory, and,
// when the config pins a CA, TLS that trusts only it. They add nothing else (reconnect policy, name, handlers are the caller's). An invalid
// seed makes nats.Connect fail with the reason.
func (c *Config) NATSOptions() []nats.Option {
	fail := func(err error) []nats.Option {
		return []nats.Option{func(*nats.Options) error { return err }}
	}
	opt, err := jwtAuth(c.JWT, c.Seed)
	if err != nil {
		return fail(fmt.Errorf("agent credentials: %w", err))
	}
	tc, err := c.TLSConfig()
	if err != nil {
		return fail(err)
	}
	if tc == nil {
		return []nats.Option{opt}
	}
	return []nats.Option{opt, nats.Secure(tc)}
}
