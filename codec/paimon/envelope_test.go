package paimon

import (
	"bytes"
	"errors"
	"testing"
)

func TestEnvelopeRoundTrip(t *testing.T) {
	payload := []byte{0, 0, 0, 0}
	env, err := Wrap(Version11, payload)
	if err != nil {
		t.Fatal(err)
	}
	want := []byte{'F', 'G', 'C', 'M', 1, 0, 0, 0, 11, 0, 0, 0, 4}
	if !bytes.Equal(env[:13], want) || len(env) != EnvelopeHeaderSize+4 {
		t.Fatalf("header % x", env[:EnvelopeHeaderSize])
	}
	v, p, err := Unwrap(env)
	if err != nil || v != Version11 || !bytes.Equal(p, payload) {
		t.Fatalf("Unwrap = %d, % x, %v", v, p, err)
	}
}

func TestEnvelopeErrors(t *testing.T) {
	good, err := Wrap(Version12, []byte("payload"))
	if err != nil {
		t.Fatal(err)
	}
	mut := func(i int, b byte) []byte { c := append([]byte{}, good...); c[i] = b; return c }
	tests := []struct {
		name string
		in   []byte
		kind error
	}{
		{"short", good[:10], ErrMalformed},
		{"bad magic", mut(0, 'X'), ErrMalformed},
		{"envelope version 2", mut(4, 2), ErrUnsupportedVersion},
		{"length too long", mut(12, 99), ErrMalformed},
		{"truncated payload", good[:len(good)-1], ErrMalformed},
		{"payload bit flip", mut(EnvelopeHeaderSize, 'q'), ErrMalformed},
		{"checksum flip", mut(13, good[13]^1), ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, _, err := Unwrap(tt.in); !errors.Is(err, tt.kind) {
				t.Fatalf("error %v, want %v", err, tt.kind)
			}
		})
	}
	// A correct checksum over an unknown serializer version still fails on the version.
	bad, _ := Wrap(Version12, nil)
	bad[8] = 13
	fixed, _ := Wrap(Version12, nil)
	copy(fixed, bad[:13])
	if _, _, err := Unwrap(fixed); err == nil {
		t.Fatal("accepted a rewritten version with a stale checksum")
	}
}
