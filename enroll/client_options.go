package enroll

import (
	"crypto/tls"
	"fmt"
	"net/http"
	"net/url"

	"github.com/outposthq/outpost/proxy"
)

// EnrollOption configures Enroll.
type EnrollOption func(*enrollOptions) error

type enrollOptions struct {
	proxy    proxy.Func
	caSHA256 string
}

// WithCAPin pins the control plane's CA: hexSHA256 is the hex SHA-256 of
// the CA certificate (DER), as enrollment-token responses give it. The
// served chain must hold that CA and verify against it before the token is
// sent (else ErrCAMismatch, and nothing is sent); the CA is then kept in the
// Config, and the agent's connections trust only it. Without it the
// system's roots decide.
func WithCAPin(hexSHA256 string) EnrollOption {
	return func(o *enrollOptions) error {
		o.caSHA256 = hexSHA256
		return nil
	}
}

// WithProxy makes Enroll reach the control plane through the HTTP proxy
// pick chooses (nil: directly). Without it Enroll uses
// proxy.FromEnvironment: HTTPS_PROXY, HTTP_PROXY and NO_PROXY, which never
// proxy loopback.
func WithProxy(pick proxy.Func) EnrollOption {
	return func(o *enrollOptions) error {
		if pick == nil {
			pick = func(*http.Request) (*url.URL, error) { return nil, nil }
		}
		o.proxy = pick
		return nil
	}
}

func newEnrollOptions(opts []EnrollOption) (*enrollOptions, error) {
	o := &enrollOptions{proxy: proxy.FromEnvironment}
	for _, opt := range opts {
		if err := opt(o); err != nil {
			return nil, fmt.Errorf("enroll: %w", err)
		}
	}
	return o, nil
}

// httpClient is the client of one enrollment: net/http's defaults, with
// the proxy o picks and tc (nil: the system's roots), and redirects refused
// so the token is never replayed to another URL. Close its idle connections
// when done.
func (o *enrollOptions) httpClient(tc *tls.Config) *http.Client {
	t := &http.Transport{}
	if dt, ok := http.DefaultTransport.(*http.Transport); ok {
		t = dt.Clone()
	}
	t.Proxy = o.proxy
	t.TLSClientConfig = tc
	return &http.Client{
		Transport: t,
		CheckRedirect: func(req *http.Request, _ []*http.Request) error {
			return fmt.Errorf("redirected to %s; enroll with the final URL", req.URL.Redacted())
		},
	}
}
