package server

import (
	"runtime/debug"
	"testing"
)

// TestIdleHeapReleased: heap left resident by garbage (what an ingest leaves)
// is returned to the system by the release before a stream, and a
// second release within idleHeapEvery does nothing.
func TestIdleHeapReleased(t *testing.T) {
	// No collection but the release's: the garbage stays resident, as
	// under the GC floor after an ingest.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	garbage := make([][]byte, 0, 64)
	for range 64 {
		garbage = append(garbage, make([]byte, 2<<20))
	}
	for _, b := range garbage {
		b[0] = 1
	}
	garbage = nil
	if n := idleBytes(); n < idleHeapRelease {
		t.Skipf("only %d bytes resident and not live after dropping 128 MiB", n)
	}
	var h idleHeap
	h.release()
	h.wait()
	if n := idleBytes(); n >= idleHeapRelease {
		t.Fatalf("%d bytes of the heap still idle and resident after the release", n)
	}
	first := h.last
	for range 64 {
		garbage = append(garbage, make([]byte, 2<<20))
	}
	garbage = nil
	h.release()
	h.wait()
	if h.last != first {
		t.Errorf("released again %s after the first release", h.last.Sub(first))
	}
}
