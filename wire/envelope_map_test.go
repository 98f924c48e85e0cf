package wire

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
)

// tagged is a struct field's msgpack key and omitempty.
type tagged struct {
	key       string
	omitEmpty bool
	typ       reflect.Type
}

func taggedFields(t *testing.T, v any) []tagged {
	t.Helper()
	rt := reflect.TypeOf(v).Elem()
	var out []tagged
	for i := range rt.NumField() {
		f := rt.Field(i)
		tag, ok := f.Tag.Lookup("msgpack")
		if !ok || tag == "-" {
			t.Fatalf("%s.%s has no msgpack key", rt.Name(), f.Name)
		}
		key, opts, _ := strings.Cut(tag, ",")
		out = append(out, tagged{key: key, omitEmpty: strings.Contains(opts, "omitempty"), typ: f.Type})
	}
	return out
}

// checkListed fails unless the struct fields match the list, key for key.
func checkListed(t *testing.T, name string, got []tagged, list []mapField) {
	t.Helper()
	if len(got) != len(list) {
		t.Fatalf("%s has %d fields before its bulk field, its list in envelope_map.go %d: add the new field to the list", name, len(got), len(list))
	}
	for i, f := range list {
		if got[i].key != f.key || got[i].omitEmpty != f.omitEmpty {
			t.Fatalf("%s field %d is %q (omitempty %v), its list says %q (%v)", name, i, got[i].key, got[i].omitEmpty, f.key, f.omitEmpty)
		}
	}
}

// The maps written field by field (envelope_map.go) list every field of
// their structs, in order, with the body or bulk data last: a field added
// to one of these structs, or after its body, fails here instead of being
// dropped from the wire or miscounted in the map's header.
func TestEnvelopeFieldsMatchStructs(t *testing.T) {
	req := taggedFields(t, &Request{})
	if last := req[len(req)-1]; last.key != requestBodyKey || !last.omitEmpty {
		t.Fatalf("Request's last field is %q, want its body %q (omitempty)", last.key, requestBodyKey)
	}
	rf := requestFields(&Request{})
	checkListed(t, "Request", req[:len(req)-1], rf[:])

	resp := taggedFields(t, &Response{})
	i := 0
	for i < len(resp) && resp[i].key != responseResultKey {
		i++
	}
	rsf := responseFields("")
	checkListed(t, "Response", resp[:i], rsf[:])
	for _, f := range resp[i+1:] {
		if !f.omitEmpty || f.typ.Kind() != reflect.Pointer {
			t.Fatalf("Response's field %q after its result is not a pointer left out when nil: EncodeResult would not write it", f.key)
		}
	}

	for _, body := range []InPlaceBody{&FsUploadChunkRequest{}, &FsReadResult{}, &SnapReadResult{}, &SnapRestoreChunksRequest{}} {
		name := reflect.TypeOf(body).Elem().Name()
		fields := taggedFields(t, body)
		list, key := body.inPlaceFields()
		last := fields[len(fields)-1]
		if last.key != key || last.omitEmpty || last.typ != reflect.TypeOf([]byte(nil)) {
			t.Fatalf("%s's last field is %q, want its bulk []byte %q without omitempty", name, last.key, key)
		}
		checkListed(t, name, fields[:len(fields)-1], list)
	}
}

// fillAll sets every field of the struct v points to a non-zero value, so
// that a field added later is encoded too.
func fillAll(v any) {
	rv := reflect.ValueOf(v).Elem()
	for i := range rv.NumField() {
		f := rv.Field(i)
		switch f.Kind() {
		case reflect.String:
			f.SetString("s" + rv.Type().Field(i).Name)
		case reflect.Int, reflect.Int64, reflect.Int32:
			f.SetInt(int64(1000003 * (i + 1)))
		case reflect.Uint64, reflect.Uint32, reflect.Uint:
			f.SetUint(uint64(7000001 * (i + 1)))
		case reflect.Bool:
			f.SetBool(true)
		}
	}
}

// EncodeRequest and EncodeResult write what Marshal writes for the same
// envelope, with every field set or every optional one left out.
func TestEncodeEnvelopeMatchesMarshal(t *testing.T) {
	body := &FsUploadChunkRequest{Handle: "th", Offset: 1 << 40, Data: []byte("chunk")}
	full := &Request{}
	fillAll(full)
	for _, r := range []*Request{full, {Version: Version, ID: "i", Op: "op", Deadline: 1}} {
		r.Body = nil
		got, err := EncodeRequest(r, body)
		if err != nil {
			t.Fatal(err)
		}
		withBody := *r
		if withBody.Body, err = Marshal(body); err != nil {
			t.Fatal(err)
		}
		want, err := withBody.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("EncodeRequest %x\nMarshal       %x", got, want)
		}
	}
	got, err := EncodeResult("id1", body)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := Marshal(body)
	want, err := Marshal(&Response{ID: "id1", Result: raw})
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("EncodeResult %x\nMarshal      %x (%v)", got, want, err)
	}
}
