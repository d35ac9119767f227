package paimon

import (
	"math/big"
	"reflect"
	"testing"
)

func TestParseType(t *testing.T) {
	tests := []struct {
		in, want string
		bad      bool
	}{
		{in: "INT", want: "INT"},
		{in: "integer not null", want: "INT"},
		{in: "VARCHAR(10)", want: "STRING"},
		{in: "DECIMAL(20,3)", want: "DECIMAL(20, 3)"},
		{in: "DECIMAL", want: "DECIMAL(10, 0)"},
		{in: "TIMESTAMP", want: "TIMESTAMP(6)"},
		{in: "TIMESTAMP_LTZ(3)", want: "TIMESTAMP_LTZ(3)"},
		{in: "MAP<STRING, ARRAY<ROW<INT, BYTES>>>", want: "MAP<STRING, ARRAY<ROW<INT, BYTES>>>"},
		{in: "ROW<>", want: "ROW<>"},
		{in: "DECIMAL(39, 0)", bad: true},
		{in: "TIMESTAMP(10)", bad: true},
		{in: "ARRAY<INT", bad: true},
		{in: "UUID", bad: true},
		{in: "INT INT", bad: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseType(tt.in)
			if tt.bad {
				if err == nil {
					t.Fatalf("accepted %q as %v", tt.in, got)
				}
				return
			}
			if err != nil || got.String() != tt.want {
				t.Fatalf("ParseType(%q) = %v, %v; want %s", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestDecimal(t *testing.T) {
	tests := []struct {
		s        string
		p, sc    int
		unscaled string
		bytes    []byte // BigInteger.toByteArray of the unscaled value
		bad      bool
	}{
		{s: "123.45", p: 10, sc: 2, unscaled: "12345", bytes: []byte{0x30, 0x39}},
		{s: "-0.05", p: 10, sc: 2, unscaled: "-5", bytes: []byte{0xfb}},
		{s: "0", p: 20, sc: 3, unscaled: "0", bytes: []byte{0}},
		{s: "1.28", p: 20, sc: 2, unscaled: "128", bytes: []byte{0, 0x80}},
		{s: "-1.28", p: 20, sc: 2, unscaled: "-128", bytes: []byte{0x80}},
		{s: "-1.29", p: 20, sc: 2, unscaled: "-129", bytes: []byte{0xff, 0x7f}},
		{s: "1.234", p: 10, sc: 2, bad: true},
		{s: "123456", p: 5, sc: 0, bad: true},
		{s: "abc", p: 5, sc: 0, bad: true},
	}
	for _, tt := range tests {
		t.Run(tt.s, func(t *testing.T) {
			d, err := ParseDecimal(tt.s, tt.p, tt.sc)
			if tt.bad {
				if err == nil {
					t.Fatalf("accepted %q", tt.s)
				}
				return
			}
			if err != nil || d.Unscaled.String() != tt.unscaled {
				t.Fatalf("ParseDecimal = %v, %v", d.Unscaled, err)
			}
			if b := d.unscaledBytes(); !reflect.DeepEqual(b, tt.bytes) {
				t.Fatalf("unscaledBytes = % x, want % x", b, tt.bytes)
			}
			back, err := bigDecimal(tt.bytes, tt.p, tt.sc, "test")
			if err != nil || back.Unscaled.Cmp(d.Unscaled) != 0 {
				t.Fatalf("bigDecimal = %v, %v", back.Unscaled, err)
			}
			if d.Unscaled.Cmp(big.NewInt(0)) != 0 && d.String() != tt.s {
				t.Fatalf("String = %s, want %s", d.String(), tt.s)
			}
		})
	}
}

// TestBuildAndReadValues writes every kind of value (and its null) into a row, an array
// and a map, and reads the same values back.
func TestBuildAndReadValues(t *testing.T) {
	types := mustTypes(t, nestTypes...)
	vals := []any{
		[]any{int32(1), "nested string"}, []any{"a", nil, "long element"},
		[]MapEntry{{"k", int64(1)}, {"a-long-key-over-7", nil}},
		[]any{Decimal{Unscaled: big.NewInt(150), Precision: 20, Scale: 2}, nil},
		Timestamp{1700000000000, 999999}, true, int8(-1), int16(300), float32(1.5), -2.25,
		[]byte{0, 1, 2, 3, 4, 5, 6, 7, 8}, Timestamp{Millis: 1}, []any{int32(1), int32(2), int32(3)},
	}
	for _, withNulls := range []bool{false, true} {
		in := vals
		if withNulls {
			in = make([]any, len(vals))
		}
		r, err := BuildRow(types, in)
		if err != nil {
			t.Fatal(err)
		}
		got, err := r.Values(types)
		if err != nil {
			t.Fatal(err)
		}
		for i := range in {
			if want := in[i]; !reflect.DeepEqual(norm(got[i]), norm(want)) {
				t.Errorf("field %d (%v): got %#v, want %#v", i, types[i], got[i], want)
			}
		}
	}
}

// norm makes decimals comparable with DeepEqual.
func norm(v any) any {
	switch x := v.(type) {
	case Decimal:
		return x.String()
	case []any:
		out := make([]any, len(x))
		for i := range x {
			out[i] = norm(x[i])
		}
		return out
	}
	return v
}
