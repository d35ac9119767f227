package paimon

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The fuzz targets below cover the decoders fuzz_test.go does not: the
// version 1 envelope, the type parser, the JSON model and the array and
// map readers. Each must fail cleanly (an error of the package's kinds
// where the decoder promises one), never panic, and never allocate for a
// length the input does not hold.

// FuzzUnwrap: any bytes unwrap (Open) or fail with ErrMalformed or
// ErrUnsupportedVersion; what unwraps re-wraps to the same bytes.
func FuzzUnwrap(f *testing.F) {
	seedFixtures(f, func(v int, b []byte) {
		w, err := Wrap(v, b)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(w)
	})
	f.Add([]byte("FGCM\x01\x00\x00\x00\x0b\xff\xff\xff\xff\x00\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		v, payload, err := Unwrap(b)
		if err != nil {
			if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrUnsupportedVersion) {
				t.Fatalf("error of no kind: %v", err)
			}
			return
		}
		again, err := Wrap(v, payload)
		if err != nil || !bytes.Equal(again, b) {
			t.Fatalf("re-wrapped envelope differs (err %v)", err)
		}
		if _, _, err := Open(b, 0); err != nil && !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrUnsupportedVersion) {
			t.Fatalf("Open: error of no kind: %v", err)
		}
	})
}

// FuzzParseType: any spelling parses or fails; what parses prints a
// spelling that parses to the same type.
func FuzzParseType(f *testing.F) {
	for _, ts := range [][]string{keyTypes, partTypes, valueTypes, nestTypes} {
		for _, s := range ts {
			f.Add(s)
		}
	}
	f.Add("ROW<a INT NOT NULL, b MAP<STRING, ARRAY<DECIMAL(38, 10)>>>")
	f.Add(strings.Repeat("ARRAY<", 200) + "INT" + strings.Repeat(">", 200))
	f.Fuzz(func(t *testing.T, s string) {
		typ, err := ParseType(s)
		if err != nil {
			return
		}
		again, err := ParseType(typ.String())
		if err != nil {
			t.Fatalf("%q parses, its spelling %q does not: %v", s, typ.String(), err)
		}
		if again.String() != typ.String() {
			t.Fatalf("%q: spelling %q reparses as %q", s, typ.String(), again.String())
		}
	})
}

// FuzzReadDocument: any JSON reads or fails; a document that converts to
// messages and encodes yields a payload that decodes.
func FuzzReadDocument(f *testing.F) {
	docs, _ := filepath.Glob("testdata/v*.json")
	if len(docs) == 0 {
		f.Fatal("no golden documents to seed from")
	}
	for _, p := range docs {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := ReadDocument(bytes.NewReader(b))
		if err != nil {
			return
		}
		msgs, err := d.ToMessages()
		if err != nil {
			return
		}
		for _, v := range SupportedVersions {
			out, err := EncodeList(v, msgs)
			if err != nil {
				continue
			}
			if _, err := DecodeList(v, out); err != nil {
				t.Fatalf("version %d: an encoded document does not decode: %v", v, err)
			}
		}
	})
}

// FuzzArrayMap: any bytes read as an array or a map of the fixtures'
// nested types fail cleanly or yield values that rebuild.
func FuzzArrayMap(f *testing.F) {
	dec, err := ParseDecimal("123456789012345.67", 20, 2)
	if err != nil {
		f.Fatal(err)
	}
	nested := []string{"ARRAY<STRING>", "ARRAY<DECIMAL(20, 2)>", "ARRAY<INT>", "ARRAY<ROW<INT, STRING>>", "ARRAY<TIMESTAMP(9)>"}
	samples := [][]any{
		{"a", "a string longer than a slot", nil},
		{dec, nil},
		{int32(1), nil, int32(-7)},
		{[]any{int32(1), "x"}, nil, []any{nil, "a string longer than a slot"}},
		{Timestamp{Millis: 1, NanoOfMillis: 999_999}, nil},
	}
	for i, s := range nested {
		ts := mustTypes(f, s)
		a, err := BuildArray(*ts[0].Elem, samples[i])
		if err != nil {
			f.Fatal(err)
		}
		f.Add(uint8(i), false, a.Bytes())
	}
	mt := mustTypes(f, "MAP<STRING, BIGINT>")[0]
	m, err := BuildMap(*mt.Key, *mt.Val, []MapEntry{{Key: "a", Value: int64(1)}, {Key: "a longer key", Value: nil}})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(uint8(0), true, m.data)
	f.Fuzz(func(t *testing.T, which uint8, isMap bool, data []byte) {
		if isMap {
			m, err := NewMap(data)
			if err != nil {
				return
			}
			es, err := m.Entries(*mt.Key, *mt.Val)
			if err != nil {
				return
			}
			if _, err := BuildMap(*mt.Key, *mt.Val, es); err != nil {
				t.Fatalf("entries read do not rebuild: %v", err)
			}
			return
		}
		et := *mustTypes(t, nested[int(which)%len(nested)])[0].Elem
		a, err := NewArray(data)
		if err != nil {
			return
		}
		vals, err := a.Values(et)
		if err != nil {
			return
		}
		if len(vals) != a.Len() {
			t.Fatalf("%d values of an array of %d", len(vals), a.Len())
		}
		if _, err := BuildArray(et, vals); err != nil && !strings.Contains(err.Error(), "precision") {
			t.Fatalf("values read do not rebuild: %v", err)
		}
	})
}
