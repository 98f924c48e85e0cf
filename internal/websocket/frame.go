package websocket

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Opcode is a frame's type.
type Opcode byte

// The opcodes of RFC 6455 section 5.2.
const (
	OpContinuation Opcode = 0x0
	OpText         Opcode = 0x1
	OpBinary       Opcode = 0x2
	OpClose        Opcode = 0x8
	OpPing         Opcode = 0x9
	OpPong         Opcode = 0xA
)

// isControl reports whether op is a control frame's (close, ping, pong).
func (op Opcode) isControl() bool { return op&0x8 != 0 }

// known reports whether op is one RFC 6455 defines.
func (op Opcode) known() bool {
	switch op {
	case OpContinuation, OpText, OpBinary, OpClose, OpPing, OpPong:
		return true
	}
	return false
}

// maxControlPayload is the largest payload of a control frame.
const maxControlPayload = 125

// ErrProtocol is the cause of a frame that breaks RFC 6455; the connection
// is then closed with status 1002.
var ErrProtocol = errors.New("websocket: protocol error")

// header is one frame's header.
type header struct {
	fin    bool
	op     Opcode
	masked bool
	key    [4]byte
	length int64
}

// readHeader reads and validates one frame header: reserved bits clear (no
// extension is negotiated), a known opcode, control frames unfragmented and
// at most 125 bytes, a 64-bit length with its top bit clear, and lengths in
// their shortest form.
func readHeader(br *bufio.Reader) (header, error) {
	var h header
	var b [8]byte
	if _, err := readFull(br, b[:2]); err != nil {
		return h, err
	}
	h.fin = b[0]&0x80 != 0
	if b[0]&0x70 != 0 {
		return h, fmt.Errorf("%w: reserved bits set", ErrProtocol)
	}
	h.op = Opcode(b[0] & 0x0f)
	if !h.op.known() {
		return h, fmt.Errorf("%w: unknown opcode %#x", ErrProtocol, byte(h.op))
	}
	h.masked = b[1]&0x80 != 0
	h.length = int64(b[1] & 0x7f)
	switch h.length {
	case 126:
		if _, err := readFull(br, b[:2]); err != nil {
			return h, unexpected(err)
		}
		h.length = int64(binary.BigEndian.Uint16(b[:2]))
		if h.length < 126 {
			return h, fmt.Errorf("%w: length %d not in its shortest form", ErrProtocol, h.length)
		}
	case 127:
		if _, err := readFull(br, b[:8]); err != nil {
			return h, unexpected(err)
		}
		n := binary.BigEndian.Uint64(b[:8])
		if n>>63 != 0 {
			return h, fmt.Errorf("%w: length has its top bit set", ErrProtocol)
		}
		if n <= 0xffff {
			return h, fmt.Errorf("%w: length %d not in its shortest form", ErrProtocol, n)
		}
		h.length = int64(n)
	}
	if h.op.isControl() && (!h.fin || h.length > maxControlPayload) {
		return h, fmt.Errorf("%w: control frame fragmented or over 125 bytes", ErrProtocol)
	}
	if h.masked {
		if _, err := readFull(br, h.key[:]); err != nil {
			return h, unexpected(err)
		}
	}
	return h, nil
}

// readFull is io.ReadFull of br for a header's few bytes, a byte at a
// time: p, on readHeader's stack, is never handed to the reader under br
// (as bufio's Read may), so it does not escape and reading a header
// allocates nothing.
func readFull(br *bufio.Reader, p []byte) (int, error) {
	for i := range p {
		c, err := br.ReadByte()
		if err != nil {
			if i > 0 && err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return i, err
		}
		p[i] = c
	}
	return len(p), nil
}

// unexpected makes a clean EOF inside a frame an unexpected one.
func unexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// maskBytes XORs p with key, starting at key offset pos; it returns the
// offset after p. Eight bytes at a time (a client's upload is masked,
// every byte of it).
func maskBytes(key [4]byte, pos int, p []byte) int {
	n := 0
	if len(p) >= 16 {
		var k [8]byte
		for i := range k {
			k[i] = key[(pos+i)&3]
		}
		k64 := binary.LittleEndian.Uint64(k[:])
		n = len(p) &^ 7 // a multiple of 4: the key's phase is pos again
		for i := 0; i < n; i += 8 {
			binary.LittleEndian.PutUint64(p[i:], binary.LittleEndian.Uint64(p[i:])^k64)
		}
	}
	for i := n; i < len(p); i++ {
		p[i] ^= key[(pos+i)&3]
	}
	return (pos + len(p)) & 3
}

// appendLength appends a frame's second byte (mask bit and length) and
// its extended length.
func appendLength(dst []byte, n int, mask bool) []byte {
	var mbit byte
	if mask {
		mbit = 0x80
	}
	switch {
	case n < 126:
		return append(dst, mbit|byte(n))
	case n <= 0xffff:
		dst = append(dst, mbit|126)
		return binary.BigEndian.AppendUint16(dst, uint16(n))
	default:
		dst = append(dst, mbit|127)
		return binary.BigEndian.AppendUint64(dst, uint64(n))
	}
}

// appendFrame appends one unfragmented frame of op carrying payload to
// dst, masked with key when mask is set.
func appendFrame(dst []byte, op Opcode, payload []byte, mask bool, key [4]byte) []byte {
	dst = append(dst, 0x80|byte(op))
	dst = appendLength(dst, len(payload), mask)
	if mask {
		dst = append(dst, key[:]...)
	}
	start := len(dst)
	dst = append(dst, payload...)
	if mask {
		maskBytes(key, 0, dst[start:])
	}
	return dst
}
