package envelope

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// FuzzOpen: any bytes open or fail cleanly with one of the package's
// errors, and what opens re-seals to the very same bytes (nothing in an
// envelope is read but not signed).
func FuzzOpen(f *testing.F) {
	bins, _ := filepath.Glob("testdata/*.bin")
	if len(bins) == 0 {
		f.Fatal("no golden envelopes to seed from")
	}
	for _, p := range bins {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := Open(b, goldenKey)
		if err != nil {
			if !IsMalformed(err) {
				t.Fatalf("error of no kind: %v", err)
			}
			return
		}
		out, err := Seal(e, goldenKey)
		if err != nil {
			t.Fatalf("an opened envelope does not seal: %v", err)
		}
		if !bytes.Equal(out, b) {
			t.Fatalf("re-sealed bytes differ")
		}
		if e.Kind == "iceberg" {
			rs, err := DecodeReceipts(e.Payload)
			if err != nil {
				return
			}
			again, err := EncodeReceipts(rs)
			if err != nil {
				t.Fatal(err)
			}
			if rs2, err := DecodeReceipts(again); err != nil || !slices.EqualFunc(rs, rs2, func(a, b Receipt) bool {
				return bytes.Equal(a.Metadata, b.Metadata) && a.RowCount == b.RowCount && a.ByteCount == b.ByteCount
			}) {
				t.Fatalf("receipts do not round-trip: %v", err)
			}
		}
	})
}

// FuzzDecodeReceipts: any payload decodes or fails with ErrMalformed.
func FuzzDecodeReceipts(f *testing.F) {
	f.Add([]byte(`{"format":"flightgw.receipts/v1","receipts":[{"metadata":{},"row_count":1,"byte_count":2}]}`))
	f.Add([]byte(`{"format":"flightgw.receipts/v1","receipts":[]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		if _, err := DecodeReceipts(b); err != nil && !IsMalformed(err) {
			t.Fatalf("error of no kind: %v", err)
		}
	})
}
