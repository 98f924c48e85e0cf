package enroll

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// Device login (RFC 8628's shape): the agent asks for a device code, a person
// approves its short user code with an admin or workspace key, and the agent,
// polling, receives the same credentials POST /v1/enroll gives.
const (
	DeviceCodePath  = "/v1/device/code"
	DeviceTokenPath = "/v1/device/token"
	// DeviceCodePrefix starts every device code, so a leaked one is
	// recognisable.
	DeviceCodePrefix = "opd_"
	// UserCodeAlphabet is what user codes are made of: upper-case letters
	// and digits without the look-alikes 0/O and 1/I, so a code read aloud
	// or off a screen is typed right.
	UserCodeAlphabet = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
	// userCodeLen is a user code's length without its dash: 8 symbols of
	// 32, 40 bits.
	userCodeLen = 8
)

// DeviceCodeRequest is the body of POST /v1/device/code: the agent's public
// key (its seed never leaves the machine) and what a person approving the
// code is shown of the machine.
type DeviceCodeRequest struct {
	PublicKey string `json:"publicKey"`
	Name      string `json:"name,omitempty"`
	Hostname  string `json:"hostname,omitempty"`
	OS        string `json:"os,omitempty"`
	Arch      string `json:"arch,omitempty"`
}

// DeviceCode is the 200 body of POST /v1/device/code. DeviceCode is the
// agent's secret for polling; UserCode is what a person approves, at
// VerificationURI or with `outpost agent approve`. ExpiresIn and Interval
// are in seconds, as in RFC 8628.
type DeviceCode struct {
	DeviceCode              string `json:"deviceCode"`
	UserCode                string `json:"userCode"`
	VerificationURI         string `json:"verificationUri"`
	VerificationURIComplete string `json:"verificationUriComplete,omitempty"`
	ExpiresIn               int    `json:"expiresIn"`
	Interval                int    `json:"interval"`
	// CASHA256 is the hex SHA-256 of the control plane's CA (DER) when it
	// is not publicly trusted; EnrollCommand the login line with that pin,
	// to paste on further machines.
	CASHA256      string `json:"caSha256,omitempty"`
	EnrollCommand string `json:"enrollCommand,omitempty"`
}

// DeviceTokenRequest is the body of POST /v1/device/token.
type DeviceTokenRequest struct {
	DeviceCode string `json:"deviceCode"`
}

// NewUserCode makes a user code "XXXX-XXXX" of UserCodeAlphabet.
func NewUserCode() (string, error) {
	var b [userCodeLen]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("random: %w", err)
	}
	out := make([]byte, 0, userCodeLen+1)
	for i, c := range b {
		if i == userCodeLen/2 {
			out = append(out, '-')
		}
		out = append(out, UserCodeAlphabet[int(c)%len(UserCodeAlphabet)]) // 256 % 32 == 0: unbiased
	}
	return string(out), nil
}

// NormalizeUserCode is the canonical form of a user code as a person typed
// it: upper case, dashes and spaces dropped, dash put back in the middle.
// ok is false when it cannot be a user code (wrong length, a character
// outside UserCodeAlphabet).
func NormalizeUserCode(s string) (code string, ok bool) {
	syms := make([]byte, 0, userCodeLen)
	for _, r := range strings.ToUpper(s) {
		switch {
		case r == '-' || r == ' ':
		case r < 128 && strings.IndexByte(UserCodeAlphabet, byte(r)) >= 0 && len(syms) < userCodeLen:
			syms = append(syms, byte(r))
		default:
			return "", false
		}
	}
	if len(syms) != userCodeLen {
		return "", false
	}
	return string(syms[:userCodeLen/2]) + "-" + string(syms[userCodeLen/2:]), true
}

// postJSON posts body to endpoint and returns a 200 answer's body; any
// other status is returned as the *wire.Error it carries.
func postJSON(ctx context.Context, hc *http.Client, endpoint string, body any) ([]byte, error) {
	data, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	res, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("POST %s: %w", endpoint, err)
	}
	defer res.Body.Close()
	got, err := io.ReadAll(io.LimitReader(res.Body, maxResponseSize+1))
	if err != nil {
		return nil, fmt.Errorf("POST %s: read response: %w", endpoint, err)
	}
	if len(got) > maxResponseSize {
		return nil, fmt.Errorf("POST %s: response over %d bytes", endpoint, maxResponseSize)
	}
	if res.StatusCode != http.StatusOK {
		return nil, decodeHTTPError(res.StatusCode, got)
	}
	return got, nil
}

// sleepCtx waits d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
