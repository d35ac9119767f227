package flightframe

import (
	"sync"

	"google.golang.org/grpc/mem"
)

// poolTiers are the capacities the pool keeps, gRPC's default ones: 256
// bytes, 4 KiB, 16 KiB (its largest HTTP/2 frame), 32 KiB, 1 MiB.
var poolTiers = [...]int{1 << 8, 1 << 12, 1 << 14, 1 << 15, 1 << 20}

// DirtyPool is a gRPC buffer pool that hands out buffers without
// clearing them. gRPC's default pool clears every buffer it hands out
// again; the buffers of a received message are all written over before
// they are read (a frame's payload read into it, a message gathered
// into it), so clearing them is work for nothing, on a result stream
// a second pass over every byte. gRPC's own ALTS transport pools the
// same way.
type DirtyPool struct{ tiers [len(poolTiers)]sync.Pool }

var _ mem.BufferPool = (*DirtyPool)(nil)

// Get returns a buffer of length n, its content undefined.
func (p *DirtyPool) Get(n int) *[]byte {
	for i, size := range poolTiers {
		if n > size {
			continue
		}
		if b, ok := p.tiers[i].Get().(*[]byte); ok {
			*b = (*b)[:n]
			return b
		}
		b := make([]byte, n, size)
		return &b
	}
	b := make([]byte, n)
	return &b
}

// Put keeps a buffer of a tier's capacity for reuse, and drops others.
func (p *DirtyPool) Put(b *[]byte) {
	for i, size := range poolTiers {
		if cap(*b) == size {
			p.tiers[i].Put(b)
			return
		}
	}
}
