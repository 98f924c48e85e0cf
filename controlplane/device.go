package controlplane

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"
	"github.com/outposthq/outpost/enroll"
	"github.com/outposthq/outpost/internal/kvjson"
	"github.com/outposthq/outpost/wire"
)

// Device login (RFC 8628's shape; see enroll/device.go for the agent's side).
// A device code and its user code live in bucketDevice under the hashes of
// both: "d.<hash of device code>" holds the request, "u.<hash of user
// code>" the device code's hash. Nothing stored lets anyone poll or approve.
const (
	// DefaultDeviceCodeTTL is how long a device code can be approved and
	// polled.
	DefaultDeviceCodeTTL = 10 * time.Minute
	// DefaultDeviceInterval is the polling interval handed out.
	DefaultDeviceInterval = 5 * time.Second
	// slowDownStep is what a slow_down adds to a code's interval (RFC 8628
	// 3.5).
	slowDownStep = 5 * time.Second
	// DeviceVerificationPath is where the console approves user codes.
	DeviceVerificationPath = "/device"
)

// Guessing limits: a caller (a workspace key, or the admin) may try this
// many unknown user codes in a burst, refilled at one per
// approvalGuessEvery; one address may ask for this many device codes in a
// burst, refilled at one per codeRequestEvery. A user code has 40 bits.
const (
	approvalGuessBurst = 10
	approvalGuessEvery = 6 * time.Second
	codeRequestBurst   = 20
	codeRequestEvery   = 3 * time.Second
)

// Device request states.
const (
	deviceStatePending  = "pending"
	deviceStateApproved = "approved"
	deviceStateDenied   = "denied"
	deviceStateDone     = "done" // credentials handed out: the code is spent
)

type deviceRecord struct {
	UserCodeHash string    `json:"userCodeHash"`
	PublicKey    string    `json:"publicKey"`
	Name         string    `json:"name,omitempty"`
	Hostname     string    `json:"hostname,omitempty"`
	OS           string    `json:"os,omitempty"`
	Arch         string    `json:"arch,omitempty"`
	RemoteAddr   string    `json:"remoteAddr,omitempty"`
	CreatedAt    time.Time `json:"createdAt"`
	ExpiresAt    time.Time `json:"expiresAt"`
	IntervalMs   int64     `json:"intervalMs"`
	LastPoll     time.Time `json:"lastPoll,omitzero"`
	State        string    `json:"state"`
	// Set by the approval.
	Workspace string    `json:"workspace,omitempty"`
	Agent     string    `json:"agent,omitempty"` // the id it enrolls as
	Rotate    bool      `json:"rotate,omitempty"`
	Pool      string    `json:"pool,omitempty"`
	DecidedAt time.Time `json:"decidedAt,omitzero"`
	DecidedBy string    `json:"decidedBy,omitempty"`
}

type userCodeRecord struct {
	Device string `json:"device"` // the key of the deviceRecord
}

func deviceKey(deviceCode string) string { return "d." + enroll.HashToken(deviceCode) }
func userCodeKey(code string) string     { return "u." + enroll.HashToken(code) }

func (s *Server) deviceInterval() time.Duration {
	if s.cfg.DeviceInterval > 0 {
		return s.cfg.DeviceInterval
	}
	return DefaultDeviceInterval
}

// remoteHost is the address a request came from, for the per-address limit.
func remoteHost(r *http.Request) string {
	h, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return h
}

func (s *Server) handleDeviceCode(w http.ResponseWriter, r *http.Request) error {
	var req enroll.DeviceCodeRequest
	if err := decodeJSON(w, r, maxJSONBody, &req); err != nil {
		return err
	}
	if !s.limits.allow("code "+remoteHost(r), codeRequestBurst, codeRequestEvery) {
		return wire.Errorf(wire.CodeUnavailable, wire.ReasonTooManyAttempts, "too many device codes asked for from %s; wait a minute", remoteHost(r))
	}
	out, err := s.newDeviceCode(r.Context(), req, remoteHost(r))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// newDeviceCode stores a pending request for req's key and returns its codes.
func (s *Server) newDeviceCode(ctx context.Context, req enroll.DeviceCodeRequest, from string) (*enroll.DeviceCode, error) {
	if !nkeys.IsValidPublicUserKey(req.PublicKey) {
		return nil, wire.Errorf(wire.CodeInvalidArgument, "", "publicKey must be an nkey user public key (U...)")
	}
	if err := checkMachineFields(req.Name, req.Hostname, req.OS, req.Arch); err != nil {
		return nil, err
	}
	plain, _, err := enroll.NewToken()
	if err != nil {
		return nil, err
	}
	deviceCode := enroll.DeviceCodePrefix + plain[len(enroll.TokenPrefix):]
	now := time.Now().UTC()
	ttl := DefaultDeviceCodeTTL
	if s.cfg.DeviceCodeTTL > 0 {
		ttl = min(s.cfg.DeviceCodeTTL, time.Hour)
	}
	rec := deviceRecord{
		PublicKey: req.PublicKey, Name: req.Name, Hostname: req.Hostname, OS: req.OS, Arch: req.Arch,
		RemoteAddr: from, CreatedAt: now, ExpiresAt: now.Add(ttl),
		IntervalMs: s.deviceInterval().Milliseconds(), State: deviceStatePending,
	}
	// A fresh user code; a collision (1 in 2^40 per live code) takes another.
	var userCode string
	for attempt := 0; ; attempt++ {
		if userCode, err = enroll.NewUserCode(); err != nil {
			return nil, err
		}
		_, err = kvjson.Create(ctx, s.st.device, userCodeKey(userCode), &userCodeRecord{Device: deviceKey(deviceCode)})
		if err == nil {
			break
		}
		if !errors.Is(err, jetstream.ErrKeyExists) || attempt == 3 {
			return nil, err
		}
	}
	rec.UserCodeHash = enroll.HashToken(userCode)
	if _, err := kvjson.Create(ctx, s.st.device, deviceKey(deviceCode), &rec); err != nil {
		return nil, err
	}
	verify := s.PublicURL() + DeviceVerificationPath
	out := &enroll.DeviceCode{
		DeviceCode:              deviceCode,
		UserCode:                userCode,
		VerificationURI:         verify,
		VerificationURIComplete: verify + "?code=" + url.QueryEscape(userCode),
		ExpiresIn:               max(1, int(ttl/time.Second)),
		Interval:                intervalSeconds(rec.IntervalMs),
		CASHA256:                s.CASHA256(),
		EnrollCommand:           s.loginCommand(),
	}
	s.log.Info("device code issued", "hostname", req.Hostname, "os", req.OS, "from", from)
	return out, nil
}

// intervalSeconds rounds a polling interval up to whole seconds, at least 1.
func intervalSeconds(ms int64) int {
	return max(1, int((ms+999)/1000))
}

// loginCommand is the device-login line for further machines: the public
// URL and the CA pin when there is one.
func (s *Server) loginCommand() string {
	cmd := "outpost agent login --url " + shellQuote(s.PublicURL())
	if pin := s.CASHA256(); pin != "" {
		cmd += " --ca-sha256 " + pin
	}
	return cmd
}

func checkMachineFields(name, hostname, os, arch string) error {
	for _, f := range []struct{ name, v string }{{"name", name}, {"hostname", hostname}, {"os", os}, {"arch", arch}} {
		if len(f.v) > 255 {
			return wire.Errorf(wire.CodeInvalidArgument, "", "%s is longer than 255 bytes", f.name)
		}
	}
	return nil
}
