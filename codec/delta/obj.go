package delta

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// ErrMalformed is wrapped by every error about bytes that do not follow the protocol.
var ErrMalformed = errors.New("malformed delta log")

// obj reads the fields of one JSON object by their exact names. encoding/json matches
// struct fields case-insensitively and cannot tell an absent field from a zero one; the
// protocol distinguishes required from optional fields and names them exactly, so actions
// are decoded field by field. The first error sticks; later reads return zero values.
type obj struct {
	what string // the action or struct being read, for error messages
	m    map[string]json.RawMessage
	err  error
}

func newObj(what string, raw json.RawMessage) *obj {
	o := &obj{what: what}
	if isNull(raw) {
		o.err = fmt.Errorf("%w: %s is null", ErrMalformed, what)
		return o
	}
	if err := json.Unmarshal(raw, &o.m); err != nil {
		o.err = fmt.Errorf("%w: %s is not a JSON object: %v", ErrMalformed, what, err)
	}
	return o
}

func isNull(raw json.RawMessage) bool {
	return len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null"
}

// field returns the raw value of key, or nil when it is absent or null. A required field
// that is absent or null records an error.
func (o *obj) field(key string, required bool) json.RawMessage {
	if o.err != nil {
		return nil
	}
	raw, ok := o.m[key]
	if !ok || isNull(raw) {
		if required {
			o.err = fmt.Errorf("%w: %s.%s is required", ErrMalformed, o.what, key)
		}
		return nil
	}
	return raw
}

func (o *obj) decode(key string, raw json.RawMessage, v any) bool {
	if err := json.Unmarshal(raw, v); err != nil {
		o.err = fmt.Errorf("%w: %s.%s: %v", ErrMalformed, o.what, key, err)
		return false
	}
	return true
}

func (o *obj) str(key string, required bool) string {
	var s string
	if raw := o.field(key, required); raw != nil {
		o.decode(key, raw, &s)
	}
	return s
}

func (o *obj) strPtr(key string) *string {
	raw := o.field(key, false)
	if raw == nil {
		return nil
	}
	var s string
	if !o.decode(key, raw, &s) {
		return nil
	}
	return &s
}

func (o *obj) i64(key string, required bool) int64 {
	var n int64
	if raw := o.field(key, required); raw != nil {
		o.decode(key, raw, &n)
	}
	return n
}

func (o *obj) i64Ptr(key string) *int64 {
	raw := o.field(key, false)
	if raw == nil {
		return nil
	}
	var n int64
	if !o.decode(key, raw, &n) {
		return nil
	}
	return &n
}

func (o *obj) i32(key string, required bool) int32 {
	var n int32
	if raw := o.field(key, required); raw != nil {
		o.decode(key, raw, &n)
	}
	return n
}

func (o *obj) boolean(key string, required bool) bool {
	var b bool
	if raw := o.field(key, required); raw != nil {
		o.decode(key, raw, &b)
	}
	return b
}

func (o *obj) boolPtr(key string) *bool {
	raw := o.field(key, false)
	if raw == nil {
		return nil
	}
	var b bool
	if !o.decode(key, raw, &b) {
		return nil
	}
	return &b
}

// strMap reads a map<string,string>; a null value is kept as an absent entry.
func (o *obj) strMap(key string, required bool) map[string]string {
	raw := o.field(key, required)
	if raw == nil {
		if required {
			return nil
		}
		return nil
	}
	var m map[string]*string
	if !o.decode(key, raw, &m) {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		if v != nil {
			out[k] = *v
		}
	}
	return out
}

// nullableStrMap reads a map<string,string> whose values may be null (partition values).
func (o *obj) nullableStrMap(key string, required bool) map[string]*string {
	raw := o.field(key, required)
	if raw == nil {
		return nil
	}
	var m map[string]*string
	if !o.decode(key, raw, &m) {
		return nil
	}
	if m == nil {
		m = map[string]*string{}
	}
	return m
}

func (o *obj) strSlice(key string, required bool) []string {
	raw := o.field(key, required)
	if raw == nil {
		return nil
	}
	var s []*string
	if !o.decode(key, raw, &s) {
		return nil
	}
	out := make([]string, 0, len(s))
	for i, v := range s {
		if v == nil {
			o.err = fmt.Errorf("%w: %s.%s[%d] is null", ErrMalformed, o.what, key, i)
			return nil
		}
		out = append(out, *v)
	}
	return out
}

func (o *obj) sub(key string, required bool) *obj {
	raw := o.field(key, required)
	if raw == nil {
		return nil
	}
	s := newObj(o.what+"."+key, raw)
	if s.err != nil {
		o.err = s.err
		return nil
	}
	return s
}
