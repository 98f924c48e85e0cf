package wire

import (
	"bytes"

	"github.com/vmihailenco/msgpack/v5"
)

// decodeResponse decodes a reply envelope without copying its result:
// Result aliases data. msgpack decodes a RawMessage by recording every byte
// it reads into a growing buffer, which for multi-megabyte results (process
// output) cost the control plane more CPU than the rest of a read's path.
// ok is false when data is not a plain map of the envelope's fields; the
// caller then decodes it the general way.
func decodeResponse(data []byte) (r Response, ok bool) {
	if len(data) == 0 || !(data[0] >= 0x80 && data[0] <= 0x8f || data[0] == 0xde || data[0] == 0xdf) {
		return Response{}, false // not a plain map
	}
	rd := bytes.NewReader(data) // an io.ByteScanner: the decoder reads no further than it must
	dec := msgpack.NewDecoder(rd)
	dec.SetCustomStructTag("msgpack")
	dec.DisableAllocLimit(false)
	n, err := dec.DecodeMapLen()
	if err != nil || n < 0 {
		return Response{}, false
	}
	for range n {
		key, err := dec.DecodeString()
		if err != nil {
			return Response{}, false
		}
		switch key {
		case "id":
			r.ID, err = dec.DecodeString()
		case "r":
			start := len(data) - rd.Len()
			err = dec.Skip()
			end := len(data) - rd.Len()
			r.Result = data[start:end:end]
			if len(r.Result) == 1 && r.Result[0] == 0xc0 { // nil, as RawMessage decodes it
				r.Result = nil
			}
		case "err":
			r.Error = nil
			err = dec.Decode(&r.Error)
		default:
			err = dec.Skip()
		}
		if err != nil {
			return Response{}, false
		}
	}
	return r, rd.Len() == 0
}
