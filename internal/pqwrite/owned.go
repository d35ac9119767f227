package pqwrite

import (
	"math/bits"
	"unsafe"
	"weak"
)

// arrow-go's contract for a memory.Allocator is what memory.GoAllocator
// does: Allocate(n) returns a zeroed slice with len == cap == n, aligned
// to 64 bytes, and a Reallocate that must grow returns a new slice with
// len == cap too. Its compute kernels depend on it: the Take kernel for
// strings and binaries (vector_selection.go, v18.8.0) measures its free
// space with cap() but writes through data[sz:], which stops at len, so a
// buffer with spare capacity cuts a value at len and either panics on the
// next one (in a goroutine compute.execInternal started, which kills the
// process) or leaves NUL bytes where a value's tail should be.
//
// The pooling allocators here keep buffers by size class (a class buffer
// is larger than most requests), so they hand out full[:n:n] and must
// find full again when the buffer comes back. owned is that memory: the
// class of every class array handed out, keyed by a weak pointer to its
// first byte. A weak pointer names an object, not an address, so a buffer
// that is not ours (or one of ours resliced from another offset) is never
// mistaken for one, even after the GC reused our array's address; and the
// map does not keep a buffer alive that its owner dropped.
type owned struct {
	m map[weak.Pointer[byte]]int // class size by class array
	// pruneAt is the map size at which entries of collected arrays are
	// next dropped.
	pruneAt int
}

func newOwned() owned { return owned{m: map[weak.Pointer[byte]]int{}, pruneAt: 64} }

// handOut records full, a class array, and returns its first n bytes with
// len == cap == n.
func (o *owned) handOut(full []byte, n int) []byte {
	o.m[weak.Make(unsafe.SliceData(full))] = cap(full)
	if len(o.m) >= o.pruneAt {
		o.prune()
	}
	return full[:n:n]
}

// giveBack returns the whole class array b was handed out from, and
// forgets it; ok is false when b is not, or no longer, one of ours.
func (o *owned) giveBack(b []byte) (full []byte, ok bool) {
	if cap(b) == 0 {
		return nil, false
	}
	p := unsafe.SliceData(b)
	k := weak.Make(p)
	class, ok := o.m[k]
	if !ok {
		return nil, false
	}
	delete(o.m, k)
	return unsafe.Slice(p, class), true
}

// prune drops the entries of arrays the GC collected (their owners let
// them go without a Free or a Reallocate).
func (o *owned) prune() {
	for k := range o.m {
		if k.Value() == nil {
			delete(o.m, k)
		}
	}
	o.pruneAt = max(64, 2*len(o.m))
}

// pooledMin is the smallest buffer kept: smaller ones are cheap to make.
const pooledMin = 64 << 10

// classSize rounds size up to its class: a multiple of an eighth of the
// power of two below it.
func classSize(size int) int {
	step := 1 << max(bits.Len(uint(size-1))-4, 0)
	return (size + step - 1) &^ (step - 1)
}
