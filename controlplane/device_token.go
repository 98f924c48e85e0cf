package controlplane

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/outposthq/outpost/enroll"
	"github.com/outposthq/outpost/internal/kvjson"
	"github.com/outposthq/outpost/subjects"
	"github.com/outposthq/outpost/wire"
)

var errBadDeviceCode = wire.Errorf(wire.CodeUnauthenticated, "", "unknown or used device code")

func (s *Server) handleDeviceToken(w http.ResponseWriter, r *http.Request) error {
	var req enroll.DeviceTokenRequest
	if err := decodeJSON(w, r, maxJSONBody, &req); err != nil {
		return err
	}
	out, err := s.redeemDeviceCode(r.Context(), req.DeviceCode)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// redeemDeviceCode answers one poll: pending, slow_down, expired, denied,
// or, once approved, the enrollment itself (once: the code is then spent).
func (s *Server) redeemDeviceCode(ctx context.Context, deviceCode string) (*enroll.Response, error) {
	if !strings.HasPrefix(deviceCode, enroll.DeviceCodePrefix) {
		return nil, errBadDeviceCode
	}
	key := deviceKey(deviceCode)
	var rec deviceRecord
	rev, err := kvjson.Get(ctx, s.st.device, key, &rec)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, errBadDeviceCode
	}
	if err != nil {
		return nil, err
	}
	now := time.Now().UTC()
	switch {
	case rec.State == deviceStateDone:
		return nil, errBadDeviceCode
	case rec.State == deviceStateDenied:
		return nil, wire.Errorf(wire.CodeInvalidArgument, wire.ReasonAccessDenied, "the device login was denied")
	case !now.Before(rec.ExpiresAt):
		return nil, wire.Errorf(wire.CodeInvalidArgument, wire.ReasonExpiredToken, "the device code expired; run the login again")
	case rec.State == deviceStatePending:
		return nil, s.pollPending(ctx, key, &rec, rev, now)
	}
	// Approved: spend the code first, so that of two polls exactly one
	// enrolls.
	rec.State, rec.LastPoll = deviceStateDone, now
	if _, err := kvjson.Update(ctx, s.st.device, key, &rec, rev); err != nil {
		if isRevisionMismatch(err) {
			return nil, errBadDeviceCode
		}
		return nil, err
	}
	tok := &tokenRecord{Workspace: rec.Workspace, Pool: rec.Pool}
	if rec.Rotate {
		tok.Agent = rec.Agent
	}
	req := enroll.Request{PublicKey: rec.PublicKey, Name: rec.Name, Hostname: rec.Hostname, OS: rec.OS, Arch: rec.Arch}
	return s.issueEnrollment(ctx, subjects.Agent{Workspace: rec.Workspace, ID: rec.Agent}, tok, req)
}

// pollPending records a poll of a pending code; one sooner than the
// interval (three quarters of it, for network jitter) is slow_down and
// lengthens the interval by slowDownStep.
func (s *Server) pollPending(ctx context.Context, key string, rec *deviceRecord, rev uint64, now time.Time) error {
	interval := time.Duration(rec.IntervalMs) * time.Millisecond
	tooSoon := !rec.LastPoll.IsZero() && now.Sub(rec.LastPoll) < interval*3/4
	if tooSoon {
		rec.IntervalMs += slowDownStep.Milliseconds()
	}
	rec.LastPoll = now
	// A lost race means another poll was recorded at the same time: that
	// one counts.
	if _, err := kvjson.Update(ctx, s.st.device, key, rec, rev); err != nil && !isRevisionMismatch(err) {
		return err
	}
	if tooSoon {
		return wire.Errorf(wire.CodeInvalidArgument, wire.ReasonSlowDown, "polled too soon; poll every %d s", intervalSeconds(rec.IntervalMs))
	}
	return wire.Errorf(wire.CodeInvalidArgument, wire.ReasonAuthorizationPending, "waiting for the user code to be approved")
}
