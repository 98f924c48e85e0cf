package enroll

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nkeys"

	"github.com/outposthq/outpost/subjects"
	"github.com/outposthq/outpost/wire"
)

// EnrollPath is the control plane's enrollment endpoint, relative to its base
// URL.
const EnrollPath = "/v1/enroll"

// DefaultEnrollTimeout bounds Enroll when its ctx has no deadline.
const DefaultEnrollTimeout = 30 * time.Second

// maxResponseSize bounds the enrollment response body read.
const maxResponseSize = 1 << 20

// Request is the body of POST /v1/enroll. It carries the agent's public key
// only; the seed never leaves the agent's machine.
type Request struct {
	Token     string `json:"token"`
	PublicKey string `json:"publicKey"`
	Name      string `json:"name,omitempty"`
	Hostname  string `json:"hostname,omitempty"`
	OS        string `json:"os,omitempty"`
	Arch      string `json:"arch,omitempty"`
}

// Response is the 200 body of POST /v1/enroll.
type Response struct {
	Workspace string   `json:"workspace"`
	Agent     string   `json:"agent"`
	Pool      string   `json:"pool,omitempty"`
	JWT       string   `json:"jwt"`
	NATSURLs  []string `json:"natsUrls"`
}

// DecodeResponse parses and validates an enrollment response body: valid
// workspace, agent and (if any) pool ids, a decodable user JWT, and at least
// one NATS URL. It does not check whom the JWT was issued to; Enroll does.
func DecodeResponse(data []byte) (*Response, error) {
	var r Response
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("enroll response: %w", err)
	}
	if err := (subjects.Agent{Workspace: r.Workspace, ID: r.Agent}).Validate(); err != nil {
		return nil, fmt.Errorf("enroll response: %w", err)
	}
	if r.Pool != "" {
		if err := subjects.ValidateID(r.Pool); err != nil {
			return nil, fmt.Errorf("enroll response: pool: %w", err)
		}
	}
	if _, err := jwt.DecodeUserClaims(r.JWT); err != nil {
		return nil, fmt.Errorf("enroll response: jwt: %w", err)
	}
	if len(r.NATSURLs) == 0 {
		return nil, errors.New("enroll response: no natsUrls")
	}
	for _, u := range r.NATSURLs {
		if err := checkNATSURL(u); err != nil {
			return nil, fmt.Errorf("enroll response: %w", err)
		}
	}
	return &r, nil
}

func checkNATSURL(s string) error {
	if s == "" || strings.ContainsAny(s, ", \t\r\n") {
		return fmt.Errorf("bad nats url %q", s)
	}
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("bad nats url %q: %w", s, err)
	}
	switch u.Scheme {
	case "nats", "tls", "ws", "wss":
	default:
		return fmt.Errorf("bad nats url %q: scheme %q, want nats, tls, ws or wss", s, u.Scheme)
	}
	if u.Host == "" {
		return fmt.Errorf("bad nats url %q: no host", s)
	}
	return nil
}

// Enroll enrolls this machine with the control plane at baseURL using a
// single-use token. It makes the agent's nkey user key pair here, sends only
// the public key (with name, hostname, OS and arch), checks that the JWT it
// gets back was issued to that key, and returns the Config, seed included, for
// the caller to Save. Without a deadline on ctx, DefaultEnrollTimeout applies.
//
// An error response from the control plane is returned as a *wire.Error with
// its code (wire.ErrUnauthenticated for an unknown, expired or used token).
// Redirects are refused, so the token is only ever sent to baseURL. The
// control plane is reached through the proxy the environment names
// (HTTPS_PROXY, NO_PROXY), or the one WithProxy picks. WithCAPin pins its CA.
func Enroll(ctx context.Context, baseURL, token, name string, opts ...EnrollOption) (*Config, error) {
	base := strings.TrimRight(baseURL, "/")
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("enroll: bad url %q: want http(s)://host[:port]", baseURL)
	}
	if token == "" {
		return nil, errors.New("enroll: empty token")
	}
	o, err := newEnrollOptions(opts)
	if err != nil {
		return nil, err
	}
	var p *pin
	var tc *tls.Config
	if o.caSHA256 != "" {
		if u.Scheme != "https" {
			return nil, fmt.Errorf("enroll: --ca-sha256 needs an https URL, not %s", u.Redacted())
		}
		if p, err = newPin(o.caSHA256); err != nil {
			return nil, fmt.Errorf("enroll: %w", err)
		}
		tc = p.tlsConfig(u.Hostname())
	}
	kp, err := nkeys.CreateUser()
	if err != nil {
		return nil, fmt.Errorf("enroll: make key pair: %w", err)
	}
	defer kp.Wipe()
	pub, err := kp.PublicKey()
	if err != nil {
		return nil, fmt.Errorf("enroll: %w", err)
	}
	host, _ := os.Hostname()
	body, err := json.Marshal(Request{
		Token:     token,
		PublicKey: pub,
		Name:      name,
		Hostname:  host,
		OS:        runtime.GOOS,
		Arch:      runtime.GOARCH,
	})
	if err != nil {
		return nil, fmt.Errorf("enroll: %w", err)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultEnrollTimeout)
		defer cancel()
	}
	hc := o.httpClient(tc)
	defer hc.CloseIdleConnections()
	resp, err := post(ctx, hc, base+EnrollPath, body)
	if err != nil {
		return nil, err
	}
	seed, err := kp.Seed() // kp's own buffer, wiped with kp
	if err != nil {
		return nil, fmt.Errorf("enroll: %w", err)
	}
	uc, err := jwt.DecodeUserClaims(resp.JWT)
	if err != nil {
		return nil, fmt.Errorf("enroll: jwt: %w", err)
	}
	if uc.Subject != pub {
		return nil, fmt.Errorf("enroll: the control plane issued a jwt for %s, not for this agent's key %s", uc.Subject, pub)
	}
	c := &Config{
		URL:       base,
		Workspace: resp.Workspace,
		Agent:     resp.Agent,
		Pool:      resp.Pool,
		NATSURLs:  resp.NATSURLs,
		JWT:       resp.JWT,
		Seed:      string(seed),
	}
	if p != nil {
		c.CA = caPEM(p.ca)
	}
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("enroll: %w", err)
	}
	return c, nil
}

func post(ctx context.Context, hc *http.Client, endpoint string, body []byte) (*Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("enroll: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	res, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("enroll: POST %s: %w", endpoint, err)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(io.LimitReader(res.Body, maxResponseSize+1))
	if err != nil {
		return nil, fmt.Errorf("enroll: POST %s: read response: %w", endpoint, err)
	}
	if len(data) > maxResponseSize {
		return nil, fmt.Errorf("enroll: POST %s: response over %d bytes", endpoint, maxResponseSize)
	}
	if res.StatusCode != http.StatusOK {
		return nil, decodeHTTPError(res.StatusCode, data)
	}
	r, err := DecodeResponse(data)
	if err != nil {
		return nil, fmt.Errorf("enroll: POST %s: %w", endpoint, err)
	}
	return r, nil
}

// decodeHTTPError turns an error response into a *wire.Error: the body's
// {"error":{...}} when there is one, else an error of the status's code.
func decodeHTTPError(status int, body []byte) *wire.Error {
	var env struct {
		Error *wire.Error `json:"error"`
	}
	if err := json.Unmarshal(body, &env); err == nil && env.Error != nil && env.Error.Code != "" {
		return env.Error
	}
	msg := strings.TrimSpace(truncate(body, 200))
	if msg == "" {
		msg = http.StatusText(status)
	}
	return wire.Errorf(wire.CodeForStatus(status), "", "enroll: HTTP %d: %s", status, msg)
}
