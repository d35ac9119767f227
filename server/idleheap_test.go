package server

import (
	"runtime"
	"testing"
)

// TestIdleHeapReleased: heap left idle by garbage (what an ingest leaves)
// is returned to the system by the release before a stream, and a
// second release within idleHeapEvery does nothing.
func TestIdleHeapReleased(t *testing.T) {
	garbage := make([][]byte, 0, 64)
	for range 64 {
		garbage = append(garbage, make([]byte, 2<<20))
	}
	for _, b := range garbage {
		b[0] = 1
	}
	garbage = nil
	runtime.GC()
	if n := idleBytes(); n < idleHeapRelease {
		t.Skipf("only %d bytes idle after freeing 128 MiB: the runtime returned them itself", n)
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
	runtime.GC()
	h.release()
	h.wait()
	if h.last != first {
		t.Errorf("released again %s after the first release", h.last.Sub(first))
	}
}
