package controlplane

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/outposthq/outpost/subjects"
	"github.com/outposthq/outpost/wire"
)

// The control plane's copy of the agents' audit logs: agents publish each
// event on agent.<ws>.<agent>.audit (their own subject, nothing more); the
// control plane checks it and keeps it in a JetStream stream, one subject
// per agent, bounded in age and size.
const (
	auditStream = "OUTPOST_AUDIT"
	// auditSubjectPrefix + <ws>.<agent> is where the stream keeps an agent's events.
	auditSubjectPrefix = "outpost.audit."
	// DefaultAuditRetention is how long events are kept (Config.AuditRetention).
	DefaultAuditRetention = 30 * 24 * time.Hour
	// auditMaxBytes bounds the stream; the oldest events go first.
	auditMaxBytes = 1 << 30
	// maxAuditEvent bounds one event; larger ones are dropped.
	maxAuditEvent = 64 << 10
	// auditQueue makes replicas of the control plane store each event once.
	auditQueue = "outpost-audit"
	// Limits of GET audit.
	defaultAuditLimit = 100
	maxAuditLimit     = 1000
)

// auditEvent is an event as the control plane keeps and serves it: the
// agent's JSON object, with the agent and stream position it came from.
type auditEvent map[string]any

// startAudit makes the stream and subscribes to the agents' events.
func (s *Server) startAudit(ctx context.Context, js jetstream.JetStream) error {
	retention := s.cfg.AuditRetention
	if retention <= 0 {
		retention = DefaultAuditRetention
	}
	cfg := jetstream.StreamConfig{
		Name:        auditStream,
		Description: "outpost: copies of the agents' audit logs",
		Subjects:    []string{auditSubjectPrefix + ">"},
		MaxAge:      retention,
		MaxBytes:    auditMaxBytes,
		Storage:     jetstream.FileStorage,
		Replicas:    s.kvReplicas(),
		Duplicates:  2 * time.Minute,
	}
	err := untilReady(ctx, func(ctx context.Context) (err error) {
		s.audit, err = js.CreateOrUpdateStream(ctx, cfg)
		return err
	})
	if err != nil {
		return fmt.Errorf("audit stream: %w", err)
	}
	wild := subjects.Root + ".*.*." + subjects.KindAudit
	if s.auditSub, err = s.agentNC.QueueSubscribe(wild, auditQueue, s.onAudit); err != nil {
		return fmt.Errorf("audit subscribe: %w", err)
	}
	return nil
}

// onAudit stores one event an agent published, named by its subject (an
// agent cannot write another's events: it may publish only its own).
func (s *Server) onAudit(m *nats.Msg) {
	ag, kind, err := subjects.Parse(m.Subject)
	if err != nil || kind != subjects.KindAudit || len(m.Data) > maxAuditEvent {
		return
	}
	var e auditEvent
	if err := json.Unmarshal(m.Data, &e); err != nil {
		s.log.Debug("audit: malformed event", "agent", ag.String(), "err", err)
		return
	}
	e["agent"] = ag.ID
	b, err := json.Marshal(e)
	if err != nil {
		return
	}
	out := nats.NewMsg(auditSubjectPrefix + ag.Workspace + "." + ag.ID)
	out.Data = b
	if id, ok := e["id"].(string); ok && id != "" {
		out.Header.Set(jetstream.MsgIDHeader, ag.ID+"/"+id)
	}
	if err := s.nc.PublishMsg(out); err != nil {
		s.log.Warn("audit: store event", "err", err)
	}
}

// handleAudit serves GET /v1/workspaces/{ws}/audit?agent=&after=&limit=:
// events oldest first after the cursor, and the cursor for the next page.
func (s *Server) handleAudit(w http.ResponseWriter, r *http.Request) error {
	ws, q := r.PathValue("ws"), r.URL.Query()
	filter := auditSubjectPrefix + ws + ".*"
	if id := q.Get("agent"); id != "" {
		if err := subjects.ValidateID(id); err != nil {
			return wire.Errorf(wire.CodeInvalidArgument, wire.ReasonInvalidID, "agent: %v", err)
		}
		filter = auditSubjectPrefix + ws + "." + id
	}
	var after uint64
	if a := q.Get("after"); a != "" {
		n, err := strconv.ParseUint(a, 10, 64)
		if err != nil {
			return wire.Errorf(wire.CodeInvalidArgument, "", "after: %q is not a cursor from next", a)
		}
		after = n
	}
	limit := defaultAuditLimit
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > maxAuditLimit {
			return wire.Errorf(wire.CodeInvalidArgument, "", "limit must be 1 to %d", maxAuditLimit)
		}
		limit = n
	}
	events, next, err := s.auditPage(r.Context(), filter, after, limit)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"events": events, "next": strconv.FormatUint(next, 10)})
	return nil
}

// auditPage reads up to limit events matching filter after stream sequence after.
func (s *Server) auditPage(ctx context.Context, filter string, after uint64, limit int) ([]auditEvent, uint64, error) {
	events := []auditEvent{}
	next := after
	cons, err := s.audit.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{filter},
		DeliverPolicy:  jetstream.DeliverByStartSequencePolicy,
		OptStartSeq:    after + 1,
	})
	if err != nil {
		return nil, 0, wire.Errorf(wire.CodeUnavailable, wire.ReasonStateUnavailable, "audit stream: %v", err)
	}
	batch, err := cons.FetchNoWait(limit)
	if err != nil {
		return nil, 0, wire.Errorf(wire.CodeUnavailable, wire.ReasonStateUnavailable, "audit stream: %v", err)
	}
	for m := range batch.Messages() {
		var e auditEvent
		if json.Unmarshal(m.Data(), &e) == nil {
			events = append(events, e)
		}
		if md, err := m.Metadata(); err == nil {
			next = md.Sequence.Stream
		}
	}
	if err := batch.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) {
		return nil, 0, wire.Errorf(wire.CodeUnavailable, wire.ReasonStateUnavailable, "audit stream: %v", err)
	}
	return events, next, nil
}
