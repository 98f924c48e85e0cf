package client

import (
	"cmp"
	"fmt"
	"net/http"
	"net/url"
	"os"
)

// Environment variables NewFromEnv reads (the CLI reads the same).
const (
	EnvURL       = "OUTPOST_URL"
	EnvToken     = "OUTPOST_TOKEN"
	EnvWorkspace = "OUTPOST_WORKSPACE"
	EnvCAFile    = "OUTPOST_CA_FILE"
)

// Defaults of a Config.
const (
	DefaultURL       = "http://127.0.0.1:7070"
	DefaultWorkspace = "default"
)

// Option configures a Client made by New or Config.New.
type Option func(*Client)

// WithWorkspace makes ws the client's default workspace: every method given
// "" for its workspace uses it.
func WithWorkspace(ws string) Option { return func(c *Client) { c.Workspace = ws } }

// WithHTTPClient makes the client send its requests with hc.
func WithHTTPClient(hc *http.Client) Option { return func(c *Client) { c.HTTP = hc } }

// Config is where a client connects and as whom: what NewFromEnv reads from
// the environment, and what a stored CLI context can hold, so that both make
// their client the same way (Config.New).
type Config struct {
	// URL of the control plane; default DefaultURL.
	URL string
	// Token is the admin token or a workspace key; required.
	Token string
	// Workspace is the default workspace; default DefaultWorkspace.
	Workspace string
	// CAFile is a PEM file of CA certificates to trust for the control
	// plane's HTTPS (see TrustingCA); empty trusts the system's roots.
	CAFile string
}

// ConfigFromEnv reads OUTPOST_URL, OUTPOST_TOKEN, OUTPOST_WORKSPACE and
// OUTPOST_CA_FILE.
func ConfigFromEnv() Config {
	return Config{
		URL: os.Getenv(EnvURL), Token: os.Getenv(EnvToken),
		Workspace: os.Getenv(EnvWorkspace), CAFile: os.Getenv(EnvCAFile),
	}
}

// New returns the client cfg describes, with defaults for what it leaves
// empty, then opts applied. A missing token, a URL that is not http(s) and
// an unreadable CA file are errors; the token never appears in one.
func (cfg Config) New(opts ...Option) (*Client, error) {
	if cfg.Token == "" {
		return nil, fmt.Errorf("no token: set %s", EnvToken)
	}
	raw := cmp.Or(cfg.URL, DefaultURL)
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("control plane URL %q: want http://host:port or https://host:port", raw)
	}
	base := []Option{WithWorkspace(cmp.Or(cfg.Workspace, DefaultWorkspace))}
	if cfg.CAFile != "" {
		hc, err := TrustingCA(cfg.CAFile)
		if err != nil {
			return nil, err
		}
		base = append(base, WithHTTPClient(hc))
	}
	return New(raw, cfg.Token, append(base, opts...)...), nil
}

// NewFromEnv returns a client configured by the environment
// (ConfigFromEnv), then opts.
func NewFromEnv(opts ...Option) (*Client, error) {
	return ConfigFromEnv().New(opts...)
}

// wsPath is the path of workspace ws, the client's default one when ws is
// empty.
func (c *Client) wsPath(ws string) string {
	return "/v1/workspaces/" + url.PathEscape(cmp.Or(ws, c.Workspace))
}
