package pqwrite

import (
	"bytes"
	"runtime"
	"testing"
	"time"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

func same(a, b []byte) bool { return unsafe.SliceData(a) == unsafe.SliceData(b) }

func TestGrowAllocIsTheDefault(t *testing.T) {
	if _, ok := installed(); !ok {
		t.Fatalf("memory.DefaultAllocator is %T, want *growAlloc (or the contract's check of one)", memory.DefaultAllocator)
	}
	if _, isChecked := memory.DefaultAllocator.(contract); isChecked != AllocCheck {
		t.Fatalf("AllocCheck is %v but memory.DefaultAllocator is %T", AllocCheck, memory.DefaultAllocator)
	}
}

// A buffer a reallocation gives up is handed out again, zeroed, and the
// grown buffer keeps the old bytes with zeros after them.
func TestGrowAllocReusesWhatReallocationGivesUp(t *testing.T) {
	a := newGrowAlloc()
	old := a.Allocate(100 << 10)
	for i := range old {
		old[i] = 0xab
	}
	grown := a.Reallocate(300<<10, old)
	if !bytes.Equal(grown[:len(old)], bytes.Repeat([]byte{0xab}, len(old))) {
		t.Fatal("reallocation lost the old bytes")
	}
	if bytes.Count(grown[len(old):], []byte{0}) != len(grown)-len(old) {
		t.Fatal("reallocation did not zero the new bytes")
	}
	again := a.Allocate(100 << 10)
	if !same(again, old) {
		t.Fatal("the buffer given up was not handed out again")
	}
	if bytes.Count(again, []byte{0}) != len(again) {
		t.Fatal("a reused buffer is not zeroed")
	}
	// A shrunk buffer grown again within its capacity has the bytes past
	// its length zeroed.
	for i := range again {
		again[i] = 1
	}
	again = a.Reallocate(100<<10, again[:90<<10])
	if bytes.Count(again[90<<10:], []byte{0}) != 10<<10 {
		t.Fatal("growing within capacity did not zero the new bytes")
	}
}

// Free keeps nothing: a released buffer may still be read.
func TestGrowAllocFreeKeepsNothing(t *testing.T) {
	a := newGrowAlloc()
	b := a.Allocate(1 << 20)
	a.Free(b)
	if c := a.Allocate(1 << 20); same(c, b) {
		t.Fatal("a freed buffer was handed out again")
	}
}

func TestGrowAllocBoundsWhatItKeeps(t *testing.T) {
	a := newGrowAlloc()
	var bufs [][]byte
	for range 2 * maxIdle / (1 << 20) {
		bufs = append(bufs, a.Allocate(1<<20))
	}
	for _, b := range bufs {
		a.Reallocate(2<<20, b)
	}
	if a.held > maxIdle {
		t.Fatalf("keeps %d bytes, bound %d", a.held, maxIdle)
	}
	if a.held < maxIdle/2 {
		t.Fatalf("keeps only %d bytes", a.held)
	}
}

// What stays idle through a collection is left to the GC.
func TestGrowAllocTrimsIdleBuffers(t *testing.T) {
	a := newGrowAlloc()
	a.Reallocate(2<<20, a.Allocate(1<<20))
	a.trim()
	if a.held == 0 {
		t.Fatal("dropped a buffer kept since the last collection")
	}
	a.trim()
	if a.held != 0 || len(a.free[classSize(1<<20)]) != 0 {
		t.Fatalf("still keeps %d bytes after two collections", a.held)
	}
}

// The installed allocator trims after collections on its own.
func TestGrowAllocTrimsAfterGC(t *testing.T) {
	a, _ := installed()
	a.mu.Lock()
	gen := a.gen
	a.mu.Unlock()
	for range 100 {
		runtime.GC()
		time.Sleep(10 * time.Millisecond) // cleanups run after the collection
		a.mu.Lock()
		g := a.gen
		a.mu.Unlock()
		if g >= gen+2 {
			return
		}
	}
	t.Fatal("no trim after 100 collections")
}

func TestClassSize(t *testing.T) {
	for _, tc := range []struct{ in, want int }{
		{64 << 10, 64 << 10}, {64<<10 + 1, 72 << 10}, {1 << 20, 1 << 20}, {1<<20 + 1, 1<<20 + 128<<10},
	} {
		if got := classSize(tc.in); got != tc.want {
			t.Errorf("classSize(%d) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

// installed returns the growAlloc installed as memory.DefaultAllocator.
func installed() (*growAlloc, bool) {
	switch a := memory.DefaultAllocator.(type) {
	case *growAlloc:
		return a, true
	case contract:
		g, ok := a.inner.(*growAlloc)
		return g, ok
	}
	return nil, false
}
