package pqwrite

import (
	"bytes"
	"fmt"
	"hash/crc32"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Contract wraps an allocator with the checks of arrow-go's allocator
// contract (owned.go), and panics with what was broken: Allocate returns
// len == cap == n, zeroed, 64-byte aligned; a Reallocate that grows past
// the old capacity returns len == cap == n with the old bytes kept. What a
// shrink leaves past len is poisoned, so that a reader of spare capacity
// sees garbage rather than the zeros that would hide it. The gateway's
// allocators run under it in every build with the alloccheck tag (make
// test-race), and the kernel property tests use it directly.
func Contract(inner memory.Allocator) memory.Allocator { return contract{inner} }

type contract struct{ inner memory.Allocator }

// poison fills what a shrink leaves past len.
const poison = 0xA5

func (c contract) Allocate(n int) []byte {
	b := c.inner.Allocate(n)
	verifyAllocate(n, b)
	return b
}

func (c contract) Reallocate(n int, b []byte) []byte {
	oldLen, oldCap, sum := len(b), cap(b), kept(b, n)
	nb := c.inner.Reallocate(n, b)
	verifyReallocate(n, oldLen, oldCap, sum, nb)
	if cap(nb) > len(nb) {
		spare := nb[len(nb):cap(nb)]
		for i := range spare {
			spare[i] = poison
		}
	}
	return nb
}

func (c contract) Free(b []byte) { c.inner.Free(b) }

// verifyAllocate panics unless b is what Allocate(n) must return.
func verifyAllocate(n int, b []byte) {
	switch {
	case len(b) != n || cap(b) != n:
		panic(fmt.Sprintf("allocator contract: Allocate(%d) returned len %d cap %d, want len == cap == %d", n, len(b), cap(b), n))
	case n > 0 && uintptr(unsafe.Pointer(unsafe.SliceData(b)))%64 != 0:
		panic(fmt.Sprintf("allocator contract: Allocate(%d) returned a buffer not aligned to 64 bytes", n))
	case !allZero(b):
		panic(fmt.Sprintf("allocator contract: Allocate(%d) returned a buffer that is not zeroed", n))
	}
}

// kept is the checksum of the bytes of b that Reallocate(n, b) must keep,
// taken before the call: after it, b may already be another caller's.
func kept(b []byte, n int) uint32 { return crc32.Checksum(b[:min(len(b), n)], castagnoli) }

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// verifyReallocate panics unless nb is what Reallocate(n, b) must return
// for a b of oldLen bytes and oldCap capacity whose kept bytes had the
// checksum sum.
func verifyReallocate(n int, oldLen, oldCap int, sum uint32, nb []byte) {
	if len(nb) != n {
		panic(fmt.Sprintf("allocator contract: Reallocate(%d) of %d bytes returned len %d", n, oldLen, len(nb)))
	}
	if n > oldCap && cap(nb) != n {
		panic(fmt.Sprintf("allocator contract: Reallocate(%d) growing past cap %d returned cap %d, want %d", n, oldCap, cap(nb), n))
	}
	if crc32.Checksum(nb[:min(oldLen, n)], castagnoli) != sum {
		panic(fmt.Sprintf("allocator contract: Reallocate(%d) of %d bytes lost the old bytes", n, oldLen))
	}
}

var zeros [4096]byte

func allZero(b []byte) bool {
	for len(b) > 0 {
		k := min(len(b), len(zeros))
		if !bytes.Equal(b[:k], zeros[:k]) {
			return false
		}
		b = b[k:]
	}
	return true
}
