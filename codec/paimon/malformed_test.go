package paimon

import (
	"encoding/binary"
	"errors"
	"os"
	"strings"
	"testing"
)

func be32(vs ...int32) []byte {
	var b []byte
	for _, v := range vs {
		b = binary.BigEndian.AppendUint32(b, uint32(v))
	}
	return b
}

func cat(parts ...[]byte) []byte {
	var out []byte
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// TestDecodeMalformed feeds hostile inputs and expects an error that wraps the right
// kind and names the field at fault, never a panic.
func TestDecodeMalformed(t *testing.T) {
	fixture, err := os.ReadFile("testdata/v11_partitioned.bin")
	if err != nil {
		t.Fatal(err)
	}
	emptyRow := cat(be32(12, 0), make([]byte, 8))
	tests := []struct {
		name    string
		version int
		in      []byte
		kind    error
		field   string
	}{
		{"unknown version 13", 13, be32(0), ErrUnsupportedVersion, "version 13"},
		{"unknown version 14", 14, be32(0), ErrUnsupportedVersion, "supported: [10 11 12]"},
		{"version 9", 9, be32(0), ErrUnsupportedVersion, "version 9"},
		{"empty input", Version12, nil, ErrMalformed, "message list count"},
		{"negative message count", Version12, be32(-1), ErrMalformed, "negative count"},
		{"count beyond input", Version12, be32(1 << 30), ErrMalformed, "message list"},
		{"partition length past input", Version12, cat(be32(1, 1000), make([]byte, 60)), ErrMalformed, "partition"},
		{"negative partition length", Version12, cat(be32(1, -5), make([]byte, 60)), ErrMalformed, "negative length"},
		{"partition shorter than arity", Version12, cat(be32(1, 2, 0), make([]byte, 60)), ErrMalformed, "partition"},
		{"bad arity", Version12, cat(be32(1, 12, 5), make([]byte, 8), make([]byte, 60)), ErrMalformed, "arity 5"},
		{"negative arity", Version12, cat(be32(1, 12, -1), make([]byte, 8), make([]byte, 60)), ErrMalformed, "negative arity"},
		{"bad total buckets flag", Version12, cat(be32(1), emptyRow, be32(0), []byte{7}, make([]byte, 40)), ErrMalformed, "total buckets flag"},
		{"negative file count", Version12, cat(be32(1), emptyRow, be32(0), []byte{0}, be32(-3), make([]byte, 40)), ErrMalformed, "new files"},
		{"file count beyond input", Version12, cat(be32(1), emptyRow, be32(0), []byte{0}, be32(1000), make([]byte, 40)), ErrMalformed, "new files: count 1000"},
		{"truncated fixture", Version11, fixture[:len(fixture)-3], ErrMalformed, ""},
		{"trailing bytes", Version11, append(append([]byte{}, fixture...), 0), ErrMalformed, "trailing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodeList(tt.version, tt.in)
			if !errors.Is(err, tt.kind) {
				t.Fatalf("error %v, want one wrapping %v", err, tt.kind)
			}
			if !strings.Contains(err.Error(), tt.field) {
				t.Fatalf("error %q does not name %q", err, tt.field)
			}
		})
	}
}

// TestDecodeCorruptedRows flips offsets inside real data-file rows: an offset outside its
// row must be an error naming the field.
func TestDecodeCorruptedRows(t *testing.T) {
	fixture, err := os.ReadFile("testdata/v10_fields.bin")
	if err != nil {
		t.Fatal(err)
	}
	failures := 0
	for i := range fixture {
		b := append([]byte{}, fixture...)
		b[i] ^= 0x40
		if _, err := DecodeList(Version10, b); err != nil {
			failures++
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("flip at %d: %v does not wrap ErrMalformed", i, err)
			}
		}
	}
	if failures == 0 {
		t.Fatal("no corruption was detected")
	}
}

func TestRowAccessorsOutOfRange(t *testing.T) {
	r, err := BuildRow(mustTypes(t, "INT", "STRING"), []any{int32(1), "a long string value"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		err  error
	}{
		{"field -1", func() error { _, err := r.Int(-1); return err }()},
		{"field 2", func() error { _, err := r.String(2); return err }()},
		{"row of wrong arity", func() error { _, err := r.Values(mustTypes(t, "INT")); return err }()},
		{"string read as nested row", func() error { _, err := r.Row(0, 3); return err }()},
	} {
		if !errors.Is(tt.err, ErrMalformed) {
			t.Errorf("%s: %v", tt.name, tt.err)
		}
	}
	// A string slot whose offset points past the row.
	bad := append([]byte{}, r.Bytes()...)
	le.PutUint64(bad[bitSetWidth(2)+8:], uint64(4096)<<32|8)
	br, err := NewRow(2, bad)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := br.String(1); !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), "field 1") {
		t.Fatalf("offset outside row: %v", err)
	}
}

func TestEncodeRejectsWhatVersionCannotExpress(t *testing.T) {
	gi := func(src []byte) []CommitMessage {
		return []CommitMessage{{Partition: EmptyRow, Data: DataIncrement{NewIndexFiles: []IndexFile{{
			IndexType: "btree", FileName: "g", GlobalIndex: &GlobalIndex{SourceMeta: src}}}}}}
	}
	dup := []CommitMessage{{Partition: EmptyRow, Data: DataIncrement{NewIndexFiles: []IndexFile{{
		IndexType: "DELETION_VECTORS", FileName: "dv", DVRanges: []DeletionVector{{DataFileName: "a"}, {DataFileName: "a"}}}}}}}
	bad := FileSource(7)
	src := []CommitMessage{{Partition: EmptyRow, Data: DataIncrement{NewFiles: []DataFile{{FileName: "f",
		MinKey: EmptyRow, MaxKey: EmptyRow, KeyStats: EmptyStats, ValueStats: EmptyStats, FileSource: &bad}}}}}
	tests := []struct {
		name    string
		version int
		msgs    []CommitMessage
		want    string
	}{
		{"global index at v10", Version10, gi(nil), "globalIndex needs serializer version 11"},
		{"source meta at v11", Version11, gi([]byte{1}), "sourceMeta needs serializer version 12"},
		{"duplicate deletion vector", Version12, dup, `data file "a" listed twice`},
		{"unknown file source", Version12, src, "fileSource: unknown value 7"},
		{"unset partition", Version12, []CommitMessage{{}}, "partition"},
		{"unknown version", 13, nil, "serializer version 13"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := EncodeList(tt.version, tt.msgs)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
	if _, err := EncodeList(Version12, gi([]byte{1})); err != nil {
		t.Fatalf("v12 refused source meta: %v", err)
	}
}
