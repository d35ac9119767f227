package envelope

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flightgw/flightgw/codec/paimon"
)

// Regenerate the golden envelopes with:
//
//	go test ./codec/envelope -run TestGolden -update
var update = flag.Bool("update", false, "rewrite testdata/*.bin")

var goldenKey = []byte("golden-signing-key")

// goldenCases are the envelopes under testdata/, sealed with goldenKey.
func goldenCases(t testing.TB) map[string]Envelope {
	java, err := os.ReadFile("../paimon/testdata/v11_partitioned.bin") // written by Paimon 1.4.2
	if err != nil {
		t.Fatal(err)
	}
	ice, err := EncodeReceipts([]Receipt{{Metadata: []byte(`{"format":"flightgw.iceberg.data-files/v1","files":[]}`), RowCount: 3, ByteCount: 1024}})
	if err != nil {
		t.Fatal(err)
	}
	at := time.UnixMilli(1764400000123).UTC()
	return map[string]Envelope{
		"v2_iceberg": {Version: 2, Kind: "iceberg", SerializerVersion: ReceiptsVersion,
			Table: []string{"lake", "default", "orders"}, CommitUser: "default/alice", PreparedAt: at, Payload: ice},
		"v2_paimon_java": {Version: 2, Kind: paimon.EnvelopeKind, SerializerVersion: paimon.Version11,
			Table: []string{"pl", "db", "ns2", "events"}, CommitUser: "", PreparedAt: at, Payload: java},
	}
}

func TestGolden(t *testing.T) {
	for name, e := range goldenCases(t) {
		path := filepath.Join("testdata", name+".bin")
		b, err := Seal(e, goldenKey)
		if err != nil {
			t.Fatal(err)
		}
		if *update {
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b, want) {
			t.Errorf("%s: Seal differs from the golden bytes", name)
		}
		got, err := Open(want, goldenKey)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got.Kind != e.Kind || got.SerializerVersion != e.SerializerVersion || !slices.Equal(got.Table, e.Table) ||
			got.CommitUser != e.CommitUser || !got.PreparedAt.Equal(e.PreparedAt) || !bytes.Equal(got.Payload, e.Payload) {
			t.Errorf("%s: opened %+v, want %+v", name, got, e)
		}
	}
}

// A Paimon Java payload travels in the envelope and decodes after it has
// been checked against the table and the key.
func TestPaimonJavaPayload(t *testing.T) {
	b, err := os.ReadFile("testdata/v2_paimon_java.bin")
	if err != nil {
		t.Fatal(err)
	}
	e, err := Open(b, goldenKey)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(e.Table, []string{"pl", "db", "ns2", "events"}) {
		t.Fatalf("table %v", e.Table)
	}
	msgs, err := paimon.DecodeList(e.SerializerVersion, e.Payload)
	if err != nil || len(msgs) == 0 {
		t.Fatalf("%d messages, %v", len(msgs), err)
	}
	if _, err := Open(b, []byte("another key")); !errors.Is(err, ErrSignature) {
		t.Fatalf("another key: %v", err)
	}
}

// Version 1 (the unsigned envelope of codec/paimon's Wrap) is refused by
// Parse and Open.
func TestVersion1(t *testing.T) {
	v1, err := paimon.Wrap(paimon.Version11, []byte{0, 0, 0, 0})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Parse(v1); !errors.Is(err, ErrUnsupportedVersion) || !strings.Contains(err.Error(), "unsigned") {
		t.Fatalf("parse v1: %v", err)
	}
	if _, err := Open(v1, goldenKey); !errors.Is(err, ErrUnsupportedVersion) || !strings.Contains(err.Error(), "unsigned") {
		t.Fatalf("open v1: %v", err)
	}
}

func TestRefused(t *testing.T) {
	good, err := os.ReadFile("testdata/v2_iceberg.bin")
	if err != nil {
		t.Fatal(err)
	}
	flip := func(i int) []byte { b := slices.Clone(good); b[i] ^= 1; return b }
	resign := func(mut func(*Envelope)) []byte {
		e := goldenCases(t)["v2_iceberg"]
		mut(&e)
		b, err := Seal(e, goldenKey)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	// A backend kind Seal refuses, sealed by hand.
	e := goldenCases(t)["v2_iceberg"]
	e.Kind = "ice berg"
	wrongKind := seal(e, goldenKey)

	cases := []struct {
		name string
		b    []byte
		kind error
		says string
	}{
		{"empty", nil, ErrMalformed, "header"},
		{"magic", append([]byte("XXXX"), good[4:]...), ErrMalformed, "magic"},
		{"envelope version", flip(4), ErrUnsupportedVersion, "version 3"},
		{"truncated in the header", good[:12], ErrMalformed, "truncated"},
		{"truncated payload", good[:len(good)-40], ErrMalformed, "truncated"},
		{"truncated signature", good[:len(good)-1], ErrMalformed, "payload length"},
		{"padded", append(slices.Clone(good), 0), ErrMalformed, "payload length"},
		{"damaged payload", flip(len(good) - macSize - 3), ErrMalformed, "checksum"},
		{"forged signature", flip(len(good) - 1), ErrSignature, "HMAC"},
		{"backend kind", wrongKind, ErrMalformed, `backend kind "ice berg"`},
	}
	for _, c := range cases {
		_, err := Open(c.b, goldenKey)
		if !errors.Is(err, c.kind) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v, want %v naming %q", c.name, err, c.kind, c.says)
		}
	}
	// Re-signed with the right key, a changed table is a valid envelope
	// for another table: the caller compares.
	e, err = Open(resign(func(e *Envelope) { e.Table[2] = "other" }), goldenKey)
	if err != nil || e.Table[2] != "other" {
		t.Fatalf("resigned: %v", err)
	}
	if _, err := Open(good, nil); !errors.Is(err, ErrSignature) {
		t.Fatalf("no key: %v", err)
	}
	for _, bad := range []Envelope{
		{Kind: "", SerializerVersion: 1, Table: []string{"a", "b"}},
		{Kind: "ice\nberg", SerializerVersion: 1, Table: []string{"a", "b"}},
		{Kind: "iceberg", SerializerVersion: 1, Table: []string{"a"}},
		{Kind: "iceberg", SerializerVersion: 1, Table: []string{"a", ""}},
	} {
		if _, err := Seal(bad, goldenKey); err == nil {
			t.Errorf("Seal(%+v) succeeded", bad)
		}
	}
}
