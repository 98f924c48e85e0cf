package wire

import (
	"errors"
	"fmt"
	"net/http"
)

// Code is the class of an error; one Code maps to one HTTP status.
type Code string

// The error codes of DESIGN.md. Every error that crosses a boundary (agent →
// control plane → HTTP) carries one of these.
const (
	CodeInvalidArgument  Code = "invalid_argument"
	CodeUnauthenticated  Code = "unauthenticated"
	CodePermissionDenied Code = "permission_denied"
	CodeNotFound         Code = "not_found"
	CodeConflict         Code = "conflict"
	CodePayloadTooLarge  Code = "payload_too_large"
	// CodeInsufficientStorage: the agent's disk (or a quota) is full; the
	// operation wrote nothing that stays.
	CodeInsufficientStorage Code = "insufficient_storage"
	CodeUnsupported         Code = "unsupported"
	CodeUnavailable         Code = "unavailable"
	CodeDeadlineExceeded    Code = "deadline_exceeded"
	CodeInternal            Code = "internal"
)

// Reasons used across packages. A reason refines a code; callers may switch on
// it, so keep these stable.
const (
	ReasonAgentOffline       = "agent_offline"
	ReasonAgentReconnecting  = "agent_reconnecting"
	ReasonNotRunning         = "not_running"
	ReasonOutcomeUnknown     = "outcome_unknown"
	ReasonOutsideRoot        = "outside_root"
	ReasonExecutableNotFound = "executable_not_found"
	ReasonAlreadyExists      = "already_exists"
	ReasonEpochMismatch      = "epoch_mismatch"
	ReasonFenced             = "fenced"
	ReasonDeadlinePassed     = "deadline_passed"
	ReasonNotEmpty           = "not_empty"
	ReasonNotATTY            = "not_a_tty"
	ReasonUnknownOp          = "unknown_op"
	ReasonVersion            = "protocol_version"
	ReasonBusy               = "busy"
	ReasonKeyInUse           = "key_in_use"
)

// Error is the one error type that travels on the wire and over HTTP.
type Error struct {
	Code      Code   `msgpack:"code" json:"code"`
	Reason    string `msgpack:"reason,omitempty" json:"reason,omitempty"`
	Message   string `msgpack:"message,omitempty" json:"message,omitempty"`
	Retryable bool   `msgpack:"retryable,omitempty" json:"retryable"`
}

// Error renders "code/reason: message".
func (e *Error) Error() string {
	s := string(e.Code)
	if e.Reason != "" {
		s += "/" + e.Reason
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

// Is reports whether target is an *Error with the same code and, when target has
// one, the same reason. So errors.Is(err, wire.ErrNotFound) works after decoding,
// and errors.Is(err, &wire.Error{Code: CodeUnavailable, Reason: ReasonAgentOffline})
// matches the reason too.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	if !ok {
		return false
	}
	return t.Code == e.Code && (t.Reason == "" || t.Reason == e.Reason)
}

// HTTPStatus is the status the code maps to.
func (e *Error) HTTPStatus() int { return HTTPStatus(e.Code) }

// Sentinels to compare with errors.Is; they match any error of their code.
var (
	ErrInvalidArgument     = &Error{Code: CodeInvalidArgument}
	ErrUnauthenticated     = &Error{Code: CodeUnauthenticated}
	ErrPermissionDenied    = &Error{Code: CodePermissionDenied}
	ErrNotFound            = &Error{Code: CodeNotFound}
	ErrConflict            = &Error{Code: CodeConflict}
	ErrPayloadTooLarge     = &Error{Code: CodePayloadTooLarge}
	ErrInsufficientStorage = &Error{Code: CodeInsufficientStorage}
	ErrUnsupported         = &Error{Code: CodeUnsupported}
	ErrUnavailable         = &Error{Code: CodeUnavailable}
	ErrDeadlineExceeded    = &Error{Code: CodeDeadlineExceeded}
	ErrInternal            = &Error{Code: CodeInternal}
)

var statusOf = map[Code]int{
	CodeInvalidArgument:     http.StatusBadRequest,
	CodeUnauthenticated:     http.StatusUnauthorized,
	CodePermissionDenied:    http.StatusForbidden,
	CodeNotFound:            http.StatusNotFound,
	CodeConflict:            http.StatusConflict,
	CodePayloadTooLarge:     http.StatusRequestEntityTooLarge,
	CodeInsufficientStorage: http.StatusInsufficientStorage,
	CodeUnsupported:         http.StatusNotImplemented,
	CodeUnavailable:         http.StatusServiceUnavailable,
	CodeDeadlineExceeded:    http.StatusGatewayTimeout,
	CodeInternal:            http.StatusInternalServerError,
}

// HTTPStatus maps a code to its HTTP status; an unknown code is 500.
func HTTPStatus(c Code) int {
	if s, ok := statusOf[c]; ok {
		return s
	}
	return http.StatusInternalServerError
}

// CodeForStatus is the inverse of HTTPStatus, for clients decoding a response
// without a JSON error body.
func CodeForStatus(status int) Code {
	for c, s := range statusOf {
		if s == status {
			return c
		}
	}
	return CodeInternal
}

// Errorf makes an *Error with a formatted message. Unavailable errors are
// retryable.
func Errorf(code Code, reason, format string, args ...any) *Error {
	return &Error{Code: code, Reason: reason, Message: fmt.Sprintf(format, args...), Retryable: code == CodeUnavailable}
}

// AsError returns err as an *Error: itself if it (or something it wraps) is one,
// else an internal error with err's message.
func AsError(err error) *Error {
	if err == nil {
		return nil
	}
	var we *Error
	if errors.As(err, &we) {
		if we.Message == "" || err.Error() == we.Error() {
			return we
		}
		// Keep the wrapping context in the message.
		c := *we
		c.Message = err.Error()
		return &c
	}
	return &Error{Code: CodeInternal, Message: err.Error()}
}
