package agent

import (
	"bytes"

	"github.com/outposthq/outpost/agent/proc"
	"github.com/vmihailenco/msgpack/v5"
)

// eventsEncoder writes an attach stream's events frames (a
// wire.ProcReadResult in msgpack) into one buffer, reused: the bytes
// wire.Marshal(wireRead(res)) makes, without its reflection, the result's
// copy, or a new buffer (allocations on every keystroke's echo).
// TestEventsEncoderIsMarshal holds it to wire.Marshal's bytes.
type eventsEncoder struct {
	buf bytes.Buffer
}

// encode returns res's encoding, good until the next encode, and the
// output bytes it carries.
func (e *eventsEncoder) encode(res proc.ReadResult) ([]byte, int, error) {
	e.buf.Reset()
	enc := msgpack.GetEncoder()
	defer msgpack.PutEncoder(enc)
	enc.Reset(&e.buf)
	n, err := encodeEvents(enc, res)
	if err != nil {
		return nil, 0, err
	}
	if e.buf.Cap() > 1<<20 {
		// A large read's buffer is not kept for the stream's life.
		b := bytes.Clone(e.buf.Bytes())
		e.buf = bytes.Buffer{}
		return b, n, nil
	}
	return e.buf.Bytes(), n, nil
}

// encodeEvents writes res as msgpack encodes wire.ProcReadResult (a map
// of its fields in order, the omitempty ones left out when zero; each
// wire.ProcChunk a map of s, st, d), with the encoder's own calls for each
// field's kind: uint64 and int64 at full width, int compact, as the
// reflection-driven encoder (without UseCompactInts) does.
func encodeEvents(enc *msgpack.Encoder, res proc.ReadResult) (int, error) {
	fields := 2
	for _, set := range [...]bool{res.ExitSeq != 0, res.ExitCode != 0, res.TimedOut, res.ClosedSeq != 0, res.Dropped != 0} {
		if set {
			fields++
		}
	}
	n := 0
	err := first(
		enc.EncodeMapLen(fields),
		enc.EncodeString("chunks"),
		enc.EncodeArrayLen(len(res.Chunks)),
	)
	for _, c := range res.Chunks {
		n += len(c.Data)
		if err == nil {
			err = first(
				enc.EncodeMapLen(3),
				enc.EncodeString("s"), enc.EncodeUint64(c.Seq),
				enc.EncodeString("st"), enc.EncodeString(c.Stream),
				enc.EncodeString("d"), enc.EncodeBytes(c.Data),
			)
		}
	}
	if err == nil {
		err = first(enc.EncodeString("next"), enc.EncodeUint64(res.NextSeq))
	}
	if err == nil && res.ExitSeq != 0 {
		err = first(enc.EncodeString("exitSeq"), enc.EncodeUint64(res.ExitSeq))
	}
	if err == nil && res.ExitCode != 0 {
		err = first(enc.EncodeString("exit"), enc.EncodeInt(int64(res.ExitCode)))
	}
	if err == nil && res.TimedOut {
		err = first(enc.EncodeString("timedOut"), enc.EncodeBool(true))
	}
	if err == nil && res.ClosedSeq != 0 {
		err = first(enc.EncodeString("closedSeq"), enc.EncodeUint64(res.ClosedSeq))
	}
	if err == nil && res.Dropped != 0 {
		err = first(enc.EncodeString("dropped"), enc.EncodeInt64(res.Dropped))
	}
	return n, err
}

// first is the first of errs not nil.
func first(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
