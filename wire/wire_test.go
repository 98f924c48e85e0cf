package wire

import (
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"
)

func TestHTTPStatus(t *testing.T) {
	tests := []struct {
		code Code
		want int
	}{
		{CodeInvalidArgument, http.StatusBadRequest},
		{CodeUnauthenticated, http.StatusUnauthorized},
		{CodePermissionDenied, http.StatusForbidden},
		{CodeNotFound, http.StatusNotFound},
		{CodeConflict, http.StatusConflict},
		{CodePayloadTooLarge, http.StatusRequestEntityTooLarge},
		{CodeInsufficientStorage, http.StatusInsufficientStorage},
		{CodeUnsupported, http.StatusNotImplemented},
		{CodeUnavailable, http.StatusServiceUnavailable},
		{CodeDeadlineExceeded, http.StatusGatewayTimeout},
		{CodeInternal, http.StatusInternalServerError},
		{Code("bogus"), http.StatusInternalServerError},
	}
	for _, tt := range tests {
		t.Run(string(tt.code), func(t *testing.T) {
			if got := HTTPStatus(tt.code); got != tt.want {
				t.Fatalf("HTTPStatus(%s) = %d, want %d", tt.code, got, tt.want)
			}
			if tt.code != "bogus" {
				if got := CodeForStatus(tt.want); got != tt.code {
					t.Fatalf("CodeForStatus(%d) = %s, want %s", tt.want, got, tt.code)
				}
			}
		})
	}
}

// TestErrorHTTPStatus: a reason the table gives its own status has it; every
// other error has its code's.
func TestErrorHTTPStatus(t *testing.T) {
	tests := []struct {
		name string
		err  *Error
		want int
	}{
		{"method_not_allowed", &Error{Code: CodeInvalidArgument, Reason: ReasonMethodNotAllowed}, http.StatusMethodNotAllowed},
		{"range_not_satisfiable", &Error{Code: CodeInvalidArgument, Reason: ReasonRangeNotSatisfiable}, http.StatusRequestedRangeNotSatisfiable},
		{"invalid_id", &Error{Code: CodeInvalidArgument, Reason: ReasonInvalidID}, http.StatusBadRequest},
		{"no reason", &Error{Code: CodeInvalidArgument}, http.StatusBadRequest},
		{"reason under another code", &Error{Code: CodeInternal, Reason: ReasonMethodNotAllowed}, http.StatusInternalServerError},
		{"agent_offline", &Error{Code: CodeUnavailable, Reason: ReasonAgentOffline}, http.StatusServiceUnavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.err.HTTPStatus(); got != tt.want {
				t.Fatalf("%v.HTTPStatus() = %d, want %d", tt.err, got, tt.want)
			}
		})
	}
}

func TestErrorIsAfterRoundTrip(t *testing.T) {
	orig := Errorf(CodeUnavailable, ReasonAgentOffline, "agent %s is offline", "a1")
	if !orig.Retryable {
		t.Fatal("unavailable is not retryable")
	}
	req, err := NewRequest(OpPing, nil, time.Now().Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := DecodeResponse(EncodeError(req.ID, fmt.Errorf("call: %w", orig)))
	if err != nil {
		t.Fatal(err)
	}
	got := resp.Into(nil)
	switch {
	case !errors.Is(got, ErrUnavailable):
		t.Fatalf("%v is not ErrUnavailable", got)
	case !errors.Is(got, &Error{Code: CodeUnavailable, Reason: ReasonAgentOffline}):
		t.Fatalf("%v does not match its reason", got)
	case errors.Is(got, &Error{Code: CodeUnavailable, Reason: ReasonAgentReconnecting}):
		t.Fatalf("%v matches another reason", got)
	case errors.Is(got, ErrNotFound):
		t.Fatalf("%v matches not_found", got)
	}
	if we := AsError(got); we.HTTPStatus() != 503 || we.Message != "call: unavailable/agent_offline: agent a1 is offline" {
		t.Fatalf("AsError = %+v", we)
	}
	if we := AsError(errors.New("boom")); we.Code != CodeInternal {
		t.Fatalf("plain error became %v", we)
	}
}

func TestRequestRoundTrip(t *testing.T) {
	body := &ExecRequest{Argv: []string{"echo", "hi"}, Env: map[string]string{"A": "b"}, Stdin: []byte{0, 0xff}, TimeoutMs: 5}
	req, err := NewRequest(OpExec, body, time.Now().Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	req.Session, req.Epoch, req.IdempotencyKey = "s1", 7, "k1"
	b, err := req.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeRequest(b)
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != req.ID || got.Op != OpExec || got.Epoch != 7 || got.Session != "s1" || got.IdempotencyKey != "k1" || got.Deadline != req.Deadline {
		t.Fatalf("round trip: %+v vs %+v", got, req)
	}
	var eb ExecRequest
	if err := got.DecodeBody(&eb); err != nil {
		t.Fatal(err)
	}
	if eb.Argv[1] != "hi" || eb.Env["A"] != "b" || string(eb.Stdin) != "\x00\xff" {
		t.Fatalf("body: %+v", eb)
	}
	if got.Expired(time.Now()) || !got.Expired(time.Now().Add(2*time.Minute)) {
		t.Fatal("Expired is wrong")
	}
}

func TestDecodeRequestRejects(t *testing.T) {
	good := func() *Request {
		return &Request{Version: Version, ID: "x", Op: OpPing, Deadline: time.Now().Add(time.Second).UnixMilli()}
	}
	tests := []struct {
		name   string
		mutate func(*Request)
		reason string
	}{
		{"wrong version", func(r *Request) { r.Version = 2 }, ReasonVersion},
		{"no id", func(r *Request) { r.ID = "" }, ""},
		{"no op", func(r *Request) { r.Op = "" }, ""},
		{"no deadline", func(r *Request) { r.Deadline = 0 }, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := good()
			tt.mutate(r)
			b, _ := r.Marshal()
			_, err := DecodeRequest(b)
			if !errors.Is(err, &Error{Code: CodeInvalidArgument, Reason: tt.reason}) {
				t.Fatalf("err = %v, want invalid_argument/%s", err, tt.reason)
			}
		})
	}
	if _, err := DecodeRequest([]byte{0xc1}); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("garbage: %v", err)
	}
}

func TestExecValidate(t *testing.T) {
	tests := []struct {
		name string
		req  ExecRequest
		ok   bool
	}{
		{"argv", ExecRequest{Argv: []string{"true"}}, true},
		{"command", ExecRequest{Command: "true"}, true},
		{"neither", ExecRequest{}, false},
		{"both", ExecRequest{Argv: []string{"x"}, Command: "y"}, false},
		{"empty argv0", ExecRequest{Argv: []string{""}}, false},
		{"negative timeout", ExecRequest{Command: "x", TimeoutMs: -1}, false},
		{"negative cap", ExecRequest{Command: "x", OutputCap: -1}, false},
		{"24 h timeout", ExecRequest{Command: "x", TimeoutMs: MaxExecTimeoutMs}, true},
		{"over 24 h timeout", ExecRequest{Command: "x", TimeoutMs: MaxExecTimeoutMs + 1}, false},
		{"NUL in argv", ExecRequest{Argv: []string{"echo", "\x00"}}, false},
		{"NUL in cwd", ExecRequest{Command: "x", Cwd: "\x00"}, false},
		{"NUL in env", ExecRequest{Command: "x", Env: map[string]string{"A": "\x00"}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.req.Validate()
			if (err == nil) != tt.ok {
				t.Fatalf("Validate = %v, want ok=%v", err, tt.ok)
			}
		})
	}
}

// Normalize is the one place exec's defaults are applied: both the control
// plane and the agent get the same request from it.
func TestExecNormalize(t *testing.T) {
	tests := []struct {
		name        string
		req         ExecRequest
		maxCap      int
		wantTimeout int64
		wantCap     int
	}{
		{"defaults", ExecRequest{Command: "x"}, 0, DefaultExecTimeoutMs, DefaultOutputCap},
		{"default cap lowered to the bound", ExecRequest{Command: "x"}, 1000, DefaultExecTimeoutMs, 1000},
		{"asked cap kept", ExecRequest{Command: "x", OutputCap: 10, TimeoutMs: 5}, 1000, 5, 10},
		{"asked cap clamped", ExecRequest{Command: "x", OutputCap: 5000}, 1000, DefaultExecTimeoutMs, 1000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := tt.req
			if err := req.Normalize(tt.maxCap); err != nil {
				t.Fatal(err)
			}
			if req.TimeoutMs != tt.wantTimeout || req.OutputCap != tt.wantCap {
				t.Fatalf("timeoutMs %d, cap %d; want %d, %d", req.TimeoutMs, req.OutputCap, tt.wantTimeout, tt.wantCap)
			}
		})
	}
	bad := ExecRequest{}
	if err := bad.Normalize(0); AsError(err).Code != CodeInvalidArgument {
		t.Fatalf("Normalize of an empty request = %v, want invalid_argument", err)
	}
}

func TestMutates(t *testing.T) {
	if Mutates(OpPing) || Mutates(OpCapabilities) {
		t.Fatal("reads marked as mutations")
	}
	if !Mutates(OpExec) || !Mutates("never.heard.of") {
		t.Fatal("mutations or unknown ops marked as reads")
	}
}

func TestMaxExecOutput(t *testing.T) {
	tests := []struct {
		maxPayload int64
		want       int
	}{
		{0, DefaultOutputCap},
		{1 << 20, (1<<20 - ExecReplyReserve) / 2},
		{8 << 20, (8<<20 - ExecReplyReserve) / 2},
		{64 << 10, 16 << 10},
	}
	for _, tt := range tests {
		got := MaxExecOutput(tt.maxPayload)
		if got != tt.want {
			t.Errorf("MaxExecOutput(%d) = %d, want %d", tt.maxPayload, got, tt.want)
		}
		// Two full streams fit with the reserve, or (a tiny payload) in half of it.
		fits := int64(2*got+ExecReplyReserve) <= tt.maxPayload || int64(2*got) <= tt.maxPayload/2
		if tt.maxPayload > 0 && !fits {
			t.Errorf("MaxExecOutput(%d) = %d: two full streams do not fit", tt.maxPayload, got)
		}
	}
}

// A build serves its own protocol and the one before, nothing else.
func TestSpeaks(t *testing.T) {
	for _, tc := range []struct {
		v, version, oldest int
		want               bool
	}{
		{1, 1, 1, true},
		{0, 1, 1, false}, // before versioned hellos
		{2, 1, 1, false}, // newer than this build
		{2, 2, 1, true},
		{1, 2, 1, true}, // one behind
		{0, 2, 1, false},
		{3, 3, 2, true},
		{1, 3, 2, false}, // two behind
	} {
		if got := speaks(tc.v, tc.version, tc.oldest); got != tc.want {
			t.Errorf("speaks(%d) at version %d, oldest %d = %v, want %v", tc.v, tc.version, tc.oldest, got, tc.want)
		}
	}
	if !Speaks(Version) || OldestVersion < Version-1 || OldestVersion > Version {
		t.Fatalf("Version %d, OldestVersion %d: a build must serve its own and at most one older", Version, OldestVersion)
	}
}

// A request goes in the older of the two protocols when the peer's is
// served, else in the sender's own.
func TestSendVersion(t *testing.T) {
	for _, tc := range []struct{ peer, version, oldest, want int }{
		{1, 1, 1, 1},
		{1, 2, 1, 1}, // one behind: its own
		{2, 2, 1, 2},
		{0, 2, 1, 2}, // said nothing: taken as current
		{3, 2, 1, 2}, // newer: refused before sending; never above ours
		{1, 3, 2, 3}, // two behind: not served
	} {
		if got := SendVersion(tc.peer, tc.version, tc.oldest); got != tc.want {
			t.Errorf("SendVersion(%d) at version %d, oldest %d = %d, want %d", tc.peer, tc.version, tc.oldest, got, tc.want)
		}
	}
	if VersionFor(Version) != Version || VersionFor(OldestVersion) != OldestVersion {
		t.Fatal("VersionFor of a served peer is not its own protocol")
	}
}
