package actions

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
)

// Decode reads a request body into into (a pointer to one of the request
// types), strictly: a key that is not exactly one of the type's JSON
// names, a key given twice in one object, and data after the object are
// refused with an error naming the key. encoding/json alone matches keys
// without regard to case and keeps the last of duplicate keys, so that
// an audit proxy reading the first "commit_id" of a body, or a
// "COMMIT_ID", would see another request than the gateway runs.
func Decode(body []byte, into any) error {
	t := reflect.TypeOf(into)
	if t == nil || t.Kind() != reflect.Pointer {
		return fmt.Errorf("decode into %T: not a pointer", into)
	}
	// The scanner of json.Valid refuses bad syntax and nesting deeper
	// than encoding/json allows, at no cost, before the walk below.
	if !json.Valid(body) {
		return invalid(body)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := checkValue(dec, t.Elem(), ""); err != nil {
		return err
	}
	strict := json.NewDecoder(bytes.NewReader(body))
	strict.DisallowUnknownFields()
	return strict.Decode(into)
}

// invalid says what makes body, which json.Valid refused, not one JSON
// value.
func invalid(body []byte) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	var v any
	if err := dec.Decode(&v); err != nil {
		return syntaxError("", err)
	}
	return errors.New("trailing data after the JSON object")
}

// checkValue reads one JSON value from dec, checking the keys of every
// object in it against t. It recurses only as deep as t goes (skipRest
// reads the rest without recursing), so a hostile body nested a million
// levels deep costs no stack.
func checkValue(dec *json.Decoder, t reflect.Type, path string) error {
	tok, err := dec.Token()
	if err != nil {
		return syntaxError(path, err)
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch tok {
	case json.Delim('{'):
		if t.Kind() != reflect.Struct {
			return skipRest(dec, path)
		}
		fields := fieldsOf(t)
		seen := map[string]bool{}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return syntaxError(path, err)
			}
			key, _ := kt.(string)
			at := join(path, key)
			ft, ok := fields[key]
			switch {
			case !ok:
				if want := fold(fields, key); want != "" {
					return fmt.Errorf("unknown key %q (keys are case-sensitive: %q)", at, join(path, want))
				}
				return fmt.Errorf("unknown key %q", at)
			case seen[key]:
				return fmt.Errorf("key %q is given twice", at)
			}
			seen[key] = true
			if err := checkValue(dec, ft, at); err != nil {
				return err
			}
		}
		_, err := dec.Token() // '}'
		return syntaxError(path, err)
	case json.Delim('['):
		if t.Kind() != reflect.Slice && t.Kind() != reflect.Array {
			// Not recursing where the type has no more levels bounds the
			// recursion by the type's depth, whatever the body's nesting.
			return skipRest(dec, path)
		}
		elem := t.Elem()
		for i := 0; dec.More(); i++ {
			if err := checkValue(dec, elem, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
		_, err := dec.Token() // ']'
		return syntaxError(path, err)
	}
	return nil
}

// skipRest consumes the rest of an object or array whose opening
// delimiter was read: a value of a type without keys to check (a
// mismatch the strict decode then reports).
func skipRest(dec *json.Decoder, path string) error {
	for depth := 1; depth > 0; {
		tok, err := dec.Token()
		if err != nil {
			return syntaxError(path, err)
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
	}
	return nil
}

// fieldsOf maps the JSON names of t's fields to their types, with the
// fields of embedded structs (TableRef) promoted as encoding/json does.
func fieldsOf(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			for k, v := range fieldsOf(f.Type) {
				if _, ok := out[k]; !ok {
					out[k] = v
				}
			}
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
	return out
}

// fold finds the field whose name key spells in another case.
func fold(fields map[string]reflect.Type, key string) string {
	for name := range fields {
		if strings.EqualFold(name, key) {
			return name
		}
	}
	return ""
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func syntaxError(path string, err error) error {
	if err == nil {
		return nil
	}
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	if path == "" {
		return fmt.Errorf("not a JSON object: %w", err)
	}
	return fmt.Errorf("at %q: %w", path, err)
}
