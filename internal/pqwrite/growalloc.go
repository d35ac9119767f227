package pqwrite

import (
	"runtime"
	"sync"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// arrow-go's Parquet encoders write each page into a buffer from a
// sync.Pool of its own, backed by memory.DefaultAllocator, that no
// WriterProperties reach: level buffers of a few hundred bytes and page
// buffers of 2 MiB share it, so a page often starts in a small buffer and
// regrows it by doubling, and each collection empties it. On an ingest
// that regrowth allocated twice the Arrow data, half of all the gateway
// allocated, and so half of its collections. growAlloc, installed as
// memory.DefaultAllocator for the whole process (init), keeps the
// buffer a reallocation gives up (the old one a memory.Buffer grows out
// of), by size class, for the next large allocation. It is Go's allocator
// otherwise: Free does nothing, so a buffer released while a slice of it
// is still read stays intact as before; only a buffer its owner has
// already replaced is reused. What it keeps is bounded (maxIdle), and a
// buffer not taken again within a collection cycle is left to the GC.

// growAlloc is the process's memory.DefaultAllocator (see above). It
// keeps arrow-go's allocator contract exactly (owned.go): every buffer it
// returns has len == cap.
type growAlloc struct {
	goa memory.Allocator

	mu    sync.Mutex
	free  map[int][]idle // by class size
	held  int            // bytes in free
	gen   uint32         // collections seen
	given owned          // class arrays handed out
}

// idle is a kept class array and the collection count it was kept at.
type idle struct {
	b   []byte
	gen uint32
}

// maxIdle bounds the bytes a growAlloc keeps.
const maxIdle = 32 << 20

var _ memory.Allocator = (*growAlloc)(nil)

func newGrowAlloc() *growAlloc {
	return &growAlloc{goa: memory.NewGoAllocator(), free: map[int][]idle{}, given: newOwned()}
}

func init() {
	a := newGrowAlloc()
	a.arm()
	memory.DefaultAllocator = checked(a)
}

// arm drops, after the next collection, what was kept before the one
// before, and arms again.
func (a *growAlloc) arm() {
	// A sentinel with a pointer: the tiny allocator's objects (small and
	// pointer-free) may share a block and never be collected alone.
	runtime.AddCleanup(new([2]*byte), func(a *growAlloc) {
		a.trim()
		a.arm()
	}, a)
}

// trim leaves to the GC the buffers kept before the last collection, and
// forgets the arrays it collected.
func (a *growAlloc) trim() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.gen++
	for c, list := range a.free {
		keep := list[:0]
		for _, e := range list {
			if a.gen-e.gen <= 1 {
				keep = append(keep, e)
			} else {
				a.held -= c
			}
		}
		clear(list[len(keep):])
		a.free[c] = keep
	}
	a.given.prune()
}

// Allocate returns a zeroed buffer of size bytes, len == cap == size.
func (a *growAlloc) Allocate(size int) []byte {
	b, reused := a.get(size)
	if reused {
		clear(b)
	}
	return b
}

// get returns a buffer of size bytes (len == cap), a kept one when it can
// (reused: its bytes are not zeroed), from Go's allocator otherwise.
func (a *growAlloc) get(size int) (b []byte, reused bool) {
	if size < pooledMin {
		return a.goa.Allocate(size), false
	}
	class := classSize(size)
	a.mu.Lock()
	defer a.mu.Unlock()
	var full []byte
	if list := a.free[class]; len(list) > 0 {
		n := len(list)
		full, reused = list[n-1].b, true
		list[n-1] = idle{}
		a.free[class] = list[:n-1]
		a.held -= class
	} else {
		// Large Go allocations are page-aligned: 64-byte alignment holds.
		full = make([]byte, class)
	}
	return a.given.handOut(full, size), reused
}

// Reallocate returns b grown (or shrunk) to size bytes, as Go's allocator
// does: within b's capacity it is b resliced (the bytes past len(b)
// zeroed here, which Go's does not promise), beyond it a new buffer with
// len == cap == size, the old bytes copied and the rest zeroed; b is then
// kept for a later allocation if it is one of ours.
func (a *growAlloc) Reallocate(size int, b []byte) []byte {
	if size <= cap(b) {
		if size > len(b) {
			clear(b[len(b):size])
		}
		return b[:size]
	}
	nb, reused := a.get(size)
	n := copy(nb, b)
	if reused {
		clear(nb[n:])
	}
	a.keep(b)
	return nb
}

// keep holds b's class array, given up by a reallocation, for a later one.
func (a *growAlloc) keep(b []byte) {
	if cap(b) < pooledMin {
		return // Go's allocator's, or not ours
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	full, ok := a.given.giveBack(b)
	if !ok || a.held+cap(full) > maxIdle {
		return
	}
	a.free[cap(full)] = append(a.free[cap(full)], idle{b: full, gen: a.gen})
	a.held += cap(full)
}

// Free does nothing, as with Go's allocator: the GC reclaims b once
// nothing refers to it.
func (a *growAlloc) Free(b []byte) {}
