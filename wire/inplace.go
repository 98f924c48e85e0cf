package wire

import (
	"bytes"
	"fmt"

	"github.com/vmihailenco/msgpack/v5"
)

// Headroom is how many bytes an InPlace buffer keeps before its data for
// the envelope written around it.
const Headroom = 1024

// InPlace is a message body whose bulk field, a []byte, already lies in
// Buf[Headroom:Headroom+N]: EncodeRequest and EncodeResult write the
// envelope and the body's other fields into the headroom and return a slice
// of Buf, so a chunk's megabytes are neither copied nor allocated on their
// way out. Body gives the other fields (its bulk field is not read). The
// returned bytes alias Buf: Buf must not be reused until they were sent.
type InPlace struct {
	Body InPlaceBody
	Buf  []byte
	N    int
	// Room, when set, is the headroom of Buf instead of Headroom: the
	// data lies in Buf[Room:Room+N]. A body with more fields than
	// Headroom holds (a batch's chunk names) keeps more room.
	Room int
}

// InPlaceBody is a body type that can be encoded in place: it lists its
// fields but the bulk one, and the bulk field's key, which its encoding
// ends with (see envelope_map.go).
type InPlaceBody interface {
	inPlaceFields() (fields []mapField, bulkKey string)
}

func (r *FsUploadChunkRequest) inPlaceFields() ([]mapField, string) {
	return []mapField{
		{key: "h", kind: kindString, s: r.Handle},
		{key: "off", kind: kindInt64, i: r.Offset},
	}, "data"
}

func (r *FsReadResult) inPlaceFields() ([]mapField, string) { return nil, "data" }

// InPlaceBody returns p; a type embedding an InPlace is encoded as p is.
func (p *InPlace) InPlaceBody() *InPlace { return p }

// inPlacer is an InPlace, or a type embedding one.
type inPlacer interface{ InPlaceBody() *InPlace }

// Data is the in-place field's bytes.
func (p *InPlace) Data() []byte { return p.Buf[p.room() : p.room()+p.N] }

// room is where the data begins in Buf.
func (p *InPlace) room() int {
	if p.Room > 0 {
		return p.Room
	}
	return Headroom
}

// NewInPlaceBuf returns a buffer for an InPlace body of up to n data bytes.
func NewInPlaceBuf(n int) []byte { return make([]byte, Headroom+n) }

// encodeInPlace finishes an envelope whose head (everything before the
// body, its "b" or "r" key written) is in buf: it appends the body's map
// up to its bulk key, a bin header for p.N bytes, and returns head and all
// moved into p's headroom, followed by the data.
func encodeInPlace(buf *bytes.Buffer, enc *msgpack.Encoder, p *InPlace) ([]byte, error) {
	room := p.room()
	if p.N < 0 || room+p.N > len(p.Buf) {
		return nil, fmt.Errorf("wire: in-place data of %d bytes in a buffer of %d", p.N, len(p.Buf))
	}
	fields, key := p.Body.inPlaceFields()
	if err := writeMapHead(enc, fields, key); err != nil {
		return nil, err
	}
	if err := enc.EncodeBytesLen(p.N); err != nil {
		return nil, err
	}
	head := buf.Bytes()
	if len(head) > room {
		// An envelope this large (a long id or key) does not fit: copy.
		out := make([]byte, 0, len(head)+p.N)
		return append(append(out, head...), p.Data()...), nil
	}
	start := room - len(head)
	copy(p.Buf[start:], head)
	return p.Buf[start : room+p.N], nil
}

// UnmarshalAliasing decodes the msgpack map data into v as Unmarshal does,
// except for the field key, a bin (or nil), whose bytes it returns aliasing
// data instead of copying them; v's field is left alone.
func UnmarshalAliasing(data []byte, key string, v any) ([]byte, error) {
	rest, val, err := splitField(data, key)
	if err != nil {
		return nil, err
	}
	if err := Unmarshal(rest, v); err != nil {
		return nil, err
	}
	if val == nil {
		return nil, nil
	}
	return binValue(val)
}

// binValue is the payload of the msgpack bin (or nil) in b, aliasing b.
func binValue(b []byte) ([]byte, error) {
	var hdr int
	switch {
	case len(b) == 1 && b[0] == 0xc0:
		return nil, nil
	case len(b) >= 2 && b[0] == 0xc4:
		hdr = 2
	case len(b) >= 3 && b[0] == 0xc5:
		hdr = 3
	case len(b) >= 5 && b[0] == 0xc6:
		hdr = 5
	default:
		return nil, fmt.Errorf("msgpack: field is not a bin")
	}
	// splitField's value spans exactly the bin: the payload is the rest.
	return b[hdr:], nil
}

// DecodeBodyAliasing is DecodeBody for a body with one large bin field,
// key: it returns that field's bytes aliasing the request (see
// UnmarshalAliasing) instead of decoding them into v.
func (r *Request) DecodeBodyAliasing(key string, v any) ([]byte, error) {
	if len(r.Body) == 0 {
		return nil, nil
	}
	data, err := UnmarshalAliasing(r.Body, key, v)
	if err != nil {
		return nil, Errorf(CodeInvalidArgument, "", "decode %s body: %v", r.Op, err)
	}
	return data, nil
}

// aliasingResult is a result that Response.Into decodes with its bulk
// data aliasing the reply instead of copied (DecodeResponse's result
// already aliases the message, which nothing reuses): a chunk of a file or
// of a process's output is neither allocated nor copied again on its way
// through the control plane. Keeping such a result keeps its reply.
type aliasingResult interface{ decodeAliasing(data []byte) error }

func (r *FsReadResult) decodeAliasing(data []byte) error {
	d, err := UnmarshalAliasing(data, "data", r)
	r.Data = d
	return err
}

func (r *ProcReadResult) decodeAliasing(data []byte) error {
	rest, chunks, err := splitField(data, "chunks")
	if err != nil {
		return err
	}
	if err := Unmarshal(rest, r); err != nil {
		return err
	}
	r.Chunks = nil
	if chunks == nil || len(chunks) == 1 && chunks[0] == 0xc0 {
		return nil
	}
	n, i, ok := arrayHeader(chunks)
	if !ok {
		return fmt.Errorf("msgpack: chunks is not an array")
	}
	// skipValue bounded every element by the bytes it spans: n is at most
	// len(chunks).
	r.Chunks = make([]ProcChunk, n)
	for k := range n {
		end, err := skipValue(chunks, i)
		if err != nil {
			return err
		}
		c := &r.Chunks[k]
		if c.Data, err = UnmarshalAliasing(chunks[i:end], "d", c); err != nil {
			return err
		}
		i = end
	}
	return nil
}

// arrayHeader reads an array header: its length and where elements start.
func arrayHeader(b []byte) (n, next int, ok bool) {
	switch {
	case len(b) == 0:
	case b[0] >= 0x90 && b[0] <= 0x9f:
		return int(b[0] & 0x0f), 1, true
	case b[0] == 0xdc && len(b) >= 3:
		return int(b[1])<<8 | int(b[2]), 3, true
	case b[0] == 0xdd && len(b) >= 5:
		return int(b[1])<<24 | int(b[2])<<16 | int(b[3])<<8 | int(b[4]), 5, true
	}
	return 0, 0, false
}
