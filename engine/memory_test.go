//go:build duckdb_arrow

package engine

import "testing"

// MemoryUsage reads duckdb_memory() through the locked-down engine: the
// lock-down must not refuse it, and an open engine holds some memory.
func TestMemoryUsage(t *testing.T) {
	eng, err := New(Options{MemoryLimit: "64MB", Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	n, err := eng.MemoryUsage()
	if err != nil {
		t.Fatal(err)
	}
	if n < 0 || n > 64<<20 {
		t.Fatalf("MemoryUsage = %d, want within [0, 64MB]", n)
	}
	t.Logf("duckdb_memory() of an idle engine: %d bytes", n)
}
