package server

import (
	"runtime/debug"
	rtmetrics "runtime/metrics"
	"sync"
	"time"
)

// A query stream allocates little of the Go heap (engine/pool.go), but the
// heap an ingest grew stays resident after it: the GC floor (gcfloor.go)
// keeps the scavenger from returning it, on purpose, for the next ingest.
// After a 10M-row ingest that was 155 MB of Go heap, 100 of them garbage
// or free, under the stream's DuckDB buffers (docs/performance.md). A
// DoGet that finds more than idleHeapRelease bytes of the heap resident
// and not live returns them to the system first (debug.FreeOSMemory: one collection
// and a scavenge of every free page), on a goroutine of its own, at most
// once per idleHeapEvery: the stream does not wait for it, and an ingest
// running meanwhile pays one extra collection.

// idleHeapRelease is the idle resident heap past which a DoGet releases it.
const idleHeapRelease = 48 << 20

// idleHeapEvery is the least time between two releases.
const idleHeapEvery = 10 * time.Second

// idleHeap releases the idle Go heap before a stream.
type idleHeap struct {
	mu      sync.Mutex
	last    time.Time
	running bool
	wg      sync.WaitGroup
}

// idleBytes is the Go heap that is resident and not live: free pages,
// and the objects allocated since the last collection found its live
// heap (garbage, mostly, once an ingest is over).
func idleBytes() uint64 {
	s := []rtmetrics.Sample{{Name: "/memory/classes/heap/free:bytes"}, {Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/memory/classes/heap/unused:bytes"}, {Name: "/gc/heap/live:bytes"}}
	rtmetrics.Read(s)
	resident := s[0].Value.Uint64() + s[1].Value.Uint64() + s[2].Value.Uint64()
	return resident - min(resident, s[3].Value.Uint64())
}

// release starts returning the idle heap to the system when there is
// more than idleHeapRelease of it and the last release is old enough.
func (h *idleHeap) release() {
	if h == nil || idleBytes() < idleHeapRelease {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.running || time.Since(h.last) < idleHeapEvery {
		return
	}
	h.running, h.last = true, time.Now()
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		debug.FreeOSMemory()
		h.mu.Lock()
		h.running = false
		h.mu.Unlock()
	}()
}

// wait waits for a release under way.
func (h *idleHeap) wait() { h.wg.Wait() }
