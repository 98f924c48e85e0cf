package enroll

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nkeys"

	"github.com/outposthq/outpost/wire"
)

// DeviceLoginPrompt is what a device login shows the person at the machine
// while it waits: the code to approve and where, and the fingerprint of
// the CA this machine is talking to (empty: publicly trusted), which the
// approver sees too.
type DeviceLoginPrompt struct {
	Code     *DeviceCode
	CASHA256 string
	// Trusted is true when the CA was pinned with WithCAPin rather than
	// taken on first use.
	Trusted bool
}

// DeviceLogin enrolls this machine by device login: it makes the agent's
// key pair here, asks the control plane at baseURL for a device code,
// calls prompt with it, and polls at the interval given (longer after a
// slow_down) until the code is approved, denied or expired. It returns the
// Config, seed included, for the caller to Save.
//
// With WithCAPin the control plane's CA must match the pin before anything
// is sent. Without it, a chain the system's roots do not trust is accepted
// on first use when it ends in a self-signed CA: that CA is pinned for the
// rest of the login and kept in the Config, and its fingerprint goes to
// prompt so the person can compare it with the one the approver sees.
func DeviceLogin(ctx context.Context, baseURL, name string, prompt func(DeviceLoginPrompt), opts ...EnrollOption) (*Config, error) {
	base := strings.TrimRight(baseURL, "/")
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("device login: bad url %q: want http(s)://host[:port]", baseURL)
	}
	o, err := newEnrollOptions(opts)
	if err != nil {
		return nil, err
	}
	var tr *trust
	var tc *tls.Config
	if u.Scheme == "https" {
		if tr, err = newTrust(o.caSHA256); err != nil {
			return nil, fmt.Errorf("device login: %w", err)
		}
		tc = tr.tlsConfig(u.Hostname())
	} else if o.caSHA256 != "" {
		return nil, fmt.Errorf("device login: --ca-sha256 needs an https URL, not %s", u.Redacted())
	}
	kp, err := nkeys.CreateUser()
	if err != nil {
		return nil, fmt.Errorf("device login: make key pair: %w", err)
	}
	defer kp.Wipe()
	pub, err := kp.PublicKey()
	if err != nil {
		return nil, fmt.Errorf("device login: %w", err)
	}
	host, _ := os.Hostname()
	hc := o.httpClient(tc)
	defer hc.CloseIdleConnections()

	data, err := postJSON(ctx, hc, base+DeviceCodePath, DeviceCodeRequest{PublicKey: pub, Name: name, Hostname: host, OS: runtime.GOOS, Arch: runtime.GOARCH})
	if err != nil {
		return nil, fmt.Errorf("device login: %w", err)
	}
	var dc DeviceCode
	if err := json.Unmarshal(data, &dc); err != nil || dc.DeviceCode == "" || dc.UserCode == "" {
		return nil, fmt.Errorf("device login: bad device code response: %v", err)
	}
	p := DeviceLoginPrompt{Code: &dc}
	if tr != nil {
		p.CASHA256, p.Trusted = tr.fingerprint(), o.caSHA256 != ""
		if dc.CASHA256 != "" && p.CASHA256 != "" && !strings.EqualFold(dc.CASHA256, p.CASHA256) {
			return nil, fmt.Errorf("device login: the control plane says its CA is %s but served %s: %w", dc.CASHA256, p.CASHA256, ErrCAMismatch)
		}
	}
	prompt(p)
	resp, err := pollDeviceToken(ctx, hc, base, &dc)
	if err != nil {
		return nil, err
	}
	seed, err := kp.Seed()
	if err != nil {
		return nil, fmt.Errorf("device login: %w", err)
	}
	uc, err := jwt.DecodeUserClaims(resp.JWT)
	if err != nil {
		return nil, fmt.Errorf("device login: jwt: %w", err)
	}
	if uc.Subject != pub {
		return nil, fmt.Errorf("device login: the control plane issued a jwt for %s, not for this agent's key %s", uc.Subject, pub)
	}
	c := &Config{URL: base, Workspace: resp.Workspace, Agent: resp.Agent, Pool: resp.Pool,
		NATSURLs: resp.NATSURLs, JWT: resp.JWT, Seed: string(seed)}
	if tr != nil && tr.ca() != nil {
		c.CA = caPEM(tr.ca())
	}
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("device login: %w", err)
	}
	return c, nil
}

// pollDeviceToken polls until the code is approved (the enrollment
// response), denied, or expired. A network error is retried at the
// interval until the code's expiry; a slow_down adds 5 s to the interval.
func pollDeviceToken(ctx context.Context, hc *http.Client, base string, dc *DeviceCode) (*Response, error) {
	interval := time.Duration(max(dc.Interval, 1)) * time.Second
	expires := time.Now().Add(time.Duration(dc.ExpiresIn) * time.Second)
	for {
		if err := sleepCtx(ctx, interval); err != nil {
			return nil, fmt.Errorf("device login: %w", err)
		}
		data, err := postJSON(ctx, hc, base+DeviceTokenPath, DeviceTokenRequest{DeviceCode: dc.DeviceCode})
		if err == nil {
			resp, err := DecodeResponse(data)
			if err != nil {
				return nil, fmt.Errorf("device login: %w", err)
			}
			return resp, nil
		}
		var we *wire.Error
		switch {
		case errors.As(err, &we) && we.Reason == wire.ReasonAuthorizationPending:
		case errors.As(err, &we) && we.Reason == wire.ReasonSlowDown:
			interval += 5 * time.Second
		case errors.As(err, &we) && we.Reason == wire.ReasonAccessDenied:
			return nil, fmt.Errorf("device login: the code %s was denied", dc.UserCode)
		case errors.As(err, &we) && we.Reason == wire.ReasonExpiredToken:
			return nil, fmt.Errorf("device login: the code %s expired before it was approved; run the login again", dc.UserCode)
		case errors.As(err, &we):
			return nil, fmt.Errorf("device login: %w", err)
		case ctx.Err() != nil:
			return nil, fmt.Errorf("device login: %w", ctx.Err())
		case time.Now().After(expires):
			return nil, fmt.Errorf("device login: %w", err)
		}
	}
}

// trust is the TLS trust of a device login: a pin given up front, or,
// without one, the system's roots, or else the self-signed CA ending the
// first chain served (trust on first use), pinned from then on.
type trust struct {
	mu   sync.Mutex
	pin  *pin // nil until pinned
	seen string
}

func newTrust(hexSHA string) (*trust, error) {
	if hexSHA == "" {
		return &trust{}, nil
	}
	p, err := newPin(hexSHA)
	if err != nil {
		return nil, err
	}
	return &trust{pin: p}, nil
}

func (t *trust) tlsConfig(serverName string) *tls.Config {
	return &tls.Config{
		MinVersion:         tls.VersionTLS12,
		InsecureSkipVerify: true, // replaced by VerifyConnection
		VerifyConnection: func(cs tls.ConnectionState) error {
			return t.verify(cs.PeerCertificates, serverName)
		},
	}
}

func (t *trust) verify(chain []*x509.Certificate, serverName string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.pin != nil {
		return t.pin.verify(chain, serverName)
	}
	if len(chain) == 0 {
		return errors.New("no certificate served")
	}
	inter := x509.NewCertPool()
	for _, c := range chain[1:] {
		inter.AddCert(c)
	}
	if _, err := chain[0].Verify(x509.VerifyOptions{Intermediates: inter, DNSName: serverName}); err == nil {
		return nil
	}
	ca := chain[len(chain)-1]
	if !ca.IsCA || ca.CheckSignatureFrom(ca) != nil {
		return fmt.Errorf("the control plane's certificate is not trusted here and its chain ends in no CA of its own: log in with --ca-sha256 (from the control plane's operator)")
	}
	sum := sha256.Sum256(ca.Raw)
	p := &pin{sha256: hex.EncodeToString(sum[:])}
	if err := p.verify(chain, serverName); err != nil {
		return err
	}
	t.pin = p
	return nil
}

// fingerprint is the pinned CA's hex SHA-256, empty when the system's
// roots are trusted.
func (t *trust) fingerprint() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.pin == nil {
		return ""
	}
	return t.pin.sha256
}

// ca is the pinned CA certificate, nil when none.
func (t *trust) ca() *x509.Certificate {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.pin == nil {
		return nil
	}
	return t.pin.ca
}
