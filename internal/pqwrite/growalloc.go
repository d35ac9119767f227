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

// growAlloc is the process's memory.DefaultAllocator (see above).
type growAlloc struct {
	goa memory.Allocator

	mu   sync.Mutex
	free map[int][]idle // by capacity, a class size
	held int            // bytes in free
	gen  uint32         // collections seen
}

// idle is a kept buffer and the collection count it was kept at.
type idle struct {
	b   []byte
	gen uint32
}

// maxIdle bounds the bytes a growAlloc keeps.
const maxIdle = 32 << 20

var _ memory.Allocator = (*growAlloc)(nil)

func init() {
	a := &growAlloc{goa: memory.NewGoAllocator(), free: map[int][]idle{}}
	a.arm()
	memory.DefaultAllocator = a
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

// trim leaves to the GC the buffers kept before the last collection.
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
}

// Allocate returns a zeroed buffer of size bytes.
func (a *growAlloc) Allocate(size int) []byte {
	if size < pooledMin {
		return a.goa.Allocate(size)
	}
	if b := a.take(size); b != nil {
		clear(b)
		return b
	}
	return make([]byte, size, classSize(size))
}

// take returns a kept buffer of size's class, not zeroed, or nil.
func (a *growAlloc) take(size int) []byte {
	class := classSize(size)
	a.mu.Lock()
	defer a.mu.Unlock()
	list := a.free[class]
	n := len(list)
	if n == 0 {
		return nil
	}
	b := list[n-1].b
	list[n-1] = idle{}
	a.free[class] = list[:n-1]
	a.held -= class
	return b[:size]
}

// Reallocate returns b grown (or shrunk) to size bytes, the bytes past
// len(b) zeroed, and keeps b if it had to move.
func (a *growAlloc) Reallocate(size int, b []byte) []byte {
	if size <= cap(b) {
		if size > len(b) {
			// The spare capacity of a class buffer: zeroed here, as its
			// owner may have written it through a wider slice.
			clear(b[len(b):size])
		}
		return b[:size]
	}
	var nb []byte
	if size >= pooledMin {
		nb = a.take(size)
	}
	if nb == nil {
		nb = a.Allocate(size)
		copy(nb, b)
	} else {
		clear(nb[copy(nb, b):])
	}
	a.keep(b)
	return nb
}

// keep holds b, given up by a reallocation, for a later one.
func (a *growAlloc) keep(b []byte) {
	c := cap(b)
	if c < pooledMin || classSize(c) != c {
		return // not one of ours
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.held+c > maxIdle {
		return
	}
	a.free[c] = append(a.free[c], idle{b: b[:c], gen: a.gen})
	a.held += c
}

// Free does nothing, as with Go's allocator: the GC reclaims b once
// nothing refers to it.
func (a *growAlloc) Free(b []byte) {}
