package wire

import (
	"encoding/base64"
	"encoding/binary"
	"strings"
)

// Bulk connections: a transfer's bytes may go straight between the agent and
// the control plane on a connection of their own, instead of in chunks over
// NATS. NATS keeps the control: the control plane issues a ticket in
// fs.send or fs.upload.recv, the agent dials the control plane's URL it
// enrolled with (its pinned CA, its proxy) at BulkPath and upgrades to
// BulkUpgrade, naming the ticket and signing it with its nkey. The control
// plane takes the connection only for the agent the ticket was issued to,
// and only for that one transfer. Anything that goes wrong before the bytes
// move falls back to the chunks over NATS. wire/PROTOCOL.md, "Transfers,
// step by step", has the rest.
const (
	OpFsSend       = "fs.send"
	OpFsUploadRecv = "fs.upload.recv"

	// BulkPath is where the agent dials a bulk connection.
	BulkPath = "/v1/bulk"
	// BulkUpgrade is the Upgrade token of a bulk connection.
	BulkUpgrade = "outpost-bulk"
	// BulkTicketHeader names the ticket; BulkSignatureHeader carries the
	// agent's signature of BulkSigned (base64url, no padding).
	BulkTicketHeader    = "Outpost-Bulk-Ticket"
	BulkSignatureHeader = "Outpost-Bulk-Signature"
	// MaxTicketLen bounds a ticket.
	MaxTicketLen = 64
)

func init() {
	// fs.send streams a range of an open download: a read. fs.upload.recv
	// writes into an upload: a mutation, as the chunks it replaces.
	RegisterOp(OpFsSend, OpInfo{})
	RegisterOp(OpFsUploadRecv, OpInfo{Mutates: true})
}

// FsSendRequest is the body of fs.send: stream Length bytes at Offset of the
// open download Handle on a bulk connection made with Ticket. The agent
// answers once the control plane took the connection (or with the error
// that kept it from dialing); the bytes follow on the connection, which
// ends after the last (fewer only if the file shrank or a read failed: the
// control plane reads the rest with fs.read).
type FsSendRequest struct {
	Handle string `msgpack:"h"`
	Offset int64  `msgpack:"off"`
	Length int64  `msgpack:"len"`
	Ticket string `msgpack:"tk"`
}

// Validate checks the handle, range and ticket.
func (r *FsSendRequest) Validate() error {
	if err := validHandle(r.Handle); err != nil {
		return err
	}
	if r.Offset < 0 || r.Length < 0 {
		return Errorf(CodeInvalidArgument, "", "negative offset %d or length %d", r.Offset, r.Length)
	}
	return ValidTicket(r.Ticket)
}

// FsUploadRecvRequest is the body of fs.upload.recv: take the bytes of the
// upload Handle from Offset on, from a bulk connection made with Ticket,
// until the control plane closes its side. The agent answers once the
// control plane took the connection; fs.upload.commit waits for the last
// byte to be written and checks the size and hash as always.
type FsUploadRecvRequest struct {
	Handle string `msgpack:"h"`
	Offset int64  `msgpack:"off"`
	Ticket string `msgpack:"tk"`
}

// Validate checks the handle, offset and ticket.
func (r *FsUploadRecvRequest) Validate() error {
	if err := validHandle(r.Handle); err != nil {
		return err
	}
	if r.Offset < 0 {
		return Errorf(CodeInvalidArgument, "", "negative offset %d", r.Offset)
	}
	return ValidTicket(r.Ticket)
}

// ValidTicket checks a ticket's shape: 1 to MaxTicketLen letters and digits.
func ValidTicket(t string) error {
	if t == "" || len(t) > MaxTicketLen {
		return Errorf(CodeInvalidArgument, "", "ticket must be 1 to %d characters", MaxTicketLen)
	}
	for _, c := range []byte(t) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			return Errorf(CodeInvalidArgument, "", "ticket has a character other than a letter or digit")
		}
	}
	return nil
}

// BulkSigned is what an agent signs to claim a bulk connection: the ticket
// (the control plane's nonce, used once) bound to the agent's workspace and
// id, under a label no other signature of an agent's key starts with.
func BulkSigned(workspace, agent, ticket string) []byte {
	return []byte("outpost-bulk-v1\x00" + workspace + "\x00" + agent + "\x00" + ticket)
}

// BulkAuth is what a bulk connection's upgrade request claims.
type BulkAuth struct {
	Ticket    string
	Signature []byte
}

// EncodeBulkSignature is the header form of a signature.
func EncodeBulkSignature(sig []byte) string { return base64.RawURLEncoding.EncodeToString(sig) }

// maxSignatureLen bounds the signature header (an ed25519 signature is 64
// bytes, 86 in base64url).
const maxSignatureLen = 128

// ParseBulkAuth reads the ticket and signature headers of an upgrade
// request.
func ParseBulkAuth(ticket, signature string) (BulkAuth, error) {
	if err := ValidTicket(ticket); err != nil {
		return BulkAuth{}, Errorf(CodeUnauthenticated, "", "%s: %s", BulkTicketHeader, AsError(err).Message)
	}
	if signature == "" || len(signature) > maxSignatureLen {
		return BulkAuth{}, Errorf(CodeUnauthenticated, "", "%s must be 1 to %d characters", BulkSignatureHeader, maxSignatureLen)
	}
	sig, err := base64.RawURLEncoding.DecodeString(strings.TrimSpace(signature))
	if err != nil {
		return BulkAuth{}, Errorf(CodeUnauthenticated, "", "%s is not base64url: %v", BulkSignatureHeader, err)
	}
	return BulkAuth{Ticket: ticket, Signature: sig}, nil
}

// Stream frames: a port's pipe on a bulk connection (PortOpenRequest.Ticket)
// is a sequence of frames, each a header of StreamHeaderLen bytes (its
// kind, then its payload's length, 4 bytes big-endian) and the payload.
// TCP (or TLS over it) orders them and is the flow control, so there are
// no offsets nor credits: data, the sender's half-close, and a reset with
// its reason. A connection that ends without both EOFs is a reset.
const (
	// StreamHeaderLen is the length of a stream frame's header.
	StreamHeaderLen = 5
	// StreamData carries bytes (at most MaxStreamData).
	StreamData = 'd'
	// StreamEOF is the sender's half-close (no payload).
	StreamEOF = 'e'
	// StreamReset ends the pipe both ways; the payload is the reason
	// (at most MaxStreamReason bytes).
	StreamReset = 'r'
	// MaxStreamData bounds a data frame's payload.
	MaxStreamData = 1 << 20
	// MaxStreamReason bounds a reset's reason.
	MaxStreamReason = 1 << 10
)

// PutStreamHeader writes the header of a frame of kind with n bytes of
// payload into h (StreamHeaderLen bytes).
func PutStreamHeader(h []byte, kind byte, n int) {
	h[0] = kind
	binary.BigEndian.PutUint32(h[1:StreamHeaderLen], uint32(n))
}

// ParseStreamHeader reads a stream frame's header: its kind and payload
// length, checked against the kind's bounds.
func ParseStreamHeader(h []byte) (kind byte, n int, err error) {
	if len(h) < StreamHeaderLen {
		return 0, 0, Errorf(CodeInvalidArgument, "", "stream frame header of %d bytes", len(h))
	}
	kind = h[0]
	u := binary.BigEndian.Uint32(h[1:StreamHeaderLen])
	var limit uint32
	switch kind {
	case StreamData:
		limit = MaxStreamData
	case StreamEOF:
		limit = 0
	case StreamReset:
		limit = MaxStreamReason
	default:
		return 0, 0, Errorf(CodeInvalidArgument, "", "stream frame of unknown kind %#x", kind)
	}
	if u > limit {
		return 0, 0, Errorf(CodeInvalidArgument, "", "stream frame %q of %d bytes, at most %d", kind, u, limit)
	}
	return kind, int(u), nil
}
