package controlplane

import (
	"encoding"
	"encoding/json"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/outposthq/outpost/wire"
)

// checkFields reports the first object key in data (valid JSON, already
// decoded into a value of type t) that names no field of the struct it
// lands in, as invalid_argument naming it by its path, e.g. "timeoutMS" or
// "backends.laptop.knd". Keys must match a field's JSON name exactly:
// encoding/json would also take "timeoutMS" for "timeoutMs", and would
// silently drop a key it does not know.
func checkFields(data []byte, t reflect.Type) error {
	return checkValue(data, t, "")
}

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

func checkValue(data []byte, t reflect.Type, path string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if !hasStructs(t) {
		return nil
	}
	switch t.Kind() {
	case reflect.Struct:
		return checkObject(data, t, path)
	case reflect.Map:
		var m map[string]json.RawMessage
		if json.Unmarshal(data, &m) != nil {
			return nil // null, or not an object: the decode judged it
		}
		for _, k := range sortedKeys(m) {
			if err := checkValue(m[k], t.Elem(), path+k+"."); err != nil {
				return err
			}
		}
	case reflect.Slice, reflect.Array:
		var a []json.RawMessage
		if json.Unmarshal(data, &a) != nil {
			return nil
		}
		for i, v := range a {
			if err := checkValue(v, t.Elem(), path+strconv.Itoa(i)+"."); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkObject checks the keys of one JSON object decoded into struct t.
func checkObject(data []byte, t reflect.Type, path string) error {
	var m map[string]json.RawMessage
	if json.Unmarshal(data, &m) != nil {
		return nil
	}
	fields := structFields(t)
	for _, k := range sortedKeys(m) {
		ft, ok := fields[k]
		if !ok {
			return unknownField(path+k, k, fields)
		}
		if err := checkValue(m[k], ft, path+k+"."); err != nil {
			return err
		}
	}
	return nil
}

// unknownField is the error of key (at path), with the field meant when
// only its case differs, else the fields there are.
func unknownField(path, key string, fields map[string]reflect.Type) error {
	names := make([]string, 0, len(fields))
	for name := range fields {
		if strings.EqualFold(name, key) {
			return wire.Errorf(wire.CodeInvalidArgument, wire.ReasonUnknownField, "request body: unknown field %q (did you mean %q?)", path, name)
		}
		names = append(names, name)
	}
	slices.Sort(names)
	return wire.Errorf(wire.CodeInvalidArgument, wire.ReasonUnknownField, "request body: unknown field %q (known: %s)", path, strings.Join(names, ", "))
}

func sortedKeys(m map[string]json.RawMessage) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// hasStructs reports whether values of t can hold a JSON object decoded
// into a struct, whose keys need checking. Types that decode themselves
// (time.Time) hold none.
func hasStructs(t reflect.Type) bool {
	if v, ok := hasStructsCache.Load(t); ok {
		return v.(bool)
	}
	// A recursive type counts as having structs while it is looked at.
	hasStructsCache.Store(t, true)
	v := computeHasStructs(t)
	hasStructsCache.Store(t, v)
	return v
}

var hasStructsCache sync.Map // reflect.Type → bool

func computeHasStructs(t reflect.Type) bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Implements(jsonUnmarshaler) || reflect.PointerTo(t).Implements(jsonUnmarshaler) ||
		t.Implements(textUnmarshaler) || reflect.PointerTo(t).Implements(textUnmarshaler) {
		return false
	}
	switch t.Kind() {
	case reflect.Struct:
		return true
	case reflect.Map, reflect.Slice, reflect.Array:
		return hasStructs(t.Elem())
	}
	return false
}

// structFields maps the JSON names of t's fields (embedded structs'
// promoted ones included) to their types.
func structFields(t reflect.Type) map[string]reflect.Type {
	if v, ok := structFieldsCache.Load(t); ok {
		return v.(map[string]reflect.Type)
	}
	fields := map[string]reflect.Type{}
	addFields(fields, t)
	structFieldsCache.Store(t, fields)
	return fields
}

var structFieldsCache sync.Map // reflect.Type → map[string]reflect.Type

func addFields(fields map[string]reflect.Type, t reflect.Type) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		ft := f.Type
		if f.Anonymous && name == "" {
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				addFields(fields, ft)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if _, dup := fields[name]; !dup {
			fields[name] = f.Type
		}
	}
}
