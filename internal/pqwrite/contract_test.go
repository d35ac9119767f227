package pqwrite

import (
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Both of the gateway's allocators keep arrow-go's contract through every
// path: a fresh class array, a kept one handed out again, growth by
// reallocation, a shrink and a regrowth within capacity.
func TestAllocatorsKeepTheContract(t *testing.T) {
	for name, mem := range map[string]memory.Allocator{
		"growAlloc": newGrowAlloc(), "Alloc": NewAlloc(), "GoAllocator": memory.NewGoAllocator(),
	} {
		t.Run(name, func(t *testing.T) {
			c := Contract(mem)
			for _, n := range []int{1, 63, 4 << 10, pooledMin - 1, pooledMin, pooledMin + 1, 1 << 20, 1<<20 + 7, 3<<20 - 64} {
				b := c.Allocate(n)
				for i := range b {
					b[i] = byte(i)
				}
				g := c.Reallocate(2*n+5, b) // moves: b is kept
				again := c.Allocate(n)      // may be b's class array, reused
				for i := range again {
					again[i] = 0xff
				}
				s := c.Reallocate(n/2, again)  // shrink: spare capacity poisoned
				s = c.Reallocate(n/2+n/4+1, s) // regrow within capacity
				// Ours zero what a regrowth within capacity exposes
				// (Go's does not promise it).
				if k := n / 2; name != "GoAllocator" && k < len(s) && s[k] != 0 {
					t.Fatalf("Reallocate(%d) within capacity: byte %d is %#x, want 0", len(s), k, s[k])
				}
				c.Free(g)
				c.Free(s)
			}
		})
	}
}

// spare hands out buffers with capacity past their length, as growAlloc
// did before: the contract check refuses it.
type spare struct{ memory.GoAllocator }

func (spare) Allocate(n int) []byte { return make([]byte, n, 2*n+64) }

func TestContractRefusesSpareCapacity(t *testing.T) {
	defer func() {
		r := recover()
		if r == nil || !strings.Contains(fmt.Sprint(r), "want len == cap") {
			t.Fatalf("recovered %v, want a contract panic naming len == cap", r)
		}
	}()
	Contract(&spare{}).Allocate(100 << 10)
}
