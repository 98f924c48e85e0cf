package controlplane

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"reflect"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/outposthq/outpost/controlplane/client"
	"github.com/outposthq/outpost/wire"
)

// Body limits.
const (
	maxJSONBody = 64 << 10 // every JSON body but exec's
	maxExecBody = 8 << 20  // exec carries stdin
)

// handlerFunc is an HTTP handler that returns its error instead of writing
// it; serve writes it with writeError, the one place errors become responses.
type handlerFunc func(w http.ResponseWriter, r *http.Request) error

// writeError writes err as {"error":{"code","reason","message","retryable"}}
// with the status of its code. Internal errors are logged.
func writeError(log *slog.Logger, w http.ResponseWriter, r *http.Request, err error) {
	if u := stateUnavailable(err); u != nil {
		if log != nil {
			log.Warn("state unavailable", "method", r.Method, "path", r.URL.Path, "err", err)
		}
		err = u
	}
	body := client.NewErrorBody(err)
	status := body.Error.Err().HTTPStatus()
	if status >= 500 && body.Error.Code != wire.CodeUnavailable && log != nil {
		log.Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	writeJSON(w, status, body)
}

// writeJSON writes v as a JSON response with status.
// The body (json.Marshal's, and a newline) is encoded into a pooled
// buffer: every call answers through here, and a new slice for each body
// was a share of what a call allocated.
func writeJSON(w http.ResponseWriter, status int, v any) {
	jb := jsonBuffers.Get().(*jsonBuffer)
	defer jb.put()
	jb.buf.Reset()
	if err := jb.enc.Encode(v); err != nil {
		status = http.StatusInternalServerError
		jb.buf.Reset()
		jb.buf.WriteString(`{"error":{"code":"internal","reason":"","message":"encode response","retryable":false}}` + "\n")
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(jb.buf.Len()))
	w.WriteHeader(status)
	_, _ = w.Write(jb.buf.Bytes())
}

// jsonBuffer is a buffer of writeJSON's and its encoder.
type jsonBuffer struct {
	buf bytes.Buffer
	enc *json.Encoder
}

// jsonBuffers holds writeJSON's buffers.
var jsonBuffers = sync.Pool{New: func() any {
	jb := new(jsonBuffer)
	jb.enc = json.NewEncoder(&jb.buf)
	return jb
}}

// maxPooledJSON is the largest buffer writeJSON keeps for reuse: a long
// list's buffer is left to the collector rather than held by the pool.
const maxPooledJSON = 64 << 10

func (jb *jsonBuffer) put() {
	if jb.buf.Cap() <= maxPooledJSON {
		jsonBuffers.Put(jb)
	}
}

// decodeJSON reads a JSON body of at most limit bytes into v. An empty body
// leaves v as it is (every field optional); an oversized one is
// payload_too_large, a malformed one, or one with a key that names no
// field (see checkFields), invalid_argument.
func decodeJSON(w http.ResponseWriter, r *http.Request, limit int64, v any) error {
	if r.ContentLength > limit {
		return wire.Errorf(wire.CodePayloadTooLarge, "", "request body is %d bytes, at most %d allowed", r.ContentLength, limit)
	}
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		return bodyReadError(err, limit)
	}
	// The body is in: the rest of the call does not wait on the client
	// (see unauthenticatedBodyTimeout).
	_ = http.NewResponseController(w).SetReadDeadline(time.Time{})
	dec := json.NewDecoder(bytes.NewReader(data))
	err = dec.Decode(v)
	if err == nil {
		// Exactly one JSON value.
		var extra json.RawMessage
		if err = dec.Decode(&extra); err == io.EOF {
			return checkFields(data, reflect.TypeOf(v))
		}
		if err == nil {
			return wire.Errorf(wire.CodeInvalidArgument, "", "request body has data after the JSON object")
		}
	}
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.Is(err, io.EOF):
		return nil
	case errors.As(err, &syn):
		return wire.Errorf(wire.CodeInvalidArgument, "", "request body is not valid JSON: %v (at byte %d)", err, syn.Offset)
	case errors.As(err, &typ):
		return wire.Errorf(wire.CodeInvalidArgument, "", "request body: field %q must be %s, not JSON %s", typ.Field, typ.Type, typ.Value)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return wire.Errorf(wire.CodeInvalidArgument, "", "request body is truncated JSON")
	default:
		return wire.Errorf(wire.CodeInvalidArgument, "", "request body: %v", err)
	}
}

// bodyReadError is the error of a request body that could not be read.
func bodyReadError(err error, limit int64) error {
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return wire.Errorf(wire.CodePayloadTooLarge, "", "request body is larger than %d bytes", limit)
	case errors.Is(err, os.ErrDeadlineExceeded):
		return wire.Errorf(wire.CodeInvalidArgument, wire.ReasonBodyTimeout, "request body did not arrive within %s", unauthenticatedBodyTimeout)
	default:
		return wire.Errorf(wire.CodeInvalidArgument, "", "read request body: %v", err)
	}
}

// errorMux makes ServeMux's own 404 and 405 answers JSON errors.
type errorMux struct {
	mux *http.ServeMux
	log *slog.Logger
}

func (m errorMux) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h, pattern := m.mux.Handler(r)
	if pattern != "" {
		m.mux.ServeHTTP(w, r)
		return
	}
	// No route matched: ask the mux which answer it would give, then give
	// it as a JSON error.
	rec := &statusRecorder{header: http.Header{}}
	h.ServeHTTP(rec, r)
	switch rec.status {
	case http.StatusMethodNotAllowed:
		if allow := rec.header.Get("Allow"); allow != "" {
			w.Header().Set("Allow", allow)
		}
		// 405 keeps its HTTP meaning (the table gives the reason its own
		// status); the body is the usual error shape.
		writeError(m.log, w, r, wire.Errorf(wire.CodeInvalidArgument,
			wire.ReasonMethodNotAllowed, "%s is not allowed on %s", r.Method, r.URL.Path))
	case http.StatusMovedPermanently, http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		for k, v := range rec.header {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.status)
	default:
		writeError(m.log, w, r, wire.Errorf(wire.CodeNotFound, wire.ReasonNoRoute, "no route for %s %s", r.Method, r.URL.Path))
	}
}

// statusRecorder records the status and headers of ServeMux's fallback
// handlers; their bodies are dropped.
type statusRecorder struct {
	header http.Header
	status int
}

func (s *statusRecorder) Header() http.Header { return s.header }
func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
}
func (s *statusRecorder) Write(b []byte) (int, error) {
	s.WriteHeader(http.StatusOK)
	return len(b), nil
}

// stateUnavailable turns a failure to reach NATS or JetStream, which is
// not the caller's fault and passes, into 503 unavailable; nil for any other
// error (those already carrying a wire code keep it).
func stateUnavailable(err error) error {
	var we *wire.Error
	if errors.As(err, &we) {
		return nil
	}
	var api *jetstream.APIError
	switch {
	case errors.Is(err, nats.ErrNoResponders), errors.Is(err, nats.ErrTimeout),
		errors.Is(err, nats.ErrConnectionClosed), errors.Is(err, nats.ErrConnectionReconnecting),
		errors.Is(err, nats.ErrDisconnected), errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, jetstream.ErrNoStreamResponse), errors.Is(err, jetstream.ErrJetStreamNotEnabled):
	case errors.As(err, &api) && api.Code == http.StatusServiceUnavailable:
	default:
		return nil
	}
	return wire.Errorf(wire.CodeUnavailable, wire.ReasonStateUnavailable, "control plane state is unavailable, retry: %v", err)
}
