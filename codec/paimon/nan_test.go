package paimon

import (
	"encoding/binary"
	"math"
	"testing"
)

// TestJSONNaNIsJavas: a DOUBLE or FLOAT given as JSON "NaN" is built with
// the bits of Java's Double.NaN and Float.NaN (jshell:
// Long.toHexString(Double.doubleToRawLongBits(Double.NaN)) is
// 7ff8000000000000, Float.floatToRawIntBits(Float.NaN) 7fc00000), as Paimon
// Java builds the same partition: it compares partition rows byte by byte.
// Go's math.NaN() is 0x7ff8000000000001.
func TestJSONNaNIsJavas(t *testing.T) {
	r := RowJSON{Arity: 2, Types: []string{"DOUBLE", "FLOAT"}, Values: []any{"NaN", "NaN"}}
	row, err := r.row()
	if err != nil {
		t.Fatal(err)
	}
	// A BinaryRow of arity 2: an 8-byte null bitset, then one 8-byte slot
	// per field.
	d := row.data
	if len(d) < 24 {
		t.Fatalf("row of %d bytes", len(d))
	}
	if got := binary.LittleEndian.Uint64(d[8:]); got != 0x7ff8000000000000 {
		t.Errorf("DOUBLE NaN bits %#x, want Java's 0x7ff8000000000000", got)
	}
	if got := binary.LittleEndian.Uint32(d[16:]); got != 0x7fc00000 {
		t.Errorf("FLOAT NaN bits %#x, want Java's 0x7fc00000", got)
	}
	// Read back, they are NaN and render as "NaN" again.
	dv, _ := row.Double(0)
	fv, _ := row.Float(1)
	if !math.IsNaN(dv) || !math.IsNaN(float64(fv)) {
		t.Errorf("read back %v, %v", dv, fv)
	}
	if j := floatJSON(dv); j != "NaN" {
		t.Errorf("rendered %v", j)
	}
}
