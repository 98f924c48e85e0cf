package controlplane

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/outposthq/outpost/internal/secretfile"
)

// Files under StateDir/tls that --tls-self-signed makes: a CA made once and
// kept (agents pin it), and a server certificate it signs, made again when
// the host names change.
const (
	tlsDir        = "tls"
	caCertFile    = "ca.pem"
	caKeyFile     = "ca-key.pem"
	serverCert    = "server.pem"
	serverKeyFile = "server-key.pem"
	maxPEMSize    = 1 << 20
	caValidity    = 10 * 365 * 24 * time.Hour
	certValidity  = 2 * 365 * 24 * time.Hour
)

// serverTLS is the control plane's TLS identity: the certificate it serves,
// and the CA agents pin when it is not publicly trusted.
type serverTLS struct {
	cert tls.Certificate
	// ca is the certificate agents are told to trust (its SHA-256 is
	// caSha256); nil when the chain is expected to be publicly trusted.
	ca *x509.Certificate
	// serverName is a name the certificate is valid for, used by the
	// control plane's own connections to its embedded server.
	serverName string
}

// config is the tls.Config of the HTTPS listener and the native NATS port.
func (t *serverTLS) config() *tls.Config {
	return &tls.Config{Certificates: []tls.Certificate{t.cert}, MinVersion: tls.VersionTLS12}
}

// caSHA256 is the hex SHA-256 of the pinned CA's DER, "" when none.
func (t *serverTLS) caSHA256() string {
	if t == nil || t.ca == nil {
		return ""
	}
	return CertSHA256(t.ca)
}

// clientConfig trusts exactly this identity's CA (or the system's roots),
// for the control plane's own TLS connections.
func (t *serverTLS) clientConfig() *tls.Config {
	c := &tls.Config{ServerName: t.serverName, MinVersion: tls.VersionTLS12}
	if t.ca != nil {
		c.RootCAs = x509.NewCertPool()
		c.RootCAs.AddCert(t.ca)
	}
	return c
}

// CertSHA256 is the hex SHA-256 of a certificate's DER: what enrollment pins.
func CertSHA256(c *x509.Certificate) string {
	sum := sha256.Sum256(c.Raw)
	return hex.EncodeToString(sum[:])
}

// loadTLS reads a certificate chain and key given by the operator. The last
// certificate of the chain is the CA agents pin when it is a CA that signed
// itself (a private CA shipped in the chain); otherwise the chain must be
// publicly trusted and nothing is pinned.
func loadTLS(certFile, keyFile string) (*serverTLS, error) {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("tls: %w", err)
	}
	t := &serverTLS{cert: cert}
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		return nil, fmt.Errorf("tls: %s: %w", certFile, err)
	}
	t.serverName = certName(leaf)
	last, err := x509.ParseCertificate(cert.Certificate[len(cert.Certificate)-1])
	if err != nil {
		return nil, fmt.Errorf("tls: %s: %w", certFile, err)
	}
	if len(cert.Certificate) > 1 && last.IsCA && bytes.Equal(last.RawIssuer, last.RawSubject) && last.CheckSignatureFrom(last) == nil {
		t.ca = last
	}
	return t, nil
}

// certName is a name leaf is valid for: its first DNS name, else its first
// IP address.
func certName(leaf *x509.Certificate) string {
	if len(leaf.DNSNames) > 0 {
		return leaf.DNSNames[0]
	}
	if len(leaf.IPAddresses) > 0 {
		return leaf.IPAddresses[0].String()
	}
	return leaf.Subject.CommonName
}

// selfSignedTLS loads or makes StateDir/tls: the CA is made once and kept,
// so agents' pins survive restarts; the server certificate is made again
// when it does not cover hosts or is close to expiry.
func selfSignedTLS(stateDir string, hosts []string) (*serverTLS, error) {
	if len(hosts) == 0 {
		return nil, errors.New("tls: --tls-self-signed needs at least one host name or address")
	}
	dir := filepath.Join(stateDir, tlsDir)
	if err := os.MkdirAll(dir, secretfile.DirMode); err != nil {
		return nil, fmt.Errorf("tls: %w", err)
	}
	ca, caKey, err := loadOrMakeCA(dir)
	if err != nil {
		return nil, err
	}
	cert, err := tls.LoadX509KeyPair(filepath.Join(dir, serverCert), filepath.Join(dir, serverKeyFile))
	if err == nil && !covers(cert, hosts) {
		err = errors.New("hosts changed")
	}
	if err != nil {
		if cert, err = makeServerCert(dir, ca, caKey, hosts); err != nil {
			return nil, err
		}
	}
	return &serverTLS{cert: cert, ca: ca, serverName: hosts[0]}, nil
}

func loadOrMakeCA(dir string) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	certPath, keyPath := filepath.Join(dir, caCertFile), filepath.Join(dir, caKeyFile)
	keyPEM, err := secretfile.Read(keyPath, maxPEMSize)
	if errors.Is(err, fs.ErrNotExist) {
		return makeCA(certPath, keyPath)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("tls: CA key: %w", err)
	}
	certPEM, err := os.ReadFile(certPath)
	if err != nil {
		return nil, nil, fmt.Errorf("tls: CA certificate: %w", err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, nil, fmt.Errorf("tls: CA in %s: %w", dir, err)
	}
	key, ok := pair.PrivateKey.(*ecdsa.PrivateKey)
	if !ok {
		return nil, nil, fmt.Errorf("tls: CA key in %s is not ECDSA", dir)
	}
	ca, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return nil, nil, fmt.Errorf("tls: CA in %s: %w", dir, err)
	}
	return ca, key, nil
}

func makeCA(certPath, keyPath string) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("tls: CA key: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "Outpost control plane CA", Organization: []string{"Outpost"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(caValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, fmt.Errorf("tls: make CA: %w", err)
	}
	if err := writePEM(keyPath, certPath, key, der); err != nil {
		return nil, nil, err
	}
	ca, err := x509.ParseCertificate(der)
	return ca, key, err
}

func makeServerCert(dir string, ca *x509.Certificate, caKey *ecdsa.PrivateKey, hosts []string) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("tls: server key: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: hosts[0], Organization: []string{"Outpost"}},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(certValidity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("tls: make server certificate: %w", err)
	}
	certPath, keyPath := filepath.Join(dir, serverCert), filepath.Join(dir, serverKeyFile)
	// The chain served: the certificate, then the CA it pins against.
	if err := writePEM(keyPath, certPath, key, der, ca.Raw); err != nil {
		return tls.Certificate{}, err
	}
	return tls.LoadX509KeyPair(certPath, keyPath)
}

// writePEM writes key (0600) and the certificates (0644: public), each
// atomically.
func writePEM(keyPath, certPath string, key *ecdsa.PrivateKey, ders ...[]byte) error {
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return fmt.Errorf("tls: %w", err)
	}
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb})
	defer secretfile.Wipe(keyPEM)
	if err := secretfile.WriteAtomic(keyPath, keyPEM); err != nil {
		return fmt.Errorf("tls: %w", err)
	}
	var certPEM []byte
	for _, d := range ders {
		certPEM = append(certPEM, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: d})...)
	}
	if err := secretfile.WriteAtomic(certPath, certPEM); err != nil {
		return fmt.Errorf("tls: %w", err)
	}
	return nil
}

// covers reports whether cert is valid for every host for at least 30 more
// days.
func covers(cert tls.Certificate, hosts []string) bool {
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil || time.Until(leaf.NotAfter) < 30*24*time.Hour {
		return false
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			if !slices.ContainsFunc(leaf.IPAddresses, ip.Equal) {
				return false
			}
		} else if !slices.Contains(leaf.DNSNames, h) {
			return false
		}
	}
	return true
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	return n
}
