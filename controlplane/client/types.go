package client

import (
	"time"

	"github.com/outposthq/outpost/wire"
)

// The JSON bodies of the HTTP API (API.md). The control plane encodes and
// decodes these same types, so the two sides cannot drift apart.

// Health is the body of GET /healthz.
type Health struct {
	Status string `json:"status"`
}

// CreateWorkspaceRequest is the body of POST /v1/workspaces.
type CreateWorkspaceRequest struct {
	ID string `json:"id"`
}

// Workspace is a workspace as the API returns it.
type Workspace struct {
	ID        string    `json:"id"`
	CreatedAt time.Time `json:"createdAt"`
	// AgentUpdates says whether the workspace's agents update themselves
	// from the control plane's releases (default true).
	AgentUpdates bool `json:"agentUpdates"`
}

// WorkspacePatch is the body of PATCH /v1/workspaces/{ws}: the settings to
// change (absent: unchanged).
type WorkspacePatch struct {
	AgentUpdates *bool `json:"agentUpdates,omitempty"`
}

// CreateKeyRequest is the body of POST /v1/workspaces/{ws}/keys; it has no
// fields yet.
type CreateKeyRequest struct{}

// Key is a new workspace API key: its id (to list and delete it) and its
// token, shown once; the control plane keeps only the token's hash.
type Key struct {
	ID    string `json:"id"`
	Token string `json:"token"`
}

// KeyInfo is a workspace key as GET /v1/workspaces/{ws}/keys lists it,
// never with its token. LastUsed (absent when never used) lags the last
// call by up to a minute.
type KeyInfo struct {
	ID        string    `json:"id"`
	CreatedAt time.Time `json:"createdAt"`
	LastUsed  time.Time `json:"lastUsed,omitzero"`
}

// KeyList is the body of GET /v1/workspaces/{ws}/keys.
type KeyList struct {
	Keys []KeyInfo `json:"keys"`
}

// EnrollmentTokenRequest is the body of POST
// /v1/workspaces/{ws}/enrollment-tokens. Agent names the agent id the token
// enrolls (an existing id rotates its credentials); Pool enrolls into a pool.
// TTLSeconds 0 means the default, 900.
type EnrollmentTokenRequest struct {
	Agent      string `json:"agent,omitempty"`
	Pool       string `json:"pool,omitempty"`
	TTLSeconds int64  `json:"ttlSeconds,omitempty"`
}

// EnrollmentToken is a new single-use enrollment token, shown once, with
// its id (to list and delete it).
type EnrollmentToken struct {
	ID        string    `json:"id"`
	Token     string    `json:"token"`
	ExpiresAt time.Time `json:"expiresAt"`
	// CASHA256 is the hex SHA-256 of the control plane's CA certificate
	// (DER), for the agent to pin, when the CA is not publicly trusted.
	CASHA256 string `json:"caSha256,omitempty"`
	// EnrollCommand is the exact line to paste on the machine.
	EnrollCommand string `json:"enrollCommand"`
}

// EnrollmentTokenInfo is an enrollment token that can still enroll, as GET
// /v1/workspaces/{ws}/enrollment-tokens lists it, never with its token.
type EnrollmentTokenInfo struct {
	ID        string    `json:"id"`
	Agent     string    `json:"agent,omitempty"`
	Pool      string    `json:"pool,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
	ExpiresAt time.Time `json:"expiresAt"`
}

// EnrollmentTokenList is the body of GET
// /v1/workspaces/{ws}/enrollment-tokens.
type EnrollmentTokenList struct {
	Tokens []EnrollmentTokenInfo `json:"tokens"`
}

// Agent statuses.
const (
	StatusOnline       = "online"
	StatusReconnecting = "reconnecting"
	StatusOffline      = "offline"
)

// Agent is an enrolled agent with its presence and the facts of its latest
// hello. LastSeen is absent when the agent never connected.
type Agent struct {
	ID           string          `json:"id"`
	Name         string          `json:"name"`
	Pool         string          `json:"pool"`
	Status       string          `json:"status"`
	LastSeen     time.Time       `json:"lastSeen,omitzero"`
	Version      string          `json:"version"`
	OS           string          `json:"os"`
	Arch         string          `json:"arch"`
	Hostname     string          `json:"hostname"`
	Capabilities map[string]bool `json:"capabilities"`
	EnrolledAt   time.Time       `json:"enrolledAt,omitzero"`
	// Protocol is the wire protocol the agent's hello said it speaks (0:
	// not known yet, or an agent from before versioned hellos).
	Protocol int `json:"protocol,omitempty"`
	// StatusDetail says what is wrong with an agent that cannot be served:
	// one too old for this control plane's protocol.
	StatusDetail string `json:"statusDetail,omitempty"`
	// Paused is true while the machine's owner has paused the agent: it is
	// online, and answers every call 503 agent_paused.
	Paused bool `json:"paused"`
	// Policy summarizes the machine owner's policy file, when it has one
	// (capabilities then say "policy": true).
	Policy *wire.PolicySummary `json:"policy,omitempty"`
}

// AgentList is the body of GET /v1/workspaces/{ws}/agents.
type AgentList struct {
	Agents []Agent `json:"agents"`
}

// ExecRequest is the body of POST {target}/exec: Argv or Command (run by the
// agent's shell), and optionally Cwd (relative to the agent's root), Env,
// Stdin as text or StdinBase64 as exact bytes, TimeoutMs (default 60000) and
// OutputCap in bytes per stream (default 1 MiB; at most what one reply can
// carry, both streams within the NATS max payload: 4 MiB less 32 KiB on the
// embedded server, else 400).
type ExecRequest struct {
	Argv        []string          `json:"argv,omitempty"`
	Command     string            `json:"command,omitempty"`
	Cwd         string            `json:"cwd,omitempty"`
	Env         map[string]string `json:"env,omitempty"`
	Stdin       string            `json:"stdin,omitempty"`
	StdinBase64 string            `json:"stdinBase64,omitempty"`
	TimeoutMs   int64             `json:"timeoutMs,omitempty"`
	OutputCap   int               `json:"outputCap,omitempty"`
}

// ExecResult is the result of exec, the SDK's one type for it. From
// Target.Exec, Stdout and Stderr are UTF-8 text with invalid bytes replaced
// by U+FFFD (the HTTP body as is); from Target.ExecBytes they hold the exact
// bytes (the HTTP body of ?encoding=base64, decoded). A timed-out command
// has ExitCode 124 and TimedOut set.
type ExecResult struct {
	ExitCode   int    `json:"exitCode"`
	Stdout     string `json:"stdout"`
	Stderr     string `json:"stderr"`
	TimedOut   bool   `json:"timedOut"`
	Truncated  bool   `json:"truncated"`
	DurationMs int64  `json:"durationMs"`
}

// ErrorBody is the body of every error response:
// {"error":{"code","reason","message","retryable"}}.
type ErrorBody struct {
	Error *ErrorDetail `json:"error"`
}

// ErrorDetail is a wire.Error in JSON, every field present.
type ErrorDetail struct {
	Code      wire.Code `json:"code"`
	Reason    string    `json:"reason"`
	Message   string    `json:"message"`
	Retryable bool      `json:"retryable"`
}

// NewErrorBody renders err (any error; see wire.AsError) as an error body.
func NewErrorBody(err error) ErrorBody {
	we := wire.AsError(err)
	return ErrorBody{Error: &ErrorDetail{Code: we.Code, Reason: we.Reason, Message: we.Message, Retryable: we.Retryable}}
}

// Err is the detail as a *wire.Error.
func (d *ErrorDetail) Err() *wire.Error {
	return &wire.Error{Code: d.Code, Reason: d.Reason, Message: d.Message, Retryable: d.Retryable}
}

// DeviceApprovalRequest is the body of POST
// /v1/workspaces/{ws}/device-approvals: approve (or, with Deny, refuse) the
// device login showing UserCode. Agent names the agent id it enrolls (an
// enrolled one gets new credentials); Pool enrolls it into a pool. Without
// Agent the machine's name is its id when free, else one is made.
type DeviceApprovalRequest struct {
	UserCode string `json:"userCode"`
	Agent    string `json:"agent,omitempty"`
	Pool     string `json:"pool,omitempty"`
	Deny     bool   `json:"deny,omitempty"`
}

// DeviceApproval is a device login as a person approving it sees it: the
// machine that asked (name, hostname, OS, arch, the address it asked from)
// and, once decided, the outcome. State is "pending", "approved" or
// "denied". CASHA256 is the control plane's CA fingerprint, which the
// machine printed too: they must match.
type DeviceApproval struct {
	UserCode   string    `json:"userCode"`
	State      string    `json:"state"`
	Name       string    `json:"name,omitempty"`
	Hostname   string    `json:"hostname,omitempty"`
	OS         string    `json:"os,omitempty"`
	Arch       string    `json:"arch,omitempty"`
	RemoteAddr string    `json:"remoteAddr,omitempty"`
	PublicKey  string    `json:"publicKey"`
	CreatedAt  time.Time `json:"createdAt"`
	ExpiresAt  time.Time `json:"expiresAt"`
	Workspace  string    `json:"workspace,omitempty"`
	Agent      string    `json:"agent,omitempty"`
	Pool       string    `json:"pool,omitempty"`
	CASHA256   string    `json:"caSha256,omitempty"`
}
