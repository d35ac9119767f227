package engine

import (
	"math/bits"
	"sync"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// bufferPool is the memory.Allocator of result batches: it keeps freed
// buffers and hands them out again. Every result batch of a stream has
// about the same buffers (64Ki rows of the same columns), so after the
// first few batches a stream allocates nothing: without the pool each
// batch was fresh, zeroed Go heap, and the garbage collector, which runs
// often under the gateway's low GC percent, cost more than the copy into
// the batch itself.
//
// Buffers are sized in powers of two from minPooled up; smaller ones come
// from the Go heap and are not kept. At most limit bytes are kept, over
// every size; a buffer freed past that is left to the garbage collector.
type bufferPool struct {
	limit int64

	mu   sync.Mutex
	free [64][][]byte // by log2 of the capacity
	held int64
	out  int64 // bytes of pooled sizes handed out and not freed
}

var _ memory.Allocator = (*bufferPool)(nil)

// minPooled is the smallest buffer the pool keeps.
const minPooled = 4 << 10

// defaultPoolBytes bounds the bytes a pool keeps idle: a few batches'
// worth, enough for the queries that stream at once to reuse theirs.
const defaultPoolBytes = 64 << 20

func newBufferPool(limit int64) *bufferPool { return &bufferPool{limit: limit} }

// class is the log2 of the capacity a buffer of size bytes gets.
func class(size int) int { return bits.Len(uint(size - 1)) }

// Allocate returns a zeroed buffer of size bytes.
func (p *bufferPool) Allocate(size int) []byte {
	b := p.allocate(size)
	clear(b)
	return b
}

// allocate returns a buffer of size bytes holding whatever it last held.
func (p *bufferPool) allocate(size int) []byte {
	if size < minPooled {
		return make([]byte, size)
	}
	c := class(size)
	p.mu.Lock()
	if n := len(p.free[c]); n > 0 {
		b := p.free[c][n-1]
		p.free[c][n-1] = nil
		p.free[c] = p.free[c][:n-1]
		p.held -= int64(cap(b))
		p.out += int64(cap(b))
		p.mu.Unlock()
		return b[:size]
	}
	p.out += 1 << c
	p.mu.Unlock()
	return make([]byte, size, 1<<c)
}

// Reallocate grows or shrinks b to size bytes, keeping its contents; the
// bytes past them are zero.
func (p *bufferPool) Reallocate(size int, b []byte) []byte {
	out := p.reallocate(size, b)
	if size > len(b) {
		clear(out[len(b):])
	}
	return out
}

// reallocate is Reallocate leaving the bytes past b's contents as they
// are.
func (p *bufferPool) reallocate(size int, b []byte) []byte {
	if size <= cap(b) {
		return b[:size]
	}
	out := p.allocate(size)
	copy(out, b)
	p.Free(b)
	return out
}

// unzeroed is the pool as an allocator that does not zero what it hands
// out, for writers that set every byte they use (fastbatch.go). Arrow's
// own code may count on zeroed memory, so only such writers get it.
type unzeroed struct{ *bufferPool }

func (u unzeroed) Allocate(size int) []byte { return u.allocate(size) }

func (u unzeroed) Reallocate(size int, b []byte) []byte { return u.reallocate(size, b) }

// Free takes b back. Only a buffer whose capacity is one the pool hands
// out is kept.
func (p *bufferPool) Free(b []byte) {
	c := cap(b)
	if c < minPooled || c&(c-1) != 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.out -= int64(c)
	if p.held+int64(c) > p.limit {
		return
	}
	p.free[class(c)] = append(p.free[class(c)], b[:0])
	p.held += int64(c)
}

// outstanding is the bytes handed out and not freed, of the sizes the pool
// keeps.
func (p *bufferPool) outstanding() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out
}
