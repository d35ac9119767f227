package pqwrite

import (
	"math/bits"
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
	mu   sync.Mutex
	free map[int][][]byte // by capacity, a class size
}

// pooledMin is the smallest buffer kept: smaller ones are cheap to make.
const pooledMin = 64 << 10

var _ memory.Allocator = (*Alloc)(nil)

// NewAlloc returns an empty Alloc.
func NewAlloc() *Alloc { return &Alloc{free: map[int][][]byte{}} }

// Allocate returns a zeroed buffer of size bytes, a freed one when it can.
func (a *Alloc) Allocate(size int) []byte {
	if size < pooledMin {
		// arrow-go's own allocator, which aligns to 64 bytes; large Go
		// allocations are page-aligned already.
		return memory.DefaultAllocator.Allocate(size)
	}
	class := classSize(size)
	a.mu.Lock()
	list := a.free[class]
	if n := len(list); n > 0 {
		b := list[n-1]
		a.free[class] = list[:n-1]
		a.mu.Unlock()
		clear(b)
		return b[:size]
	}
	a.mu.Unlock()
	return make([]byte, size, class)
}

// classSize rounds size up to its class: a multiple of an eighth of the
// power of two below it.
func classSize(size int) int {
	step := 1 << max(bits.Len(uint(size-1))-4, 0)
	return (size + step - 1) &^ (step - 1)
}

// Reallocate grows b to size bytes.
func (a *Alloc) Reallocate(size int, b []byte) []byte {
	if size <= cap(b) {
		// The bytes past len(b) were zeroed when b was handed out and
		// not written since (or written by this buffer's owner only).
		return b[:size]
	}
	nb := a.Allocate(size)
	copy(nb, b)
	a.Free(b)
	return nb
}

// Free keeps b for a later Allocate.
func (a *Alloc) Free(b []byte) {
	c := cap(b)
	if c < pooledMin || classSize(c) != c {
		return // not one of ours: the GC takes it
	}
	a.mu.Lock()
	a.free[c] = append(a.free[c], b[:c])
	a.mu.Unlock()
}
