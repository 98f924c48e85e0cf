package wire

import (
	"errors"
	"fmt"
	"net/http"
)

//go:generate go run ./internal/errgen

// Code is the class of an error; one Code maps to one HTTP status. The codes
// and the reasons that refine them are in reasons.json, the one table of
// errors: `go generate ./wire` makes their constants (errors_generated.go)
// and the error tables of PROTOCOL.md and docs/API.md from it.
type Code string

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

// HTTPStatus is the status e maps to: its code's, unless the table gives its
// reason another (405 method_not_allowed, 416 range_not_satisfiable).
func (e *Error) HTTPStatus() int {
	if s, ok := reasonStatus[codeReason{e.Code, e.Reason}]; ok {
		return s
	}
	return HTTPStatus(e.Code)
}

// codeReason keys the reasons whose HTTP status is not their code's.
type codeReason struct {
	code   Code
	reason string
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
