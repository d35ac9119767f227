package pqwrite

import (
	"sync"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Alloc is the memory.Allocator of one writer's Parquet files (a lane's
// in the Iceberg backend, a stream's in the Paimon one). pqarrow
// allocates its page, level and compression buffers anew for every page
// and frees them once the page is out; from the Go heap that is a large
// zeroed allocation each time and, at ingest rates, a garbage collection
// every few pages with the writer drafted into it (about a fifth of its
// CPU). Alloc keeps freed buffers of 64 KiB and more by size class
// (eight to a doubling, so that a page a little over 1 MiB does not take
// 2) and hands them out again, zeroed as the Go allocator's are. It
// holds at most what its writer had in use at once, and is dropped with
// it.
type Alloc struct {
	mu    sync.Mutex
	free  map[int][][]byte // class arrays, by class size
	given owned            // class arrays handed out
}

var _ memory.Allocator = (*Alloc)(nil)

// NewAlloc returns an empty Alloc.
func NewAlloc() *Alloc { return &Alloc{free: map[int][][]byte{}, given: newOwned()} }

// Allocate returns a zeroed buffer of size bytes (len == cap == size, as
// arrow-go's allocator contract wants: owned.go), a freed one when it can.
func (a *Alloc) Allocate(size int) []byte {
	b := a.allocate(size)
	if AllocCheck {
		verifyAllocate(size, b)
	}
	return b
}

func (a *Alloc) allocate(size int) []byte {
	if size < pooledMin {
		// arrow-go's own allocator, which aligns to 64 bytes; large Go
		// allocations are page-aligned already.
		return memory.DefaultAllocator.Allocate(size)
	}
	class := classSize(size)
	a.mu.Lock()
	defer a.mu.Unlock()
	list := a.free[class]
	if n := len(list); n > 0 {
		full := list[n-1]
		list[n-1] = nil
		a.free[class] = list[:n-1]
		clear(full[:size])
		return a.given.handOut(full, size)
	}
	return a.given.handOut(make([]byte, class), size)
}

// Reallocate grows b to size bytes as Go's allocator does (see
// growAlloc.Reallocate), and keeps b when it had to move.
func (a *Alloc) Reallocate(size int, b []byte) []byte {
	var sum uint32
	oldLen, oldCap := len(b), cap(b)
	if AllocCheck {
		sum = kept(b, size)
	}
	nb := a.reallocate(size, b)
	if AllocCheck {
		verifyReallocate(size, oldLen, oldCap, sum, nb)
	}
	return nb
}

func (a *Alloc) reallocate(size int, b []byte) []byte {
	if size <= cap(b) {
		if size > len(b) {
			clear(b[len(b):size])
		}
		return b[:size]
	}
	nb := a.allocate(size)
	copy(nb, b)
	a.Free(b)
	return nb
}

// Free keeps b's class array for a later Allocate, if b is one of ours.
func (a *Alloc) Free(b []byte) {
	if cap(b) < pooledMin {
		return // the default allocator's: the GC takes it
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if full, ok := a.given.giveBack(b); ok {
		a.free[cap(full)] = append(a.free[cap(full)], full)
	}
}
