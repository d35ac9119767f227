package server

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// calls are the calls in flight, so that a shutdown can say what it
// waits for (GracefulStop waits for every one of them, silently).
type calls struct {
	mu   sync.Mutex
	next uint64
	m    map[uint64]call
}

type call struct {
	method string
	start  time.Time
}

// begin records a call of method and returns the function that ends it.
func (c *calls) begin(method string) func() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[uint64]call{}
	}
	c.next++
	id := c.next
	c.m[id] = call{method: methodName(method), start: time.Now()}
	return func() {
		c.mu.Lock()
		delete(c.m, id)
		c.mu.Unlock()
	}
}

// summary counts the calls in flight and names them by method, with how
// long the oldest of each has run ("DoPut×2 (oldest 3s), DoGet×1 (oldest
// 1s)"), longest-running first.
func (c *calls) summary() (int, string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	type agg struct {
		n      int
		oldest time.Time
	}
	by := map[string]*agg{}
	for _, cl := range c.m {
		a := by[cl.method]
		if a == nil {
			a = &agg{oldest: cl.start}
			by[cl.method] = a
		}
		a.n++
		if cl.start.Before(a.oldest) {
			a.oldest = cl.start
		}
	}
	names := make([]string, 0, len(by))
	for m := range by {
		names = append(names, m)
	}
	slices.SortFunc(names, func(a, b string) int { return by[a].oldest.Compare(by[b].oldest) })
	parts := make([]string, len(names))
	for i, m := range names {
		parts[i] = fmt.Sprintf("%s×%d (oldest %s)", m, by[m].n, time.Since(by[m].oldest).Round(time.Second))
	}
	return len(c.m), strings.Join(parts, ", ")
}
