package wire

import "github.com/vmihailenco/msgpack/v5"

// An envelope whose body is written straight into its buffer (EncodeRequest,
// EncodeResult, InPlace bodies) is a msgpack map written field by field:
// its header must count exactly the fields that follow. Each such map is
// described by one list of fields, from which both the count and the
// fields are written; the body, or the in-place data, is always the last
// entry. TestEnvelopeFieldsMatchStructs fails when a struct gains a field
// its list does not have, or when its bulk field is not its last.

// mapField is one entry of a map written field by field, encoded as the
// struct encoder encodes a field of its kind.
type mapField struct {
	key       string
	kind      fieldKind
	s         string
	i         int64
	u         uint64
	b         []byte
	u32       []uint32
	omitEmpty bool
}

// fieldKind is how a mapField's value is encoded.
type fieldKind uint8

const (
	kindString  fieldKind = iota // a string
	kindInt                      // an int: compact
	kindInt64                    // an int64: 9 bytes, as the struct encoder writes it
	kindUint64                   // a uint64: 9 bytes, as the struct encoder writes it
	kindBin                      // a []byte: a bin (nil when nil)
	kindUint32s                  // a []uint32: an array (nil when nil)
)

// empty reports whether f is left out (omitempty and zero).
func (f *mapField) empty() bool {
	return f.omitEmpty && f.s == "" && f.i == 0 && f.u == 0 && len(f.b) == 0 && len(f.u32) == 0
}

// writeMapHead writes a map of fields followed, when last is not "", by
// the key last, whose value the caller writes next. The header counts what
// is written.
func writeMapHead(enc *msgpack.Encoder, fields []mapField, last string) error {
	n := 0
	for i := range fields {
		if !fields[i].empty() {
			n++
		}
	}
	if last != "" {
		n++
	}
	err := enc.EncodeMapLen(n)
	for i := range fields {
		f := &fields[i]
		if err != nil || f.empty() {
			continue
		}
		if err = enc.EncodeString(f.key); err != nil {
			break
		}
		switch f.kind {
		case kindString:
			err = enc.EncodeString(f.s)
		case kindInt:
			err = enc.EncodeInt(f.i)
		case kindInt64:
			err = enc.EncodeInt64(f.i)
		case kindUint64:
			err = enc.EncodeUint64(f.u)
		case kindBin:
			err = enc.EncodeBytes(f.b)
		case kindUint32s:
			err = enc.Encode(f.u32)
		}
	}
	if err == nil && last != "" {
		err = enc.EncodeString(last)
	}
	return err
}

// requestFields are a Request's fields before its body ("b"), in its
// struct's order.
func requestFields(r *Request) [8]mapField {
	return [8]mapField{
		{key: "v", kind: kindInt, i: int64(r.Version)},
		{key: "id", kind: kindString, s: r.ID},
		{key: "op", kind: kindString, s: r.Op},
		{key: "dl", kind: kindInt64, i: r.Deadline},
		{key: "ss", kind: kindString, s: r.Session, omitEmpty: true},
		{key: "ep", kind: kindUint64, u: r.Epoch, omitEmpty: true},
		{key: "sb", kind: kindInt64, i: r.StartBy, omitEmpty: true},
		{key: "ik", kind: kindString, s: r.IdempotencyKey, omitEmpty: true},
	}
}

// requestBodyKey is the key of a Request's body, its last field.
const requestBodyKey = "b"

// responseFields are a successful Response's fields before its result
// ("r"); its error ("err") is absent.
func responseFields(id string) [1]mapField {
	return [1]mapField{{key: "id", kind: kindString, s: id}}
}

// responseResultKey is the key of a Response's result.
const responseResultKey = "r"
