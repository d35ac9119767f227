package engine

import (
	"container/list"
	"sync"
)

// parseCache keeps DuckDB's serialized parse trees (json_serialize_sql)
// by query text, least recently used out first. A parse tree depends on
// the text alone (not on the caller, the tables or the connection:
// resolving and rewriting come after, on a fresh decode of the tree), so
// a text's tree can serve every caller; only successful parses are kept,
// and a text is only ever looked up whole. A BI tool sends the same
// statement again and again, and each parse is a statement DuckDB runs.
type parseCache struct {
	mu       sync.Mutex
	entries  map[string]*list.Element
	order    *list.List // front: the most recently used
	bytes    int
	maxBytes int
	maxEntry int
}

type parseEntry struct{ query, tree string }

// Bounds of the engine's parse cache: a statement and its tree above
// maxParseEntry are not kept (a generated IN list of thousands), and all
// of them together take at most maxParseBytes.
const (
	maxParseEntry = 64 << 10
	maxParseBytes = 8 << 20
)

func newParseCache(maxBytes, maxEntry int) *parseCache {
	return &parseCache{entries: map[string]*list.Element{}, order: list.New(), maxBytes: maxBytes, maxEntry: maxEntry}
}

// get is the tree of query, if kept; a nil cache keeps nothing.
func (pc *parseCache) get(query string) (string, bool) {
	if pc == nil {
		return "", false
	}
	pc.mu.Lock()
	defer pc.mu.Unlock()
	el, ok := pc.entries[query]
	if !ok {
		return "", false
	}
	pc.order.MoveToFront(el)
	return el.Value.(*parseEntry).tree, true
}

// put keeps the tree of query, evicting the least recently used.
func (pc *parseCache) put(query, tree string) {
	size := len(query) + len(tree)
	if pc == nil || size > pc.maxEntry || size > pc.maxBytes {
		return
	}
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if _, ok := pc.entries[query]; ok {
		return
	}
	pc.entries[query] = pc.order.PushFront(&parseEntry{query: query, tree: tree})
	pc.bytes += size
	for pc.bytes > pc.maxBytes {
		el := pc.order.Back()
		e := el.Value.(*parseEntry)
		pc.order.Remove(el)
		delete(pc.entries, e.query)
		pc.bytes -= len(e.query) + len(e.tree)
	}
}
