//go:build duckdb_arrow

package engine

import (
	"strings"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightgw/flightgw/catalogs"
)

// The describe of a query pushed whole to its backend (GetFlightInfo of a
// query over an upstream Flight SQL server or StarRocks) was most of the
// gateway's own work on such a call: DuckDB registering an empty stream
// per table, preparing the query over them and dropping the views again,
// some 3 ms of CPU with the rewrite, for a statement the backend then runs itself
// (docs/upstream.md). The result's typing is DuckDB's function of the
// statement's text and its tables' column types alone, so describeCache
// keeps it by those: a BI tool or dashboard sends the same statements
// again and again. Parsing (itself cached: parsecache.go), resolving the
// tables for the caller (realm, rights) and the push-down rule still run
// for every call; DuckDB's rewrite of the tree into SQL
// (json_deserialize_sql), the registration and the prepare are spared,
// and a table whose columns changed is another key.
type describeCache struct {
	mu      sync.Mutex
	entries map[string]describedTypes
	bytes   int
}

// describedTypes is what DuckDB's prepare told of a statement: its
// result schema with the public names (publicNames) and its parameters.
type describedTypes struct{ schema, params *arrow.Schema }

// maxDescribeBytes bounds the keys kept (the schemas are shared, small
// beside them): past it, the cache starts again empty. A key above
// maxParseEntry is not kept.
const maxDescribeBytes = 8 << 20

func newDescribeCache() *describeCache { return &describeCache{entries: map[string]describedTypes{}} }

// describeKey is the key of p's describe, or "" when it is not to be
// kept: only a query pushed whole (pushable: its tables a QueryPusher's,
// none with staged writes), none of whose tables is read from files
// (a FilePlanner's split runs EXPLAIN over the registered views), with
// column types that have a fingerprint.
func describeKey(p *plan) string {
	if _, _, ok := pushable(p.text, p); !ok {
		return ""
	}
	var b strings.Builder
	b.WriteString(p.text)
	for _, r := range p.refs {
		if _, ok := r.table.Scanner.(catalogs.FilePlanner); ok {
			return ""
		}
		fp := projectSchema(r.table.Schema, r.columns).Fingerprint()
		if fp == "" {
			return ""
		}
		b.WriteByte(0)
		b.WriteString(r.table.Ident.String())
		b.WriteByte(0)
		b.WriteString(fp)
	}
	if b.Len() > maxParseEntry {
		return ""
	}
	return b.String()
}

// get is the kept describe of key; a nil cache keeps nothing.
func (dc *describeCache) get(key string) (describedTypes, bool) {
	if dc == nil || key == "" {
		return describedTypes{}, false
	}
	dc.mu.Lock()
	defer dc.mu.Unlock()
	d, ok := dc.entries[key]
	return d, ok
}

// put keeps a describe.
func (dc *describeCache) put(key string, d describedTypes) {
	if dc == nil || key == "" {
		return
	}
	dc.mu.Lock()
	defer dc.mu.Unlock()
	if _, ok := dc.entries[key]; ok {
		return
	}
	if dc.bytes+len(key) > maxDescribeBytes {
		clear(dc.entries)
		dc.bytes = 0
	}
	dc.entries[key] = d
	dc.bytes += len(key)
}
