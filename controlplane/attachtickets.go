package controlplane

import (
	"crypto/rand"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/outposthq/outpost/controlplane/client"
	"github.com/outposthq/outpost/rpc"
	"github.com/outposthq/outpost/wire"
)

// attachTicketTTL is how long an attach ticket may be redeemed.
const attachTicketTTL = 60 * time.Second

// maxAttachTickets bounds the unredeemed tickets held at once.
const maxAttachTickets = 10000

// attachTickets are the single-use tickets that let a client which cannot
// set the Authorization header (a browser's WebSocket) open one attach
// path as the caller that asked for the ticket. They live in this
// replica's memory: a ticket is redeemed where it was made.
type attachTickets struct {
	mu sync.Mutex
	m  map[string]attachTicket
}

type attachTicket struct {
	c       caller
	path    string // the attach URL path it opens
	expires time.Time
}

// issue makes a ticket for path as c.
func (ts *attachTickets) issue(c caller, path string, now time.Time) (string, error) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	for k, t := range ts.m {
		if now.After(t.expires) {
			delete(ts.m, k)
		}
	}
	if len(ts.m) >= maxAttachTickets {
		return "", wire.Errorf(wire.CodeUnavailable, wire.ReasonBusy, "too many attach tickets outstanding; retry in a minute")
	}
	if ts.m == nil {
		ts.m = map[string]attachTicket{}
	}
	tok := "opat_" + rand.Text()
	ts.m[tok] = attachTicket{c: c, path: path, expires: now.Add(attachTicketTTL)}
	return tok, nil
}

// redeem takes ticket for path, once; ok is false for an unknown, used,
// expired ticket or one made for another path.
func (ts *attachTickets) redeem(ticket, path string, now time.Time) (caller, bool) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	t, ok := ts.m[ticket]
	if !ok {
		return caller{}, false
	}
	delete(ts.m, ticket)
	if now.After(t.expires) || t.path != path {
		return caller{}, false
	}
	return t.c, true
}

// ticketCaller is the caller of an attach request that carries ?ticket=
// and no Authorization header (see authenticate).
func (s *Server) ticketCaller(r *http.Request) (caller, bool, error) {
	ticket := r.URL.Query().Get("ticket")
	if ticket == "" || r.Header.Get("Authorization") != "" || !strings.HasSuffix(r.Pattern, "/processes/{id}/attach") {
		return caller{}, false, nil
	}
	c, ok := s.attachTickets.redeem(ticket, r.URL.Path, time.Now())
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
	tok, err := s.attachTickets.issue(callerFrom(r.Context()), path, time.Now())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, client.AttachTicket{Ticket: tok, ExpiresAt: time.Now().Add(attachTicketTTL).UTC()})
	return nil
}
