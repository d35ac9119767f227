package server

import (
	"runtime"
	"runtime/debug"
	rtmetrics "runtime/metrics"
	"sync"
)

// The Go GC collects once the heap grows gc_percent over its live data.
// An ingest keeps little live (the batches in flight, each lane's open row
// group: 60-90 MB), so at the default 30 it collected every 20-25 MB
// allocated, some 50 times per 5M rows, each cycle marking the gateway's
// fixed heap and drafting the writers into assists. A higher gc_percent
// alone lets the peak grow with the live data; a fixed memory limit alone
// makes a live heap past it collect without pause. gcFloor does neither:
// after every collection it sets the GC percent so that the next one comes
// when the heap reaches what limits.gc_min_heap leaves beside the Go
// memory outside the heap, or gc_percent over the live heap if that is
// more (several large ingests at once), and a memory limit a little above
// that goal. The limit bounds the overshoot of a collection that starts
// late; being above the goal, it leaves the scavenger (which returns free
// pages once the process passes 95% of the limit) idle, where a limit at
// the goal had it return the pages the heap took back moments later, a
// page fault each (a tenth of the CPU). The memory limit in force before
// (limits.memory_limit, GOMEMLIMIT) caps what it sets.

// gcFloor sets the GC's trigger after every collection.
type gcFloor struct {
	floor   uint64
	percent int    // limits.gc_percent, the growth past the floor
	cap     uint64 // limits.memory_limit, or none

	mu      sync.Mutex
	stopped bool
}

// scavengeShare is the share of the limit (percent) the heap goal and the
// Go memory outside the heap are kept under: below the scavenger's 95%.
const scavengeShare = 92

// maxGCPercent bounds the percent set: an idle gateway's live heap is a
// few MB.
const maxGCPercent = 5000

// gcSamples are the runtime metrics the next limit is computed from: the
// live heap, what the GC scans beside it (stacks and globals, which the
// Go heap goal counts as well), and the Go memory the limit counts.
var gcSamples = []string{
	"/gc/heap/live:bytes", "/gc/scan/stack:bytes", "/gc/scan/globals:bytes",
	"/memory/classes/total:bytes", "/memory/classes/heap/released:bytes",
	"/memory/classes/heap/objects:bytes", "/memory/classes/heap/unused:bytes", "/memory/classes/heap/free:bytes",
}

// startGCFloor triggers collections by a memory limit of at least floor
// bytes that follows the live heap, under the memory limit in force
// (limits.memory_limit or GOMEMLIMIT); stop restores percent and that
// limit. A floor of 0 or less does nothing.
func startGCFloor(floor int64, percent int) (stop func()) {
	if floor <= 0 {
		return func() {}
	}
	g := &gcFloor{floor: uint64(floor), percent: percent, cap: uint64(debug.SetMemoryLimit(-1))}
	g.tune()
	g.arm()
	return func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		g.stopped = true
		debug.SetGCPercent(g.percent)
		debug.SetMemoryLimit(int64(g.cap))
	}
}

// arm runs tune after the next collection (the one that finds the
// sentinel unreachable), and arms again from there.
func (g *gcFloor) arm() {
	// A sentinel with a pointer: the tiny allocator's objects (small and
	// pointer-free) may share a block and never be collected alone.
	runtime.AddCleanup(new([2]*byte), func(g *gcFloor) {
		if g.tune() {
			g.arm()
		}
	}, g)
}

// tune sets the memory limit from the live heap: what gc_percent would
// let the heap reach, plus the Go memory outside the heap, and at least
// the floor. It reports false once stopped.
func (g *gcFloor) tune() bool {
	s := make([]rtmetrics.Sample, len(gcSamples))
	for i, name := range gcSamples {
		s[i].Name = name
	}
	rtmetrics.Read(s)
	v := func(i int) uint64 { return s[i].Value.Uint64() }
	live, scan := v(0), v(1)+v(2)
	var other uint64
	if heap := v(4) + v(5) + v(6) + v(7); v(3) > heap {
		other = v(3) - heap
	}
	// The heap goal: gc_percent over the live heap, or what the floor
	// leaves beside the Go memory outside the heap, if more. The limit
	// sits above it, so that collections come from the goal and the
	// scavenger (which holds the process under 95% of the limit) does
	// not return pages the heap takes back moments later.
	p := uint64(g.percent)
	goal := live + (live+scan)*p/100
	if f := g.floor * scavengeShare / 100; f > other+goal {
		goal = f - other
	}
	pct := int(min(max((goal-live)*100/max(live+scan, 1), p), maxGCPercent))
	limit := min(max(g.floor, (goal+other)*100/scavengeShare), g.cap)
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.stopped {
		return false
	}
	debug.SetGCPercent(pct)
	debug.SetMemoryLimit(int64(limit))
	return true
}
