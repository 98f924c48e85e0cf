package wire

import (
	"encoding/binary"
	"fmt"
)

// checkLengths walks one msgpack value in b and fails if any string, binary,
// extension, array or map declares more than what is left of b. The msgpack
// decoder allocates a string's or binary's declared length before reading
// it, so without this check an 11-byte message claiming 4 GiB of bytes
// costs 4 GiB of memory.
func checkLengths(b []byte) error {
	_, err := skipValue(b, 0)
	return err
}

// skipValue walks the msgpack value at b[i:] with checkLengths' checks and
// returns the index just past it.
func skipValue(b []byte, i int) (int, error) {
	pending := 1 // values still to walk
	for pending > 0 {
		if i >= len(b) {
			return 0, fmt.Errorf("msgpack: truncated at byte %d", i)
		}
		c := b[i]
		i++
		pending--
		skip, items, err := sizeOf(c, b[i:])
		if err != nil {
			return 0, fmt.Errorf("msgpack: at byte %d: %w", i-1, err)
		}
		i += skip.header
		if skip.payload > len(b)-i {
			return 0, fmt.Errorf("msgpack: at byte %d: %d bytes declared, %d left", i, skip.payload, len(b)-i)
		}
		i += skip.payload
		// Every value takes at least one byte.
		if items > len(b)-i || pending+items > len(b)-i {
			return 0, fmt.Errorf("msgpack: at byte %d: %d values declared, %d bytes left", i, items, len(b)-i)
		}
		pending += items
	}
	return i, nil
}

// span is what follows a msgpack type byte: a length header, then payload.
type span struct{ header, payload int }

// sizeOf decodes the type byte c given the bytes after it: how many bytes
// to skip and how many nested values follow.
func sizeOf(c byte, rest []byte) (span, int, error) {
	switch {
	case c <= 0x7f || c >= 0xe0: // fixint
		return span{}, 0, nil
	case c <= 0x8f: // fixmap
		return span{}, 2 * int(c&0x0f), nil
	case c <= 0x9f: // fixarray
		return span{}, int(c & 0x0f), nil
	case c <= 0xbf: // fixstr
		return span{payload: int(c & 0x1f)}, 0, nil
	}
	switch c {
	case 0xc0, 0xc2, 0xc3: // nil, false, true
		return span{}, 0, nil
	case 0xc4, 0xd9: // bin8, str8
		return lenSpan(rest, 1, 0)
	case 0xc5, 0xda: // bin16, str16
		return lenSpan(rest, 2, 0)
	case 0xc6, 0xdb: // bin32, str32
		return lenSpan(rest, 4, 0)
	case 0xc7: // ext8: length, type, data
		return lenSpan(rest, 1, 1)
	case 0xc8:
		return lenSpan(rest, 2, 1)
	case 0xc9:
		return lenSpan(rest, 4, 1)
	case 0xca, 0xce, 0xd2: // float32, uint32, int32
		return span{payload: 4}, 0, nil
	case 0xcb, 0xcf, 0xd3: // float64, uint64, int64
		return span{payload: 8}, 0, nil
	case 0xcc, 0xd0:
		return span{payload: 1}, 0, nil
	case 0xcd, 0xd1:
		return span{payload: 2}, 0, nil
	case 0xd4, 0xd5, 0xd6, 0xd7, 0xd8: // fixext 1, 2, 4, 8, 16 plus type
		return span{payload: 1 + 1<<(c-0xd4)}, 0, nil
	case 0xdc: // array16
		n, err := readLen(rest, 2)
		return span{header: 2}, n, err
	case 0xdd:
		n, err := readLen(rest, 4)
		return span{header: 4}, n, err
	case 0xde: // map16
		n, err := readLen(rest, 2)
		return span{header: 2}, 2 * n, err
	case 0xdf:
		n, err := readLen(rest, 4)
		return span{header: 4}, 2 * n, err
	}
	return span{}, 0, fmt.Errorf("invalid type byte %#x", c)
}

// lenSpan reads a size-byte big-endian length; extra bytes (an ext's type)
// come between it and the payload.
func lenSpan(rest []byte, size, extra int) (span, int, error) {
	n, err := readLen(rest, size)
	return span{header: size, payload: n + extra}, 0, err
}

// readLen reads a big-endian length of size bytes.
func readLen(b []byte, size int) (int, error) {
	if len(b) < size {
		return 0, fmt.Errorf("truncated length")
	}
	switch size {
	case 1:
		return int(b[0]), nil
	case 2:
		return int(binary.BigEndian.Uint16(b)), nil
	default:
		return int(binary.BigEndian.Uint32(b)), nil
	}
}
