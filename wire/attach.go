package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
)

// OpProcAttach opens an attach stream (PROTOCOL.md "Attach streams"): the
// agent pushes a process's events to the control plane as they happen and
// takes stdin as frames, with no request per read or write.
const OpProcAttach = "proc.attach"

func init() {
	// Opening a stream changes nothing a retry could repeat: a second open
	// with the same stream id replaces the first.
	RegisterOp(OpProcAttach, OpInfo{})
}

// AttachMagic is the first byte of an attach frame the control plane sends
// on an agent's rpc subject (a pipe frame's is PipeMagic; a request is a
// msgpack map, never either byte).
const AttachMagic = 0x02

// Attach stream limits.
const (
	// AttachWriteMax bounds the stdin data of one write frame.
	AttachWriteMax = 256 << 10
	// AttachLease is how long the agent keeps a stream the control plane
	// sent nothing on; the control plane sends a credit at least every
	// AttachKeepalive.
	AttachLease     = 15000 // ms
	AttachKeepalive = 2000  // ms
)

// ProcAttachRequest is the body of proc.attach: push the events of process
// ID after After, each frame at most MaxBytes (as proc.read's), to
// agent.<ws>.<agent>.attach.<Owner>.<Stream>, once the first credit frame
// arrives. Writes names the last stdin write of this attachment the control
// plane has seen acknowledged: the stream expects Writes+1 next. Stdin write
// n has the write id WritePrefix + n, so that a write sent on an earlier
// stream (or by proc.write) is never written twice.
type ProcAttachRequest struct {
	ID          string `msgpack:"id"`
	After       uint64 `msgpack:"after,omitempty"`
	MaxBytes    int    `msgpack:"max,omitempty"`
	Owner       string `msgpack:"owner"`
	Stream      string `msgpack:"stream"`
	WritePrefix string `msgpack:"wp,omitempty"`
	Writes      uint64 `msgpack:"writes,omitempty"`
	// Ticket, when set, asks the agent to carry the stream on a bulk
	// connection it makes with this ticket (BulkPath, as fs.send's): the
	// frames of both ways go there, each after its length
	// (AppendAttachBulkFrame), and no frame of the stream goes through
	// NATS. An agent that cannot make it answers without Bulk and the
	// stream's frames go over NATS as without a ticket.
	Ticket string `msgpack:"tk,omitempty"`
}

// ProcAttachResult is the answer to proc.attach. Bulk: the stream is on the
// bulk connection made with the request's ticket. An agent from before
// bulk attach streams answers nothing (no Bulk).
type ProcAttachResult struct {
	Bulk bool `msgpack:"bulk,omitempty"`
}

// Validate checks the request's shape.
func (r *ProcAttachRequest) Validate() error {
	switch {
	case r.MaxBytes < 0:
		return Errorf(CodeInvalidArgument, "", "maxBytes must not be negative")
	case !validPipeToken(r.Owner) || !validPipeToken(r.Stream):
		return Errorf(CodeInvalidArgument, "", "owner and stream must be 1 to %d of [A-Za-z0-9_-]", MaxPipeID)
	case len(r.WritePrefix)+20 > MaxWriteIDLen:
		return Errorf(CodeInvalidArgument, "", "write prefix is longer than %d characters", MaxWriteIDLen-20)
	}
	if r.Ticket != "" {
		if err := ValidTicket(r.Ticket); err != nil {
			return err
		}
	}
	return validProcID(r.ID)
}

// AttachKind is the kind of an attach frame.
type AttachKind byte

// Attach frame kinds. To the agent: credit, write, eof, close. From the
// agent: events, acknowledgement, end.
const (
	// AttachCredit: every event up to N reached the client (the agent's
	// flow-control acknowledgement, as a read's after); also a keepalive,
	// which the agent answers with an AttachAck.
	AttachCredit AttachKind = 'c'
	// AttachWrite: stdin write number N (from 1 per attachment), Data.
	AttachWrite AttachKind = 'w'
	// AttachEOF: stdin write number N is the end of stdin.
	AttachEOF AttachKind = 'e'
	// AttachClose: the control plane is done with the stream.
	AttachClose AttachKind = 'x'
	// AttachEvents, from the agent: Data is a ProcReadResult (msgpack).
	AttachEvents AttachKind = 'o'
	// AttachAck, from the agent: every write up to N was written; with
	// Data, write N failed with that Error (msgpack).
	AttachAck AttachKind = 'a'
	// AttachEnd, from the agent: the stream ended on its side (lease
	// lapsed, the agent stops); Data is a reason.
	AttachEnd AttachKind = 'z'
)

// AttachFrame is one message of an attach stream. Frames the agent sends
// name their stream by their subject; frames the control plane sends on
// the agent's rpc subject carry it.
type AttachFrame struct {
	Kind   AttachKind
	Stream string // only in frames sent to the agent
	N      uint64
	Data   []byte // aliases the message
}

// ErrBadAttachFrame is returned (wrapped) for a frame that does not decode.
var ErrBadAttachFrame = errors.New("bad attach frame")

// AppendAttachFrame encodes f after dst: [magic stream-len stream] kind
// n(8) data. toAgent selects the form sent to the agent.
func AppendAttachFrame(dst []byte, f AttachFrame, toAgent bool) []byte {
	if toAgent {
		dst = append(dst, AttachMagic, byte(len(f.Stream)))
		dst = append(dst, f.Stream...)
	}
	dst = append(dst, byte(f.Kind))
	dst = binary.BigEndian.AppendUint64(dst, f.N)
	return append(dst, f.Data...)
}

// DecodeAttachFrame decodes b; toAgent says it was sent to the agent, and
// only the kinds of that direction are accepted. Data aliases b.
func DecodeAttachFrame(b []byte, toAgent bool) (AttachFrame, error) {
	var f AttachFrame
	if toAgent {
		if len(b) < 2 || b[0] != AttachMagic {
			return f, fmt.Errorf("%w: no stream header", ErrBadAttachFrame)
		}
		n := int(b[1])
		if len(b) < 2+n {
			return f, fmt.Errorf("%w: stream id of %d bytes in %d", ErrBadAttachFrame, n, len(b))
		}
		f.Stream = string(b[2 : 2+n])
		if !validPipeToken(f.Stream) {
			return f, fmt.Errorf("%w: stream id %q", ErrBadAttachFrame, f.Stream)
		}
		b = b[2+n:]
	}
	if len(b) < 9 {
		return f, fmt.Errorf("%w: %d bytes, at least 9", ErrBadAttachFrame, len(b))
	}
	f.Kind = AttachKind(b[0])
	f.N = binary.BigEndian.Uint64(b[1:9])
	if len(b) > 9 {
		f.Data = b[9:]
	}
	withData := false
	switch {
	case toAgent && (f.Kind == AttachCredit || f.Kind == AttachEOF || f.Kind == AttachClose):
	case toAgent && f.Kind == AttachWrite:
		withData = true
		if len(f.Data) > AttachWriteMax {
			return f, fmt.Errorf("%w: %d bytes of stdin, at most %d", ErrBadAttachFrame, len(f.Data), AttachWriteMax)
		}
	case !toAgent && (f.Kind == AttachEvents || f.Kind == AttachAck || f.Kind == AttachEnd):
		withData = true
	default:
		return f, fmt.Errorf("%w: kind %#x", ErrBadAttachFrame, b[0])
	}
	if !withData && len(f.Data) > 0 {
		return f, fmt.Errorf("%w: %c frame with data", ErrBadAttachFrame, f.Kind)
	}
	if (f.Kind == AttachWrite || f.Kind == AttachEOF) && f.N == 0 {
		return f, fmt.Errorf("%w: write number 0", ErrBadAttachFrame)
	}
	return f, nil
}

// MaxAttachBulkFrame bounds one attach frame on a bulk connection (its
// length, after the 4-byte length itself): a stdin write of AttachWriteMax
// with its header, or an events frame of the agent's (its output is at
// most 64 KiB).
const MaxAttachBulkFrame = 1 << 20

// AppendAttachBulkFrame encodes f after dst as it goes on a bulk
// connection: its length (4 bytes, big-endian), then the frame as
// AppendAttachFrame writes it (toAgent: with its stream id).
func AppendAttachBulkFrame(dst []byte, f AttachFrame, toAgent bool) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst = AppendAttachFrame(dst, f, toAgent)
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
	return dst
}

// ReadAttachBulkFrame reads and decodes one frame of a bulk connection
// (AppendAttachBulkFrame); toAgent as DecodeAttachFrame's. Each frame is
// read into a buffer of its own: its Data stays the caller's. io.EOF only
// at a frame's boundary.
func ReadAttachBulkFrame(r io.Reader, toAgent bool) (AttachFrame, error) {
	f, _, err := ReadAttachBulkFrameInto(r, nil, toAgent)
	return f, err
}

// ReadAttachBulkFrameInto is ReadAttachBulkFrame into buf's storage,
// grown when the frame needs more (the buffer used is returned, to pass
// to the next call): the frame's Data aliases it, so it is only good
// until the next read. A reader done with each frame before the next
// then allocates nothing a frame.
func ReadAttachBulkFrameInto(r io.Reader, buf []byte, toAgent bool) (AttachFrame, []byte, error) {
	buf = slices.Grow(buf[:0], 4)[:4]
	if _, err := io.ReadFull(r, buf); err != nil {
		return AttachFrame{}, buf, err
	}
	n := binary.BigEndian.Uint32(buf)
	if n > MaxAttachBulkFrame {
		return AttachFrame{}, buf, fmt.Errorf("%w: %d bytes on a bulk connection, at most %d", ErrBadAttachFrame, n, MaxAttachBulkFrame)
	}
	buf = slices.Grow(buf[:0], int(n))[:n]
	if _, err := io.ReadFull(r, buf); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return AttachFrame{}, buf, err
	}
	f, err := DecodeAttachFrame(buf, toAgent)
	return f, buf, err
}
