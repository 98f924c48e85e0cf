// Package subjects is the one place NATS subjects are built and parsed.
//
// Every subject an agent serves or publishes lives under
// agent.<ws>.<agent>.>, where <ws> and <agent> are ids of the form
// [a-z0-9][a-z0-9_-]{0,62}. Builders validate every token they are given, so a
// caller can never produce a subject with a dot, wildcard or space smuggled in.
package subjects

import (
	"errors"
	"fmt"
	"strings"
)

// Root is the first token of every agent subject.
const Root = "agent"

// Event kinds an agent publishes on its own subjects.
const (
	KindRPC       = "rpc"       // requests to the agent
	KindHello     = "hello"     // published on every (re)connect
	KindHeartbeat = "heartbeat" // published every few seconds while connected
	KindGoodbye   = "goodbye"   // published on a clean stop
	KindReply     = "reply"     // replies to the control plane's requests
	KindPipe      = "pipe"      // frames of a pipe (a forwarded TCP connection) to the control plane
	KindAttach    = "attach"    // frames of an attach stream (a process's events, stdin acks) to the control plane
	KindAudit     = "audit"     // one audit event per operation (JSON)
)

// ControlPlaneInboxPrefix is the inbox prefix the control plane uses for its
// requests, so that nobody ever needs _INBOX.>.
const ControlPlaneInboxPrefix = "_OUTPOST_CP"

// MaxIDLen is the longest id accepted.
const MaxIDLen = 63

// ErrInvalidID is returned (wrapped) for an id that does not match the grammar.
var ErrInvalidID = errors.New("invalid id")

// ErrInvalidSubject is returned (wrapped) for a subject that does not parse.
var ErrInvalidSubject = errors.New("invalid subject")

// ValidateID checks that id matches [a-z0-9][a-z0-9_-]{0,62}.
func ValidateID(id string) error {
	if id == "" {
		return fmt.Errorf("%w: empty", ErrInvalidID)
	}
	if len(id) > MaxIDLen {
		return fmt.Errorf("%w: %d characters, at most %d", ErrInvalidID, len(id), MaxIDLen)
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case (c == '_' || c == '-') && i > 0:
		default:
			return fmt.Errorf("%w: %q: character %q at %d (want [a-z0-9][a-z0-9_-]*)", ErrInvalidID, id, c, i)
		}
	}
	return nil
}

// Agent identifies one enrolled agent: its workspace and its id.
type Agent struct {
	Workspace string
	ID        string
}

// Validate checks both tokens.
func (a Agent) Validate() error {
	if err := ValidateID(a.Workspace); err != nil {
		return fmt.Errorf("workspace: %w", err)
	}
	if err := ValidateID(a.ID); err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	return nil
}

// String renders "ws/agent" for logs.
func (a Agent) String() string { return a.Workspace + "/" + a.ID }

// Prefix is agent.<ws>.<agent>, the root of everything the agent owns.
func (a Agent) Prefix() (string, error) {
	if err := a.Validate(); err != nil {
		return "", err
	}
	return Root + "." + a.Workspace + "." + a.ID, nil
}

// Subject builds agent.<ws>.<agent>.<kind>; kind is one of the Kind constants or
// any other single valid token.
func (a Agent) Subject(kind string) (string, error) {
	p, err := a.Prefix()
	if err != nil {
		return "", err
	}
	if err := validToken(kind); err != nil {
		return "", err
	}
	return p + "." + kind, nil
}

// RPC is agent.<ws>.<agent>.rpc: where the agent serves requests.
func (a Agent) RPC() (string, error) { return a.Subject(KindRPC) }

// Wildcard is agent.<ws>.<agent>.>: every subject the agent may use.
func (a Agent) Wildcard() (string, error) {
	p, err := a.Prefix()
	if err != nil {
		return "", err
	}
	return p + ".>", nil
}

// Reply is agent.<ws>.<agent>.reply.<owner>.<token>: the reply subject of
// one request the control plane connection named owner sends to the agent.
// Replies live under the agent's own subjects, so the agent needs no
// response permission to answer, and an answer can only ever come from the
// agent the request went to.
func (a Agent) Reply(owner, token string) (string, error) {
	p, err := a.Prefix()
	if err != nil {
		return "", err
	}
	if err := validToken(owner); err != nil {
		return "", err
	}
	if err := validToken(token); err != nil {
		return "", err
	}
	return p + "." + KindReply + "." + owner + "." + token, nil
}

// AllReplies is agent.*.*.reply.<owner>.*: what the control plane
// connection named owner subscribes to for the replies of every agent.
func AllReplies(owner string) (string, error) {
	if err := validToken(owner); err != nil {
		return "", err
	}
	return Root + ".*.*." + KindReply + "." + owner + ".*", nil
}

// Pipe is agent.<ws>.<agent>.pipe.<owner>.<pipe>: where the agent
// publishes the frames of one pipe (a TCP connection to a local port) to
// the control-plane connection named owner. Like replies, they live under
// the agent's own subjects: no permission beyond its own.
func (a Agent) Pipe(owner, pipe string) (string, error) {
	p, err := a.Prefix()
	if err != nil {
		return "", err
	}
	if err := validToken(owner); err != nil {
		return "", err
	}
	if err := validToken(pipe); err != nil {
		return "", err
	}
	return p + "." + KindPipe + "." + owner + "." + pipe, nil
}

// Attach is agent.<ws>.<agent>.attach.<owner>.<stream>: where the agent
// pushes the frames of one attach stream (a process's events) to the
// control-plane connection named owner; under the agent's own subjects.
func (a Agent) Attach(owner, stream string) (string, error) {
	p, err := a.Prefix()
	if err != nil {
		return "", err
	}
	if err := validToken(owner); err != nil {
		return "", err
	}
	if err := validToken(stream); err != nil {
		return "", err
	}
	return p + "." + KindAttach + "." + owner + "." + stream, nil
}

// AttachOf is agent.<ws>.*.attach.<owner>.<stream>: one stream's frames
// from whichever agent of workspace ws serves it (a session's backend is
// known once the open was answered); the receiver checks the sender by
// the subject (ParseAttach).
func AttachOf(ws, owner, stream string) (string, error) {
	for _, t := range []string{ws, owner, stream} {
		if err := validToken(t); err != nil {
			return "", err
		}
	}
	return Root + "." + ws + ".*." + KindAttach + "." + owner + "." + stream, nil
}

// ParseAttach is Attach's twin: the agent that sent a stream's frame.
func ParseAttach(subject string) (a Agent, owner, stream string, err error) {
	a, rest, err := Parse(subject)
	if err != nil {
		return Agent{}, "", "", err
	}
	toks := strings.Split(rest, ".")
	if len(toks) != 3 || toks[0] != KindAttach {
		return Agent{}, "", "", fmt.Errorf("%w: %q is not an attach subject", ErrInvalidSubject, subject)
	}
	return a, toks[1], toks[2], nil
}

// AllPipes is agent.*.*.pipe.<owner>.*: what the control plane connection
// named owner subscribes to for the pipe frames of every agent.
func AllPipes(owner string) (string, error) {
	if err := validToken(owner); err != nil {
		return "", err
	}
	return Root + ".*.*." + KindPipe + "." + owner + ".*", nil
}

// ParsePipe is Pipe's twin: it splits agent.<ws>.<agent>.pipe.<owner>.<pipe>.
func ParsePipe(subject string) (a Agent, owner, pipe string, err error) {
	a, rest, err := Parse(subject)
	if err != nil {
		return Agent{}, "", "", err
	}
	toks := strings.Split(rest, ".")
	if len(toks) != 3 || toks[0] != KindPipe {
		return Agent{}, "", "", fmt.Errorf("%w: %q is not a pipe subject", ErrInvalidSubject, subject)
	}
	return a, toks[1], toks[2], nil
}

// Inbox is agent.<ws>.<agent>._inbox: the inbox prefix the agent uses for its
// own requests (the one-daemon probe), inside its own subjects.
func (a Agent) Inbox() (string, error) { return a.Subject("_inbox") }

// AllEvents is agent.*.*.<kind>: what the control plane subscribes to for
// presence events of every agent.
func AllEvents(kind string) (string, error) {
	if err := validToken(kind); err != nil {
		return "", err
	}
	return Root + ".*.*." + kind, nil
}

// AccountDisconnects is $SYS.ACCOUNT.<account>.DISCONNECT: where a NATS
// server with a system account announces every connection of account (an
// nkey public key) that closed. Presence listens there for the agents'
// account. Its twin is ParseAccountDisconnects.
func AccountDisconnects(account string) (string, error) {
	if !isAccountKey(account) {
		return "", fmt.Errorf("%w: account %q", ErrInvalidSubject, account)
	}
	return "$SYS.ACCOUNT." + account + ".DISCONNECT", nil
}

// ParseAccountDisconnects returns the account of a subject
// AccountDisconnects built.
func ParseAccountDisconnects(subject string) (string, error) {
	toks := strings.Split(subject, ".")
	if len(toks) != 4 || toks[0] != "$SYS" || toks[1] != "ACCOUNT" || toks[3] != "DISCONNECT" || !isAccountKey(toks[2]) {
		return "", fmt.Errorf("%w: %q", ErrInvalidSubject, subject)
	}
	return toks[2], nil
}

// isAccountKey reports whether s looks like an nkey account public key: 56
// characters of base32 starting with A (checked in shape only; the
// checksum is nkeys' business).
func isAccountKey(s string) bool {
	if len(s) != 56 || s[0] != 'A' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= 'A' && c <= 'Z' || c >= '2' && c <= '7') {
			return false
		}
	}
	return true
}

// AgentTags are the tags of ag's credentials (its user JWT), "ws:<ws>" and
// "agent:<id>". NATS reports them in its connection events, signed as the
// credentials are, so they tell which agent a connection was. Its twin is
// ParseAgentTags.
func AgentTags(ag Agent) []string { return []string{"ws:" + ag.Workspace, "agent:" + ag.ID} }

// ParseAgentTags finds the agent in a credential's tags (see AgentTags);
// other tags are ignored. Tags that name no agent, or two, are an error.
func ParseAgentTags(tags []string) (Agent, error) {
	var a Agent
	var nws, nid int
	for _, t := range tags {
		if v, ok := strings.CutPrefix(t, "ws:"); ok {
			a.Workspace, nws = v, nws+1
		} else if v, ok := strings.CutPrefix(t, "agent:"); ok {
			a.ID, nid = v, nid+1
		}
	}
	if nws != 1 || nid != 1 {
		return Agent{}, fmt.Errorf("%w: tags %q name no single agent", ErrInvalidSubject, tags)
	}
	if err := a.Validate(); err != nil {
		return Agent{}, err
	}
	return a, nil
}

// Parse splits agent.<ws>.<agent>.<kind>[.more] into the agent and the rest
// (kind and any further tokens joined by dots).
func Parse(subject string) (Agent, string, error) {
	toks := strings.SplitN(subject, ".", 4)
	if len(toks) != 4 || toks[0] != Root {
		return Agent{}, "", fmt.Errorf("%w: %q", ErrInvalidSubject, subject)
	}
	a := Agent{Workspace: toks[1], ID: toks[2]}
	if err := a.Validate(); err != nil {
		return Agent{}, "", fmt.Errorf("%w: %q: %w", ErrInvalidSubject, subject, err)
	}
	for _, t := range strings.Split(toks[3], ".") {
		if err := validToken(t); err != nil {
			return Agent{}, "", fmt.Errorf("%w: %q: %w", ErrInvalidSubject, subject, err)
		}
	}
	return a, toks[3], nil
}

func validToken(t string) error {
	if t == "" {
		return fmt.Errorf("%w: empty token", ErrInvalidSubject)
	}
	for i := 0; i < len(t); i++ {
		c := t[i]
		if c <= ' ' || c == '.' || c == '*' || c == '>' || c >= 0x7f {
			return fmt.Errorf("%w: token %q has %q", ErrInvalidSubject, t, c)
		}
	}
	return nil
}

// Permissions is the exact set of NATS permissions an agent's credentials get.
// There is no response permission: nats-server grants one for the reply
// subject of any message a client receives, including a message it sent to
// itself, so it would let an agent publish anywhere in its account.
type Permissions struct {
	PubAllow []string // publish allowed only here
	SubAllow []string // subscribe allowed only here
}

// AgentPermissions returns the least-privilege permission set for a: publish
// on agent.<ws>.<agent>.> (presence, replies under .reply, its own probe
// inbox), subscribe only to agent.<ws>.<agent>.rpc and its own inbox
// agent.<ws>.<agent>._inbox.>. Never _INBOX.>, never another agent's
// subjects, no responses to arbitrary reply subjects.
func AgentPermissions(a Agent) (Permissions, error) {
	w, err := a.Wildcard()
	if err != nil {
		return Permissions{}, err
	}
	rpc, err := a.RPC()
	if err != nil {
		return Permissions{}, err
	}
	inbox, err := a.Inbox()
	if err != nil {
		return Permissions{}, err
	}
	return Permissions{
		PubAllow: []string{w},
		SubAllow: []string{rpc, inbox + ".>"},
	}, nil
}
