package wire

import (
	"fmt"

	"github.com/vmihailenco/msgpack/v5"
	"github.com/vmihailenco/msgpack/v5/msgpcode"
)

// A manifest holds an entry per file (11,344 for the 1 GiB tree of the
// carry bench), and a carry encodes and decodes each twice on its critical
// path; msgpack's reflection was most of that time. SnapEntry encodes and
// decodes itself, in exactly the map its msgpack tags describe (the same
// keys, the same omitted empty fields), so either side may be older.

// EncodeMsgpack writes e as the map its tags describe.
func (e SnapEntry) EncodeMsgpack(enc *msgpack.Encoder) error {
	n := 3
	if e.Size != 0 {
		n++
	}
	if e.MTime != 0 {
		n++
	}
	if e.Link != "" {
		n++
	}
	if len(e.Sums) > 0 {
		n++
	}
	if len(e.Sizes) > 0 {
		n++
	}
	if err := enc.EncodeMapLen(n); err != nil {
		return err
	}
	w := func(k string, f func() error) error {
		if err := enc.EncodeString(k); err != nil {
			return err
		}
		return f()
	}
	if err := w("p", func() error { return enc.EncodeString(e.Path) }); err != nil {
		return err
	}
	if err := w("t", func() error { return enc.EncodeString(e.Type) }); err != nil {
		return err
	}
	if err := w("m", func() error { return enc.EncodeUint32(e.Mode) }); err != nil {
		return err
	}
	if e.Size != 0 {
		if err := w("s", func() error { return enc.EncodeInt64(e.Size) }); err != nil {
			return err
		}
	}
	if e.MTime != 0 {
		if err := w("mt", func() error { return enc.EncodeInt64(e.MTime) }); err != nil {
			return err
		}
	}
	if e.Link != "" {
		if err := w("l", func() error { return enc.EncodeString(e.Link) }); err != nil {
			return err
		}
	}
	if len(e.Sums) > 0 {
		if err := w("c", func() error { return enc.EncodeBytes(e.Sums) }); err != nil {
			return err
		}
	}
	if len(e.Sizes) > 0 {
		if err := enc.EncodeString("z"); err != nil {
			return err
		}
		if err := enc.EncodeArrayLen(len(e.Sizes)); err != nil {
			return err
		}
		for _, n := range e.Sizes {
			if err := enc.EncodeUint32(n); err != nil {
				return err
			}
		}
	}
	return nil
}

// DecodeMsgpack reads e from a map (or nil); keys it does not know are
// skipped, as the reflecting decoder does.
func (e *SnapEntry) DecodeMsgpack(dec *msgpack.Decoder) error {
	*e = SnapEntry{}
	code, err := dec.PeekCode()
	if err != nil {
		return err
	}
	if code == msgpcode.Nil {
		return dec.DecodeNil()
	}
	n, err := dec.DecodeMapLen()
	if err != nil {
		return err
	}
	for range n {
		k, err := dec.DecodeString()
		if err != nil {
			return err
		}
		switch k {
		case "p":
			e.Path, err = dec.DecodeString()
		case "t":
			e.Type, err = dec.DecodeString()
		case "m":
			e.Mode, err = dec.DecodeUint32()
		case "s":
			e.Size, err = dec.DecodeInt64()
		case "mt":
			e.MTime, err = dec.DecodeInt64()
		case "l":
			e.Link, err = dec.DecodeString()
		case "c":
			e.Sums, err = dec.DecodeBytes()
		case "z":
			e.Sizes, err = decodeUint32s(dec)
		default:
			err = dec.Skip()
		}
		if err != nil {
			return fmt.Errorf("snapshot entry field %q: %w", k, err)
		}
	}
	return nil
}

// decodeUint32s reads an array of uint32 (or nil).
func decodeUint32s(dec *msgpack.Decoder) ([]uint32, error) {
	n, err := dec.DecodeArrayLen()
	if err != nil || n < 0 {
		return nil, err
	}
	if n > MaxSnapSums {
		return nil, fmt.Errorf("%d chunk sizes, more than %d", n, MaxSnapSums)
	}
	out := make([]uint32, n)
	for i := range out {
		if out[i], err = dec.DecodeUint32(); err != nil {
			return nil, err
		}
	}
	return out, nil
}
