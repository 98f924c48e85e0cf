// Package client is the Go SDK of the Outpost control plane's HTTP API
// (API.md). It owns the API's JSON types; the control plane imports them,
// and where a body is the same on HTTP and on the agent wire the type is
// the wire's (an alias here: one type per shape).
//
// NewFromEnv makes a client from OUTPOST_URL, OUTPOST_TOKEN,
// OUTPOST_WORKSPACE and OUTPOST_CA_FILE; a workspace argument given as ""
// means the client's default workspace. Run streams a command's output and
// returns its exit code. Package outposttest runs a control plane and a mock
// or real agent in-process for a program's tests.
//
// Every error the server returns comes back as a *wire.Error decoded from the
// response body, so errors.Is(err, wire.ErrNotFound) and friends work.
package client

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"

	"github.com/outposthq/outpost/wire"
)

// Client calls one control plane with one token (the admin token or a
// workspace key). The zero HTTP uses a client shared by the package: a
// clone of http.DefaultTransport (so the HTTP proxy the environment names,
// HTTPS_PROXY, HTTP_PROXY, NO_PROXY, never for loopback, and net/http's
// timeouts) that keeps up to MaxIdleConnsPerHost idle connections to a
// host where net/http keeps two. An HTTP of its own keeps the proxy when
// its transport has Proxy set, as http.DefaultTransport's Clone has.
type Client struct {
	BaseURL string
	Token   string
	// Workspace is the workspace a method given "" for its workspace uses
	// (see WithWorkspace); empty, such a call names no workspace and fails.
	Workspace string
	HTTP      *http.Client
}

// New returns a client of the control plane at baseURL (e.g.
// "http://127.0.0.1:7070") authenticating with token, configured by opts.
func New(baseURL, token string, opts ...Option) *Client {
	c := &Client{BaseURL: strings.TrimRight(baseURL, "/"), Token: token}
	for _, opt := range opts {
		opt(c)
	}
	return c
}

// Health calls GET /healthz.
func (c *Client) Health(ctx context.Context) (*Health, error) {
	var out Health
	return &out, c.do(ctx, http.MethodGet, "/healthz", nil, &out)
}

// CreateWorkspace calls POST /v1/workspaces (admin). An existing id is a
// conflict.
func (c *Client) CreateWorkspace(ctx context.Context, id string) (*Workspace, error) {
	var out Workspace
	return &out, c.do(ctx, http.MethodPost, "/v1/workspaces", CreateWorkspaceRequest{ID: id}, &out)
}

// GetWorkspace calls GET /v1/workspaces/{ws}.
func (c *Client) GetWorkspace(ctx context.Context, ws string) (*Workspace, error) {
	var out Workspace
	return &out, c.do(ctx, http.MethodGet, c.wsPath(ws), nil, &out)
}

// CreateKey calls POST /v1/workspaces/{ws}/keys (admin) and returns the new
// workspace key's token, shown only this once. CreateKeyWithID returns its
// id too.
func (c *Client) CreateKey(ctx context.Context, ws string) (string, error) {
	k, err := c.CreateKeyWithID(ctx, ws)
	if err != nil {
		return "", err
	}
	return k.Token, nil
}

// CreateEnrollmentToken calls POST /v1/workspaces/{ws}/enrollment-tokens.
func (c *Client) CreateEnrollmentToken(ctx context.Context, ws string, req EnrollmentTokenRequest) (*EnrollmentToken, error) {
	var out EnrollmentToken
	return &out, c.do(ctx, http.MethodPost, c.tokensPath(ws), req, &out)
}

// ListAgents calls GET /v1/workspaces/{ws}/agents.
func (c *Client) ListAgents(ctx context.Context, ws string) ([]Agent, error) {
	var out AgentList
	if err := c.do(ctx, http.MethodGet, c.wsPath(ws)+"/agents", nil, &out); err != nil {
		return nil, err
	}
	return out.Agents, nil
}

// GetAgent calls GET /v1/workspaces/{ws}/agents/{agent}.
func (c *Client) GetAgent(ctx context.Context, ws, agent string) (*Agent, error) {
	var out Agent
	return &out, c.do(ctx, http.MethodGet, c.agentPath(ws, agent), nil, &out)
}

// RevokeAgent calls DELETE /v1/workspaces/{ws}/agents/{agent}: the agent's
// credentials stop working and its connection is closed.
func (c *Client) RevokeAgent(ctx context.Context, ws, agent string) error {
	return c.do(ctx, http.MethodDelete, c.agentPath(ws, agent), nil, nil)
}

func (c *Client) agentPath(ws, agent string) string {
	return c.wsPath(ws) + "/agents/" + url.PathEscape(agent)
}

// Target is where target operations (exec, and later processes, files, git)
// go: one agent, or a session's active backend.
type Target struct {
	c      *Client
	prefix string
}

// Agent is the target of one enrolled agent of workspace ws ("" for the
// client's default).
func (c *Client) Agent(ws, agent string) *Target {
	return &Target{c: c, prefix: c.agentPath(ws, agent)}
}

// Exec calls POST {target}/exec and returns the output as UTF-8 text.
func (t *Target) Exec(ctx context.Context, req ExecRequest) (*ExecResult, error) {
	var out ExecResult
	return &out, t.c.do(ctx, http.MethodPost, t.prefix+"/exec", req, &out)
}

// ExecBytes calls POST {target}/exec?encoding=base64 and returns the exact
// bytes of each stream in Stdout and Stderr.
func (t *Target) ExecBytes(ctx context.Context, req ExecRequest) (*ExecResult, error) {
	var res wire.ExecResult // its JSON is the base64 body
	if err := t.c.do(ctx, http.MethodPost, t.prefix+"/exec?encoding=base64", req, &res); err != nil {
		return nil, err
	}
	return &ExecResult{
		ExitCode: res.ExitCode, Stdout: string(res.Stdout), Stderr: string(res.Stderr),
		TimedOut: res.TimedOut, Truncated: res.Truncated, DurationMs: res.DurationMs,
	}, nil
}

// maxErrorBody bounds how much of an error response is read.
const maxErrorBody = 64 << 10

// send adds the token and the context's headers to req, sends it and
// records the route the response reports.
func (c *Client) send(ctx context.Context, req *http.Request) (*http.Response, error) {
	setContextHeaders(ctx, req)
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	resp, err := c.HTTPClient().Do(req)
	if err != nil {
		return nil, err
	}
	recordRoute(ctx, resp)
	return resp, nil
}

// do sends a JSON request (in may be nil) and decodes a JSON response into out
// (may be nil). A status >= 400 becomes a *wire.Error.
func (c *Client) do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("encode request: %w", err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.BaseURL+path, body)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.send(ctx, req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 400 {
		return decodeError(resp)
	}
	if out == nil || resp.StatusCode == http.StatusNoContent {
		drain(resp)
		return nil
	}
	if err := decodeJSON(resp, out); err != nil {
		return fmt.Errorf("%s %s: decode response: %w", method, path, err)
	}
	return nil
}

// maxDrain is how much of a body drain reads to reach its end; past it
// the connection is let go.
const maxDrain = 64 << 10

// drain reads what is left of resp's body, up to maxDrain: net/http
// reuses a connection only when its body was read to the end, and closes
// it when the body is closed before.
func drain(resp *http.Response) {
	_, _ = io.CopyN(io.Discard, resp.Body, maxDrain)
}

// decodeJSON decodes resp's JSON body into out, then drains what follows
// the value (the encoder's newline, or a last chunk that came apart from
// it).
func decodeJSON(resp *http.Response, out any) error {
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return err
	}
	drain(resp)
	return nil
}

// decodeError turns an error response into a *wire.Error: the body's when it
// has one, else one made from the status.
func decodeError(resp *http.Response) error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	var eb ErrorBody
	if json.Unmarshal(b, &eb) == nil && eb.Error != nil && eb.Error.Code != "" {
		return eb.Error.Err()
	}
	code := wire.CodeForStatus(resp.StatusCode)
	msg := strings.TrimSpace(string(b))
	if msg == "" {
		msg = resp.Status
	}
	return &wire.Error{Code: code, Message: msg, Retryable: code == wire.CodeUnavailable}
}

// MaxIdleConnsPerHost is how many idle connections to the control plane
// the package's transports keep (the default client's and TrustingCA's).
// Every call goes to one host, and with net/http's default of two, calls
// in flight beyond two each opened a connection (over HTTPS, a TLS
// handshake on both sides) and closed it after: 16 goroutines calling in
// a loop, 1 ms between calls, opened 171–257 connections in 400 calls
// once the first 80 had opened theirs; 0–7 with this (clientpool_test.go).
const MaxIdleConnsPerHost = 64

// defaultHTTP is the client of a Client without HTTP, made at first use;
// net/http's default client when http.DefaultTransport was replaced by one
// that is not an *http.Transport.
var defaultHTTP = sync.OnceValue(func() *http.Client {
	t, ok := pooledDefault()
	if !ok {
		return http.DefaultClient
	}
	return &http.Client{Transport: t}
})

// pooledDefault is a clone of http.DefaultTransport as it is now (its
// proxy from the environment, its timeouts) keeping MaxIdleConnsPerHost
// idle connections to a host; ok is false, and the transport net/http's
// defaults with the environment's proxy, when http.DefaultTransport is not
// an *http.Transport.
func pooledDefault() (t *http.Transport, ok bool) {
	if dt, isT := http.DefaultTransport.(*http.Transport); isT {
		t, ok = dt.Clone(), true
	} else {
		t = &http.Transport{Proxy: http.ProxyFromEnvironment}
	}
	t.MaxIdleConnsPerHost = MaxIdleConnsPerHost
	if t.MaxIdleConns != 0 {
		t.MaxIdleConns = max(t.MaxIdleConns, MaxIdleConnsPerHost)
	}
	return t, ok
}

// TrustingCA returns an HTTP client that trusts the CA certificates in
// caFile (PEM) for the control plane's HTTPS, as `serve --tls-self-signed`
// makes them (OUTPOST_CA_FILE); proxies come from the environment as with
// net/http's default transport, and it keeps MaxIdleConnsPerHost idle
// connections.
func TrustingCA(caFile string) (*http.Client, error) {
	pemBytes, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("ca file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pemBytes) {
		return nil, fmt.Errorf("ca file %s: no PEM certificate in it", caFile)
	}
	t, _ := pooledDefault()
	t.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	return &http.Client{Transport: t}, nil
}

// PatchWorkspace calls PATCH /v1/workspaces/{ws}: it changes the settings
// p names and returns the workspace.
func (c *Client) PatchWorkspace(ctx context.Context, ws string, p WorkspacePatch) (*Workspace, error) {
	var out Workspace
	return &out, c.do(ctx, http.MethodPatch, c.wsPath(ws), p, &out)
}
