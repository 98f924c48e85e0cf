package wire

import "fmt"

// splitField takes the value of key out of the msgpack map in data without
// copying it: val aliases data, and rest is the map without that entry (a
// small new buffer). A value that is not a map, or a map without key, gives
// rest == data and no val. Envelopes use it so that a chunk's megabytes are
// not copied while the envelope around them is decoded.
func splitField(data []byte, key string) (rest, val []byte, err error) {
	if err := checkLengths(data); err != nil {
		return nil, nil, err
	}
	n, i, ok := mapHeader(data)
	if !ok {
		return data, nil, nil
	}
	out := make([]byte, 0, 64)
	found := false
	for range n {
		k, kEnd, err := keyAt(data, i)
		if err != nil {
			return nil, nil, err
		}
		vEnd, err := skipValue(data, kEnd)
		if err != nil {
			return nil, nil, err
		}
		switch {
		case k == key && found:
			return nil, nil, fmt.Errorf("msgpack: key %q twice", key)
		case k == key:
			val, found = data[kEnd:vEnd], true
		default:
			out = append(out, data[i:vEnd]...)
		}
		i = vEnd
	}
	if !found {
		return data, nil, nil
	}
	return append(mapPrefix(n-1), out...), val, nil
}

// mapHeader reads a map header: its entry count and where entries start.
func mapHeader(b []byte) (n, next int, ok bool) {
	switch {
	case len(b) == 0:
	case b[0] >= 0x80 && b[0] <= 0x8f:
		return int(b[0] & 0x0f), 1, true
	case b[0] == 0xde && len(b) >= 3:
		return int(b[1])<<8 | int(b[2]), 3, true
	case b[0] == 0xdf && len(b) >= 5:
		return int(b[1])<<24 | int(b[2])<<16 | int(b[3])<<8 | int(b[4]), 5, true
	}
	return 0, 0, false
}

// mapPrefix encodes a map header of n entries.
func mapPrefix(n int) []byte {
	switch {
	case n < 16:
		return []byte{0x80 | byte(n)}
	case n < 1<<16:
		return []byte{0xde, byte(n >> 8), byte(n)}
	default:
		return []byte{0xdf, byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}
	}
}

// keyAt reads the key at b[i:] when it is a string; other keys come back
// empty, never matching.
func keyAt(b []byte, i int) (string, int, error) {
	end, err := skipValue(b, i)
	if err != nil {
		return "", 0, err
	}
	c := b[i]
	switch {
	case c >= 0xa0 && c <= 0xbf:
		return string(b[i+1 : end]), end, nil
	case c == 0xd9:
		return string(b[i+2 : end]), end, nil
	case c == 0xda:
		return string(b[i+3 : end]), end, nil
	case c == 0xdb:
		return string(b[i+5 : end]), end, nil
	}
	if end <= i {
		return "", 0, fmt.Errorf("msgpack: empty key at byte %d", i)
	}
	return "", end, nil
}
