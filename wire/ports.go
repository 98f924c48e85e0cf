package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"
)

// Port ops: what listens on the agent's machine, and pipes (one TCP
// connection to a local port, carried as frames; see PROTOCOL.md "Ports").
const (
	OpPortList = "port.list"
	OpPortOpen = "port.open"
)

func init() {
	RegisterOp(OpPortList, OpInfo{})
	RegisterOp(OpPortOpen, OpInfo{Mutates: true})
}

// Port is one TCP listener on the agent's machine. PID and Process are
// present when the agent can see the owning process (a process of its own
// user, or any when it runs as root).
type Port struct {
	Port    int    `json:"port" msgpack:"port"`
	Address string `json:"address" msgpack:"addr"`
	PID     int    `json:"pid,omitempty" msgpack:"pid,omitempty"`
	Process string `json:"process,omitempty" msgpack:"proc,omitempty"`
}

// PortListResult is the result of port.list: listeners on loopback and
// wildcard addresses, by port then address.
type PortListResult struct {
	Ports []Port `json:"ports" msgpack:"ports"`
}

// PortOpenRequest asks the agent to connect to 127.0.0.1:Port (then [::1])
// and carry the connection as pipe Pipe of control-plane connection Owner:
// the agent publishes its frames to agent.<ws>.<agent>.pipe.<owner>.<pipe>
// and takes the control plane's on its rpc subject.
type PortOpenRequest struct {
	Port   int    `msgpack:"port"`
	Owner  string `msgpack:"owner"`
	Pipe   string `msgpack:"pipe"`
	Window int    `msgpack:"win,omitempty"` // bytes the agent may send before a credit; 0: PipeWindow
	// Ticket, when set, asks the agent to carry the pipe on a bulk
	// connection of its own (BulkPath, claimed with this ticket) instead of
	// as frames over NATS: stream frames (PutStreamHeader) both ways.
	// An agent that cannot make one carries it over NATS as always and
	// says so (PortOpenResult.Bulk false).
	Ticket string `msgpack:"tk,omitempty"`
}

// Validate checks the port and the pipe's names.
func (r *PortOpenRequest) Validate() error {
	if err := ValidPort(r.Port); err != nil {
		return err
	}
	if !validPipeToken(r.Owner) || !validPipeToken(r.Pipe) {
		return Errorf(CodeInvalidArgument, "", "pipe owner and id must be 1-%d characters of [A-Za-z0-9_-]", MaxPipeID)
	}
	if r.Window < 0 || r.Window > MaxPipeWindow {
		return Errorf(CodeInvalidArgument, "", "window %d out of range 0-%d", r.Window, MaxPipeWindow)
	}
	if r.Ticket != "" {
		return ValidTicket(r.Ticket)
	}
	return nil
}

// PortOpenResult is the result of port.open: the agent is connected.
type PortOpenResult struct {
	Window int `msgpack:"win"` // bytes the control plane may send before a credit
	// Acks says the agent acknowledges the control plane's data frames
	// (FrameAck on the pipe's subject, every PipeAckEvery bytes), so the
	// control plane may pace them; agents before this do not.
	Acks bool `msgpack:"acks,omitempty"`
	// Bulk says the pipe is on the bulk connection the request's Ticket
	// asked for (the control plane took it); false: frames over NATS.
	Bulk bool `msgpack:"bulk,omitempty"`
}

// ValidPort checks a TCP port number.
func ValidPort(p int) error {
	if p < 1 || p > 65535 {
		return Errorf(CodeInvalidArgument, "", "port %d out of range 1-65535", p)
	}
	return nil
}

// Pipe limits.
const (
	// PipeWindow is the default window: bytes in flight, unacknowledged,
	// each way of one pipe, when a port.open names none (the window of
	// control planes before 4 MiB).
	PipeWindow = 1 << 20
	// PipeGrant is the window a control plane grants (PortOpenRequest's
	// Window); the agent grants the same back.
	PipeGrant = 4 << 20
	// MaxPipeWindow bounds a window either side asks for.
	MaxPipeWindow = 64 << 20
	// PipeChunk is the most data one frame carries.
	PipeChunk = 256 << 10
	// PipeFlight is where an agent's bound on the bytes of data frames
	// sent to one control-plane connection and not yet seen acknowledged
	// (FrameAck) starts: what may queue ahead of its heartbeats and
	// replies. The agent then sizes it to its uplink: what the
	// acknowledgements say arrives in PipeFlightDelay, between
	// PipeFlightMin and PipeFlightMax.
	PipeFlight = 4 << 20
	// PipeFlightMin and PipeFlightMax bound the sized flight.
	PipeFlightMin = 1 << 20
	PipeFlightMax = 32 << 20
	// PipeFlightDelay is how long the data in flight may take to arrive
	// at the measured rate.
	PipeFlightDelay = 250 * time.Millisecond
	// PipeAckEvery is how many received bytes the control plane
	// acknowledges at once.
	PipeAckEvery = 256 << 10
	// MaxPipeID bounds a pipe's id and owner.
	MaxPipeID = 64
)

func validPipeToken(s string) bool {
	if s == "" || len(s) > MaxPipeID {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// FrameKind is what a pipe frame says.
type FrameKind byte

// Frame kinds.
const (
	// FrameData carries bytes at offset Off of the sender's direction.
	FrameData FrameKind = 'd'
	// FrameCredit says the receiver has consumed everything before Off:
	// the sender may have up to Off+window bytes sent.
	FrameCredit FrameKind = 'c'
	// FrameEOF half-closes the sender's direction after Off bytes.
	FrameEOF FrameKind = 'e'
	// FrameReset ends the pipe both ways at once; Data is a reason.
	FrameReset FrameKind = 'r'
	// FrameAck says the sender received Off more bytes of the other
	// side's data frames, on its NATS connection as a whole (PipeFlight),
	// apart from each pipe's window. From the control plane it names no
	// pipe but a control-plane connection (Pipe is its owner); from the
	// agent it goes on any pipe subject of that connection.
	FrameAck FrameKind = 'a'
)

// PipeMagic is the first byte of a frame the control plane sends on an
// agent's rpc subject. A request is a msgpack map, never this byte.
const PipeMagic = 0x01

// Frame is one message of a pipe. Frames the agent sends name their pipe
// by their subject; frames the control plane sends on the agent's rpc
// subject carry it (Pipe).
type Frame struct {
	Kind FrameKind
	Pipe string // only in frames sent to the agent
	Off  uint64
	Data []byte // aliases the message
}

// ErrBadFrame is returned (wrapped) for a frame that does not decode.
var ErrBadFrame = errors.New("bad pipe frame")

// AppendFrame encodes f after dst: [magic pipe-len pipe] kind off(8) data.
// withPipe selects the form sent to the agent.
func AppendFrame(dst []byte, f Frame, withPipe bool) []byte {
	if withPipe {
		dst = append(dst, PipeMagic, byte(len(f.Pipe)))
		dst = append(dst, f.Pipe...)
	}
	dst = append(dst, byte(f.Kind))
	dst = binary.BigEndian.AppendUint64(dst, f.Off)
	return append(dst, f.Data...)
}

// KindOf is the kind of the frame in b (withPipe as for DecodeFrame)
// without decoding the rest, or 0 when b is too short to say.
func KindOf(b []byte, withPipe bool) FrameKind {
	if withPipe {
		if len(b) < 2 {
			return 0
		}
		b = b[min(2+int(b[1]), len(b)):]
	}
	if len(b) == 0 {
		return 0
	}
	return FrameKind(b[0])
}

// FrameHeaderLen is the most bytes AppendFrame puts before the data.
const FrameHeaderLen = 2 + MaxPipeID + 1 + 8

// DecodeFrame decodes b; withPipe says it was sent to the agent. Data
// aliases b.
func DecodeFrame(b []byte, withPipe bool) (Frame, error) {
	var f Frame
	if withPipe {
		if len(b) < 2 || b[0] != PipeMagic {
			return f, fmt.Errorf("%w: no pipe header", ErrBadFrame)
		}
		n := int(b[1])
		if len(b) < 2+n {
			return f, fmt.Errorf("%w: pipe id of %d bytes in %d", ErrBadFrame, n, len(b))
		}
		f.Pipe = string(b[2 : 2+n])
		if !validPipeToken(f.Pipe) {
			return f, fmt.Errorf("%w: pipe id %q", ErrBadFrame, f.Pipe)
		}
		b = b[2+n:]
	}
	if len(b) < 9 {
		return f, fmt.Errorf("%w: %d bytes, at least 9", ErrBadFrame, len(b))
	}
	f.Kind = FrameKind(b[0])
	switch f.Kind {
	case FrameData, FrameReset:
	case FrameCredit, FrameEOF, FrameAck:
		if len(b) != 9 {
			return f, fmt.Errorf("%w: %c frame with data", ErrBadFrame, f.Kind)
		}
	default:
		return f, fmt.Errorf("%w: kind %#x", ErrBadFrame, b[0])
	}
	f.Off = binary.BigEndian.Uint64(b[1:9])
	if len(b) > 9 {
		f.Data = b[9:]
	}
	if f.Kind == FrameData && len(f.Data) > PipeChunk {
		return f, fmt.Errorf("%w: %d bytes of data, at most %d", ErrBadFrame, len(f.Data), PipeChunk)
	}
	return f, nil
}
