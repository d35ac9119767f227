package paimon

import (
	"os"
	"runtime"
	"testing"
)

// TestDecodeAllocBounded: a payload whose counts, lengths and offsets are
// overwritten anywhere with huge values (up to 2^31-1: gigabytes claimed)
// decodes or fails allocating no more than a fixed bound: nothing is
// allocated for what the input does not hold.
func TestDecodeAllocBounded(t *testing.T) {
	orig, err := os.ReadFile("testdata/v11_fields.bin")
	if err != nil {
		t.Fatal(err)
	}
	const bound = 1 << 20
	huge := [][]byte{{0x7f, 0xff, 0xff, 0xff}, {0x00, 0x10, 0x00, 0x00}, {0xff, 0xff, 0xff, 0x7f}, {0x00, 0x00, 0x00, 0x10}}
	d := make([]byte, len(orig))
	for i := range orig {
		for _, h := range huge {
			copy(d, orig)
			copy(d[i:], h)
			var m0, m1 runtime.MemStats
			runtime.ReadMemStats(&m0)
			_, _ = DecodeList(Version11, d)
			runtime.ReadMemStats(&m1)
			if a := m1.TotalAlloc - m0.TotalAlloc; a > bound {
				t.Fatalf("%x at offset %d: a %d-byte payload allocated %d bytes", h, i, len(d), a)
			}
		}
	}
}
