package wire

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/vmihailenco/msgpack/v5"
)

// Version is the protocol version this build speaks. An agent refuses a
// request of a version it does not speak (see Speaks) with
// invalid_argument/protocol_version.
const Version = 1

// OldestVersion is the oldest protocol this build still serves: a control
// plane serves agents one version behind its own (Version-1 from protocol 2
// on), and refuses older ones with unsupported/agent_too_old; an agent
// answers a control plane one version behind. Protocol 0 is an agent from
// before hellos carried the version.
const OldestVersion = 1

// Speaks reports whether a build of protocol Version serves a peer of
// protocol v: from OldestVersion up to Version.
func Speaks(v int) bool { return speaks(v, Version, OldestVersion) }

func speaks(v, version, oldest int) bool { return v >= oldest && v <= version }

// VersionFor is the protocol to send a request in to a peer whose hello
// said protocol peer: the older of the two when this build serves it, so
// that an agent one version behind understands the control plane. A peer
// this build does not serve, or one that said nothing (0), gets Version
// (it is refused before anything is sent, or taken as current).
func VersionFor(peer int) int { return SendVersion(peer, Version, OldestVersion) }

// SendVersion is VersionFor for a build of protocol version that serves
// peers down to oldest.
func SendVersion(peer, version, oldest int) int {
	if speaks(peer, version, oldest) {
		return min(peer, version)
	}
	return version
}

// Request is the envelope of every request to an agent.
type Request struct {
	Version int    `msgpack:"v"`
	ID      string `msgpack:"id"`
	Op      string `msgpack:"op"`
	// Deadline is absolute, in Unix milliseconds. The agent refuses a request
	// whose deadline has passed: it never runs stale work.
	Deadline int64 `msgpack:"dl"`
	// Session and Epoch fence hot-swapped sessions: the agent refuses a request
	// whose epoch is older than the highest it has seen for the session.
	Session string `msgpack:"ss,omitempty"`
	Epoch   uint64 `msgpack:"ep,omitempty"`
	// StartBy, when set, is the latest time (Unix milliseconds) the agent may
	// start the request. A request that waited longer, in the socket of a
	// frozen or cut-off agent, is refused like a passed deadline: its caller
	// has meanwhile been told 503 and may have sent it elsewhere.
	StartBy int64 `msgpack:"sb,omitempty"`
	// IdempotencyKey names a mutation so that a repeated delivery is not run twice.
	IdempotencyKey string             `msgpack:"ik,omitempty"`
	Body           msgpack.RawMessage `msgpack:"b,omitempty"`
}

// Response is the envelope of every reply: the request's id and either a
// result or an error.
type Response struct {
	ID     string             `msgpack:"id"`
	Result msgpack.RawMessage `msgpack:"r,omitempty"`
	Error  *Error             `msgpack:"err,omitempty"`
}

// NewID returns a random request id (16 hex characters).
func NewID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// NewRequest builds a request for op with body, due by deadline, with a fresh id.
func NewRequest(op string, body any, deadline time.Time) (*Request, error) {
	r := &Request{Version: Version, ID: NewID(), Op: op, Deadline: deadline.UnixMilli()}
	if body != nil {
		b, err := Marshal(body)
		if err != nil {
			return nil, fmt.Errorf("encode %s body: %w", op, err)
		}
		r.Body = b
	}
	return r, nil
}

// DeadlineTime is the request's deadline as a time.
func (r *Request) DeadlineTime() time.Time { return time.UnixMilli(r.Deadline) }

// Expired reports whether the deadline has passed at now.
func (r *Request) Expired(now time.Time) bool { return now.UnixMilli() >= r.Deadline }

// Late reports whether the request's start-by time, if any, has passed at now.
func (r *Request) Late(now time.Time) bool { return r.StartBy != 0 && now.UnixMilli() > r.StartBy }

// Marshal encodes the request.
func (r *Request) Marshal() ([]byte, error) { return Marshal(r) }

// EncodeRequest encodes r with body as its body, written straight into the
// envelope in one buffer sized from body's hint: a chunk's megabytes are not
// encoded once and then copied into the envelope. The bytes are those of
// r.Marshal() after NewRequest(r.Op, body, ...). r must have no Body.
func EncodeRequest(r *Request, body any) ([]byte, error) {
	if body == nil {
		return r.Marshal()
	}
	if len(r.Body) != 0 {
		return nil, errors.New("wire: request has a body already")
	}
	size := len(r.ID) + len(r.Op) + len(r.Session) + len(r.IdempotencyKey) + envelopeSlack
	if h, ok := body.(sizeHinter); ok {
		size += h.sizeHint()
	}
	var buf bytes.Buffer
	buf.Grow(size)
	enc := newEncoder(&buf)
	defer msgpack.PutEncoder(enc)
	// The envelope's fields, then the body's key and the body: the map's
	// header counts them (envelope_map.go).
	fields := requestFields(r)
	err := writeMapHead(enc, fields[:], requestBodyKey)
	if p, ok := body.(inPlacer); ok && err == nil {
		b, err := encodeInPlace(&buf, enc, p.InPlaceBody())
		if err != nil {
			return nil, fmt.Errorf("encode %s body: %w", r.Op, err)
		}
		return b, nil
	}
	if err == nil {
		err = enc.Encode(body)
	}
	if err != nil {
		return nil, fmt.Errorf("encode %s body: %w", r.Op, err)
	}
	return buf.Bytes(), nil
}

// DecodeBody decodes the body into v; a malformed body is invalid_argument.
func (r *Request) DecodeBody(v any) error {
	if len(r.Body) == 0 {
		return nil
	}
	if err := Unmarshal(r.Body, v); err != nil {
		return Errorf(CodeInvalidArgument, "", "decode %s body: %v", r.Op, err)
	}
	return nil
}

// DecodeRequest decodes and validates a request envelope. Every error is an
// invalid_argument *Error. The body aliases data (a chunk is not copied on
// its way through the envelope): do not change data afterwards.
func DecodeRequest(data []byte) (*Request, error) {
	var r Request
	rest, body, err := splitField(data, "b")
	if err == nil {
		err = Unmarshal(rest, &r)
	}
	if err != nil {
		return nil, Errorf(CodeInvalidArgument, "", "decode request: %v", err)
	}
	if body != nil {
		r.Body = decodedRaw(body)
	}
	switch {
	case !Speaks(r.Version):
		return &r, Errorf(CodeInvalidArgument, ReasonVersion, "protocol version %d, this agent speaks %d to %d", r.Version, OldestVersion, Version)
	case r.ID == "" || len(r.ID) > 128:
		return &r, Errorf(CodeInvalidArgument, "", "request id must be 1 to 128 characters")
	case r.Op == "" || len(r.Op) > 64:
		return &r, Errorf(CodeInvalidArgument, "", "op must be 1 to 64 characters")
	case r.Deadline <= 0:
		return &r, Errorf(CodeInvalidArgument, "", "request has no deadline")
	}
	return &r, nil
}

// EncodeResult encodes a successful reply to request id. The result is
// encoded straight into the envelope, in one buffer sized from v's hint: a
// reply carrying megabytes of output or file data is neither copied nor grown
// on its way out.
func EncodeResult(id string, v any) ([]byte, error) {
	if v == nil {
		return Marshal(&Response{ID: id})
	}
	var buf bytes.Buffer
	size := len(id) + envelopeSlack
	if h, ok := v.(sizeHinter); ok {
		size += h.sizeHint()
	}
	buf.Grow(size)
	enc := newEncoder(&buf)
	defer msgpack.PutEncoder(enc)
	// The same map Marshal(&Response{ID: id, Result: <v>}) writes.
	fields := responseFields(id)
	err := writeMapHead(enc, fields[:], responseResultKey)
	if p, ok := v.(inPlacer); ok && err == nil {
		b, err := encodeInPlace(&buf, enc, p.InPlaceBody())
		if err != nil {
			return nil, fmt.Errorf("encode result: %w", err)
		}
		return b, nil
	}
	if err == nil {
		err = enc.Encode(v)
	}
	if err != nil {
		return nil, fmt.Errorf("encode result: %w", err)
	}
	return buf.Bytes(), nil
}

// EncodeError encodes a failed reply to request id; err becomes an *Error.
func EncodeError(id string, err error) []byte {
	b, mErr := Marshal(&Response{ID: id, Error: AsError(err)})
	if mErr != nil {
		// Only a bug gets here: an *Error always encodes.
		b, _ = Marshal(&Response{ID: id, Error: &Error{Code: CodeInternal, Message: "encode error reply"}})
	}
	return b
}

// DecodeResponse decodes a reply envelope. The result aliases data, as in
// DecodeRequest.
func DecodeResponse(data []byte) (*Response, error) {
	var r Response
	rest, result, err := splitField(data, "r")
	if err == nil {
		err = Unmarshal(rest, &r)
	}
	if err != nil {
		return nil, Errorf(CodeInternal, ReasonBadReply, "decode reply: %v", err)
	}
	if result != nil {
		r.Result = decodedRaw(result)
	}
	if r.Error != nil && r.Error.Code == "" {
		r.Error.Code = CodeInternal
	}
	return &r, nil
}

// Into returns the reply's error, or decodes its result into v (v may be
// nil). The data of an FsReadResult or a ProcReadResult aliases the reply.
func (r *Response) Into(v any) error {
	if r.Error != nil {
		return r.Error
	}
	if v == nil || len(r.Result) == 0 {
		return nil
	}
	if a, ok := v.(aliasingResult); ok {
		if err := a.decodeAliasing(r.Result); err != nil {
			return Errorf(CodeInternal, ReasonBadReply, "decode result: %v", err)
		}
		return nil
	}
	if err := Unmarshal(r.Result, v); err != nil {
		return Errorf(CodeInternal, ReasonBadReply, "decode result: %v", err)
	}
	return nil
}

// decodedRaw is raw as a RawMessage field decodes it: msgpack nil is an
// absent value.
func decodedRaw(raw []byte) msgpack.RawMessage {
	if len(raw) == 1 && raw[0] == 0xc0 {
		return nil
	}
	return raw
}

// Marshal encodes v as msgpack, the encoding of everything on the wire. Structs
// are encoded by their msgpack tags; times as msgpack timestamps.
func Marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	if h, ok := v.(sizeHinter); ok {
		// One allocation of about the right size instead of doubling
		// through a large payload.
		buf.Grow(h.sizeHint())
	}
	enc := newEncoder(&buf)
	defer msgpack.PutEncoder(enc)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// sizeHinter is a value whose encoding is dominated by a large payload; it
// tells Marshal roughly how many bytes to expect.
type sizeHinter interface{ sizeHint() int }

// envelopeSlack covers a message's fields besides its payload.
const envelopeSlack = 512

// requestSlack covers a Request's encoding besides its strings and body:
// the map's head, the keys, the numbers and the headers of the strings and
// the body come to at most 87 bytes. A request without a body (most
// calls: capabilities, pings) is encoded into a buffer of about its own
// size, not envelopeSlack's 512 bytes more.
const requestSlack = 128

func (r *Request) sizeHint() int {
	return len(r.Body) + len(r.ID) + len(r.Op) + len(r.Session) + len(r.IdempotencyKey) + requestSlack
}
func (r *Response) sizeHint() int { return len(r.Result) + len(r.ID) + envelopeSlack }

// Unmarshal decodes msgpack into v, with limits suited to untrusted input.
func Unmarshal(data []byte, v any) error {
	if err := checkLengths(data); err != nil {
		return err
	}
	dec := msgpack.GetDecoder()
	defer msgpack.PutDecoder(dec)
	dec.Reset(bytes.NewReader(data))
	dec.SetCustomStructTag("msgpack")
	dec.DisableAllocLimit(false)
	return dec.Decode(v)
}

// newEncoder is a pooled encoder writing to w, configured as everything on
// the wire is encoded; give it back with msgpack.PutEncoder. At thousands
// of messages a second (heartbeats, calls), a new encoder or decoder each
// time was a large share of the control plane's allocation.
func newEncoder(w io.Writer) *msgpack.Encoder {
	enc := msgpack.GetEncoder()
	enc.Reset(w)
	enc.SetCustomStructTag("msgpack")
	return enc
}
