// Package refindex keeps, per table, the set of files a table's snapshots
// reference, so that the replay check of CommitMessages (and the check of
// AbortMessages) reads only the metadata written since the last check,
// not the table's whole history.
//
// A table's references form a DAG of immutable metadata files: roots (a
// snapshot's manifest list, a tag's) name nodes (manifests) that name
// leaf files (data files). Manifest lists and manifests never change once
// written and their names are unique (they carry a UUID), so a node's
// content is read once and kept while some root reaches it. Update takes
// the table's current roots, which the backend derives from fresh
// metadata on every check, reference-counts the nodes they reach (loading
// only those it does not hold) and drops what no root reaches any more,
// so the answer is exactly what a full walk of the present roots gives.
//
// A Cache holds the indexes of a provider's tables within a byte budget,
// dropping the least recently used: a dropped table is rebuilt by its next
// check, which then costs a full walk again.
package refindex

import (
	"container/list"
	"context"
	"sync"
)

// Node is the content of one immutable metadata file.
type Node struct {
	// Files are the leaf keys it references (data files; for a manifest
	// list, the manifests' own paths too).
	Files []string
	// Children are the nodes it references (the manifests of a list).
	Children []Child
}

// Child names a node and tells how to read it, should the index not hold
// it.
type Child struct {
	Key  string
	Load func(context.Context) (Node, error)
}

// held is a node the index keeps: its content and how many parents (or
// roots) reach it.
type held struct {
	key      string // the one copy of the key, shared by the parents' children
	files    []string
	children []string
	refs     int
}

// The bytes a node, a child or file entry of a node, and a distinct leaf
// cost beyond their strings (struct, slice and map entries). A list's
// children share their keys' strings with the held nodes: a table of N
// snapshots whose lists each name every manifest so far holds N²/2
// children, 16 bytes each.
const (
	nodeOverhead  = 128
	entryOverhead = 16
	leafOverhead  = 64
)

// Index is the reference count of one table's roots. It is not safe for
// concurrent use: a Cache hands it out under its table's lock.
type Index struct {
	roots map[string]bool
	nodes map[string]*held
	files map[string]int
	bytes int64
	// Loads counts the nodes read from storage, for tests.
	Loads int
}

// NewIndex returns an empty index.
func NewIndex() *Index {
	return &Index{roots: map[string]bool{}, nodes: map[string]*held{}, files: map[string]int{}}
}

// Update makes roots the index's roots: nodes a new root reaches are read
// (those not held already), nodes no root reaches any more are dropped.
// On error the index is as it was.
func (x *Index) Update(ctx context.Context, roots []Child) error {
	// Read every node not held first, so that a failed read leaves the
	// counts untouched.
	loaded := map[string]Node{}
	var walk func(c Child) error
	walk = func(c Child) error {
		if _, ok := x.nodes[c.Key]; ok {
			return nil // held: so is everything it reaches
		}
		if _, ok := loaded[c.Key]; ok {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		n, err := c.Load(ctx)
		if err != nil {
			return err
		}
		x.Loads++
		loaded[c.Key] = n
		for _, ch := range n.Children {
			if err := walk(ch); err != nil {
				return err
			}
		}
		return nil
	}
	next := make(map[string]bool, len(roots))
	for _, r := range roots {
		if next[r.Key] {
			continue
		}
		next[r.Key] = true
		if x.roots[r.Key] {
			continue
		}
		if err := walk(r); err != nil {
			return err
		}
	}
	// Count the new roots before dropping the old ones, so that a node
	// both reach stays held.
	for k := range next {
		if !x.roots[k] {
			x.incr(k, loaded)
		}
	}
	for k := range x.roots {
		if !next[k] {
			x.decr(k)
		}
	}
	x.roots = next
	return nil
}

func (x *Index) incr(key string, loaded map[string]Node) {
	if h, ok := x.nodes[key]; ok {
		h.refs++
		return
	}
	n := loaded[key]
	h := &held{key: key, files: n.Files, children: make([]string, len(n.Children)), refs: 1}
	x.nodes[key] = h
	x.bytes += nodeOverhead + int64(len(key)) + entryOverhead*int64(len(n.Children)+len(n.Files))
	for i, c := range n.Children {
		x.incr(c.Key, loaded)
		h.children[i] = x.nodes[c.Key].key
	}
	for _, f := range n.Files {
		if x.files[f] == 0 {
			x.bytes += int64(len(f)) + leafOverhead
		}
		x.files[f]++
	}
}

func (x *Index) decr(key string) {
	h := x.nodes[key]
	if h == nil {
		return
	}
	if h.refs--; h.refs > 0 {
		return
	}
	delete(x.nodes, key)
	x.bytes -= nodeOverhead + int64(len(key)) + entryOverhead*int64(len(h.children)+len(h.files))
	for _, f := range h.files {
		if x.files[f]--; x.files[f] <= 0 {
			delete(x.files, f)
			x.bytes -= int64(len(f)) + leafOverhead
		}
	}
	for _, c := range h.children {
		x.decr(c)
	}
}

// Has tells whether a node the roots reach references the leaf key.
func (x *Index) Has(key string) bool { return x.files[key] > 0 }

// Bytes approximates the memory the index holds.
func (x *Index) Bytes() int64 { return x.bytes }

// Sized is what a Cache holds per table: an index and whatever else the
// backend keeps with it, and its approximate size.
type Sized interface {
	Bytes() int64
}

// Cache holds one T per table within a byte budget, the least recently
// used dropped first. Each table's T is used under its own lock, so
// checks of different tables run at once and those of one table in turn.
type Cache[T Sized] struct {
	max  int64
	make func() T

	mu     sync.Mutex
	used   int64
	tables map[string]*list.Element
	lru    *list.List // of *slot, most recent first
}

type slot[T Sized] struct {
	key   string
	mu    sync.Mutex
	val   T
	bytes int64 // as last accounted
}

// NewCache returns a cache of at most maxBytes (approximately) that makes
// a table's T with newT on its first use. maxBytes <= 0 keeps nothing
// between calls: every check walks the table's whole history.
func NewCache[T Sized](maxBytes int64, newT func() T) *Cache[T] {
	return &Cache[T]{max: maxBytes, make: newT, tables: map[string]*list.Element{}, lru: list.New()}
}

// With runs fn with table's T, under the table's lock. What fn leaves in
// T is kept for the next call (when within the budget), also when fn
// fails: an Index keeps itself consistent.
func (c *Cache[T]) With(table string, fn func(T) error) error {
	c.mu.Lock()
	el, ok := c.tables[table]
	if !ok {
		el = c.lru.PushFront(&slot[T]{key: table, val: c.make()})
		c.tables[table] = el
	} else {
		c.lru.MoveToFront(el)
	}
	s := el.Value.(*slot[T])
	c.mu.Unlock()

	s.mu.Lock()
	err := fn(s.val)
	n := s.val.Bytes()
	s.mu.Unlock()

	c.mu.Lock()
	defer c.mu.Unlock()
	if cur, ok := c.tables[table]; ok && cur == el {
		c.used += n - s.bytes
		s.bytes = n
	}
	for c.used > c.max && c.lru.Len() > 0 {
		old := c.lru.Back()
		os := old.Value.(*slot[T])
		c.lru.Remove(old)
		delete(c.tables, os.key)
		c.used -= os.bytes
	}
	return err
}

// Holds tells whether the cache keeps table's T, so that a caller can
// take the cheap incremental check where an earlier one left an index, and
// skip it where none did.
func (c *Cache[T]) Holds(table string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.tables[table]
	return ok
}

// Drop forgets table (a dropped or recreated table).
func (c *Cache[T]) Drop(table string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.tables[table]; ok {
		c.lru.Remove(el)
		delete(c.tables, table)
		c.used -= el.Value.(*slot[T]).bytes
	}
}
