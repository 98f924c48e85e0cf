package controlplane

import (
	"context"
	"crypto/rand"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/outposthq/outpost/controlplane/client"
	"github.com/outposthq/outpost/enroll"
	"github.com/outposthq/outpost/internal/kvjson"
	"github.com/outposthq/outpost/rpc"
	"github.com/outposthq/outpost/wire"
)

// attachTicketTTL is how long an attach ticket may be redeemed.
const attachTicketTTL = 60 * time.Second

// attachTicketRecord is one unredeemed attach ticket, in bucketAttach
// under the hash of the ticket (the ticket itself is stored nowhere).
// Every replica reads the bucket: a ticket made on one opens the attach on
// any, once (the redeeming replica deletes it at the revision it read).
type attachTicketRecord struct {
	Admin     bool      `json:"admin,omitempty"`
	Workspace string    `json:"workspace,omitempty"`
	Path      string    `json:"path"` // the attach URL path it opens
	Expires   time.Time `json:"expires"`
}

func attachTicketKey(ticket string) string { return hashKey(enroll.HashToken(ticket)) }

// issueAttachTicket makes a ticket for path as c.
func (s *Server) issueAttachTicket(ctx context.Context, c caller, path string, now time.Time) (string, error) {
	tok := "opat_" + rand.Text()
	rec := attachTicketRecord{Admin: c.admin, Workspace: c.workspace, Path: path, Expires: now.Add(attachTicketTTL)}
	if _, err := kvjson.Create(ctx, s.st.attachTickets, attachTicketKey(tok), &rec); err != nil {
		return "", wire.Errorf(wire.CodeUnavailable, "", "store the attach ticket: %v", err)
	}
	return tok, nil
}

// redeemAttachTicket takes ticket for path, once; ok is false for an
// unknown, used or expired ticket or one made for another path; err is a
// store that could not be read.
func (s *Server) redeemAttachTicket(ctx context.Context, ticket, path string, now time.Time) (c caller, ok bool, err error) {
	key := attachTicketKey(ticket)
	var rec attachTicketRecord
	rev, err := kvjson.Get(ctx, s.st.attachTickets, key, &rec)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return caller{}, false, nil
	}
	if err != nil {
		return caller{}, false, wire.Errorf(wire.CodeUnavailable, "", "read the attach ticket: %v", err)
	}
	if err := s.st.attachTickets.Delete(ctx, key, jetstream.LastRevision(rev)); err != nil {
		return caller{}, false, nil // redeemed meanwhile, here or on another replica
	}
	if now.After(rec.Expires) || rec.Path != path {
		return caller{}, false, nil
	}
	return caller{admin: rec.Admin, workspace: rec.Workspace}, true, nil
}

// ticketCaller is the caller of an attach request that carries ?ticket=
// and no Authorization header (see authenticate).
func (s *Server) ticketCaller(r *http.Request) (caller, bool, error) {
	// The query is parsed only on the attach route (every call asks).
	if r.Header.Get("Authorization") != "" || !strings.HasSuffix(r.Pattern, "/processes/{id}/attach") {
		return caller{}, false, nil
	}
	ticket := r.URL.Query().Get("ticket")
	if ticket == "" {
		return caller{}, false, nil
	}
	c, ok, err := s.redeemAttachTicket(r.Context(), ticket, r.URL.Path, time.Now())
	if err != nil {
		return caller{}, true, err
	}
	if !ok {
		return caller{}, true, wire.Errorf(wire.CodeUnauthenticated, "", "unknown, used or expired attach ticket")
	}
	return c, true, nil
}

// handleAttachTicket serves POST {target}/processes/{id}/attach-tickets.
func (s *Server) handleAttachTicket(w http.ResponseWriter, r *http.Request, t target) error {
	id, err := procID(r)
	if err != nil {
		return err
	}
	if r.ContentLength != 0 {
		var empty struct{}
		if err := decodeJSON(w, r, maxJSONBody, &empty); err != nil {
			return err
		}
	}
	var info wire.ProcInfo
	if err := t.Call(r.Context(), wire.OpProcGet, &wire.ProcRef{ID: id}, &info, rpc.CallOptions{Timeout: procCallTimeout}); err != nil {
		return err
	}
	path := strings.TrimSuffix(r.URL.Path, "-tickets")
	tok, err := s.issueAttachTicket(r.Context(), callerFrom(r.Context()), path, time.Now())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, client.AttachTicket{Ticket: tok, ExpiresAt: time.Now().Add(attachTicketTTL).UTC()})
	return nil
}
