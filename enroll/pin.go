package enroll

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"
)

// ErrCAMismatch is returned (wrapped) when the control plane's certificate
// chain does not contain the pinned CA, or does not verify against it.
var ErrCAMismatch = errors.New("the control plane's certificate does not match --ca-sha256")

// pin checks a server's chain against a CA pinned by the hex SHA-256 of its
// DER, and keeps the CA it found.
type pin struct {
	sha256 string
	ca     *x509.Certificate // set by verify when the chain matched
}

func newPin(hexSHA string) (*pin, error) {
	h := strings.ToLower(strings.TrimSpace(hexSHA))
	if b, err := hex.DecodeString(h); err != nil || len(b) != sha256.Size {
		return nil, fmt.Errorf("--ca-sha256 %q: want 64 hex digits (the SHA-256 of the CA certificate)", hexSHA)
	}
	return &pin{sha256: h}, nil
}

// tlsConfig verifies the served chain against the pin instead of the
// system's roots: the chain must contain the pinned certificate, and the
// server's certificate must chain to it and be valid for serverName.
// Verification runs in the handshake, before any request (and so the
// token) is sent.
func (p *pin) tlsConfig(serverName string) *tls.Config {
	return &tls.Config{
		MinVersion:         tls.VersionTLS12,
		InsecureSkipVerify: true, // replaced by VerifyConnection: the pin, not the system's roots
		VerifyConnection: func(cs tls.ConnectionState) error {
			return p.verify(cs.PeerCertificates, serverName)
		},
	}
}

func (p *pin) verify(chain []*x509.Certificate, serverName string) error {
	if len(chain) == 0 {
		return fmt.Errorf("%w: no certificate served", ErrCAMismatch)
	}
	var ca *x509.Certificate
	var seen []string
	for _, c := range chain {
		sum := sha256.Sum256(c.Raw)
		got := hex.EncodeToString(sum[:])
		if got == p.sha256 {
			ca = c
		}
		seen = append(seen, got)
	}
	if ca == nil {
		return fmt.Errorf("%w: the chain served holds %s, not %s: check the URL and the pin; nothing was sent", ErrCAMismatch, strings.Join(seen, ", "), p.sha256)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	inter := x509.NewCertPool()
	for _, c := range chain[1:] {
		inter.AddCert(c)
	}
	if _, err := chain[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter, DNSName: serverName}); err != nil {
		return fmt.Errorf("%w: %v; nothing was sent", ErrCAMismatch, err)
	}
	p.ca = ca
	return nil
}

// caPEM encodes the CA for the config file.
func caPEM(ca *x509.Certificate) string {
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Raw}))
}

// CAPool is the pool holding only the config's CA; nil when it has none
// (the control plane's chain is then checked against the system's roots).
func (c *Config) CAPool() (*x509.CertPool, error) {
	if c.CA == "" {
		return nil, nil
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM([]byte(c.CA)) {
		return nil, errors.New("config: ca: no certificate in it")
	}
	return pool, nil
}

// TLSConfig is what the agent's TLS connections (NATS over wss:// or
// tls://) trust: only the pinned CA when the config has one.
func (c *Config) TLSConfig() (*tls.Config, error) {
	pool, err := c.CAPool()
	if err != nil || pool == nil {
		return nil, err
	}
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, nil
}
