package iceberg

import (
	"container/list"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"

	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/metrics"
	"github.com/apache/iceberg-go/table"
)

// DefaultMetadataCacheBytes is PropMetadataCacheBytes's default: 16 MiB
// of metadata.json, some twenty tables of a thousand small commits. A
// parsed table takes a few times its file in memory once its snapshots
// are all read (maintenance reads them; a query reads one).
const DefaultMetadataCacheBytes = 16 << 20

// metaCacheEntries bounds the cache's entries whatever their size: small
// tables cost little each, but a catalog of many is not held whole.
const metaCacheEntries = 256

// Why a cache, and why it is safe. Every use of a table loads it
// (Provider.load): a query three times (its spec in GetFlightInfo and in
// DoGet, then its scan or plan), and each iceberg-go load reads and parses
// the whole metadata.json, about 20 ms for a table of a thousand commits.
// A metadata file is never rewritten (a commit writes a new one and moves
// the catalog's pointer to it), so the table parsed from one location is
// the table at that location for as long as the file exists. The cache
// keeps parsed tables by table and exact location; the catalog's pointer
// is read on every load as before (metaPointers), so a load sees every
// commit, this provider's or any other writer's, exactly when an uncached
// load would, and a commit's compare-and-swap asserts what it always did.
// Only a SQL catalog's loads are cached: the location, the catalog and its
// FileIO properties (the catalog's own, no vended credential) identify the
// bytes; a REST catalog answers the metadata and its credentials with
// every load, and its loads stay iceberg-go's.

// metaKey names one parsed table: the identifier it was loaded under (a
// rename keeps the location) and the metadata location.
type metaKey struct{ table, location string }

// metaCache is a bounded LRU of parsed tables. A cached *table.Table is
// shared by concurrent loads: iceberg-go's metadata is immutable once
// parsed (its lazily decoded snapshots and schema indexes are guarded)
// and its accessors return copies; the table's manifest-list cache, kept
// with it, is guarded too.
type metaCache struct {
	maxBytes   int64
	maxEntries int
	reads      atomic.Int64 // metadata.json files read by misses

	mu    sync.Mutex
	bytes int64
	order *list.List // of *metaEntry, most recently used first
	byKey map[metaKey]*list.Element
}

type metaEntry struct {
	key  metaKey
	tbl  *table.Table
	size int64
}

func newMetaCache(maxBytes int64, maxEntries int) *metaCache {
	return &metaCache{maxBytes: maxBytes, maxEntries: maxEntries, order: list.New(), byKey: map[metaKey]*list.Element{}}
}

// get returns the table cached under k, or nil.
func (c *metaCache) get(k metaKey) *table.Table {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.byKey[k]
	if !ok {
		return nil
	}
	c.order.MoveToFront(e)
	return e.Value.(*metaEntry).tbl
}

// put caches tbl, read from size bytes, under k, evicting the least
// recently used entries past the bounds; a table larger than the whole
// bound is not kept.
func (c *metaCache) put(k metaKey, tbl *table.Table, size int64) {
	if size > c.maxBytes || c.maxEntries <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.byKey[k]; ok {
		c.order.MoveToFront(e)
		return
	}
	c.byKey[k] = c.order.PushFront(&metaEntry{key: k, tbl: tbl, size: size})
	c.bytes += size
	for c.bytes > c.maxBytes || c.order.Len() > c.maxEntries {
		old := c.order.Remove(c.order.Back()).(*metaEntry)
		delete(c.byKey, old.key)
		c.bytes -= old.size
	}
}

// metaPointers reads a table's metadata location from a SQL catalog's
// iceberg_tables, the row iceberg-go's LoadTable reads before it reads
// the file.
type metaPointers struct {
	db      *sql.DB
	catalog string
	query   string
}

// newMetaPointers returns the pointer reader of the SQL catalog on db,
// or nil when the catalog's tables are not the schema it reads (a legacy
// V0 catalog without iceberg_type, or tables not created yet): those
// catalogs' loads stay uncached.
func newMetaPointers(ctx context.Context, db *sql.DB, catalog, dialect string) *metaPointers {
	rows, err := db.QueryContext(ctx, "SELECT iceberg_type FROM iceberg_tables WHERE 1 = 0")
	if err != nil {
		return nil
	}
	_ = rows.Close()
	marks := []any{"?", "?", "?"}
	if dialect == "postgres" {
		marks = []any{"$1", "$2", "$3"}
	}
	q := fmt.Sprintf("SELECT metadata_location FROM iceberg_tables WHERE catalog_name = %s AND table_namespace = %s AND table_name = %s"+
		" AND (iceberg_type = 'TABLE' OR iceberg_type IS NULL)", marks...)
	return &metaPointers{db: db, catalog: catalog, query: q}
}

// encodedNamespaceMarker is the prefix iceberg-go's SQL catalog gives a
// namespace key it encodes (a level holding a dot, or this marker).
const encodedNamespaceMarker = "__iceberg_namespace_v1__:"

// lookup returns the metadata location of table id; ok is false when the
// row is missing or names no location, or when the namespace's key is
// one iceberg-go encodes or may look up under two spellings, which only
// iceberg-go's own load resolves (and answers the right error for).
func (m *metaPointers) lookup(ctx context.Context, id table.Identifier) (loc string, ok bool, err error) {
	ns := id[:len(id)-1]
	key := strings.Join(ns, ".")
	if strings.Contains(key, encodedNamespaceMarker) || strings.Count(key, ".") != len(ns)-1 {
		return "", false, nil
	}
	var v sql.NullString
	switch err := m.db.QueryRowContext(ctx, m.query, m.catalog, key, id[len(id)-1]).Scan(&v); {
	case errors.Is(err, sql.ErrNoRows):
		return "", false, nil
	case err != nil:
		return "", false, fmt.Errorf("read the metadata location from the catalog: %w", err)
	}
	return v.String, v.Valid && v.String != "", nil
}

// loadTable loads table id: from the cache when the catalog's pointer
// names a metadata location already parsed, else by reading it; a
// catalog without a pointer reader, or a pointer lookup that cannot
// answer, loads through iceberg-go as it is.
func (p *Provider) loadTable(ctx context.Context, id table.Identifier) (*table.Table, error) {
	if p.pointers == nil {
		return p.cat.LoadTable(ctx, id)
	}
	loc, ok, err := p.pointers.lookup(ctx, id)
	if err != nil {
		return nil, err
	}
	if !ok {
		return p.cat.LoadTable(ctx, id)
	}
	k := metaKey{table: strings.Join(id, "\x00"), location: loc}
	if tbl := p.meta.get(k); tbl != nil {
		return tbl, nil
	}
	tbl, size, err := p.readTable(ctx, id, loc)
	if err != nil {
		return nil, err
	}
	p.meta.put(k, tbl, size)
	return tbl, nil
}

// readTable reads and parses the metadata file at loc into the table
// iceberg-go's SQL catalog loads (the FileIO of the catalog's properties
// for that location, the catalog to commit through, and its metrics
// reporter, the no-op one: parseConfig refuses metrics-reporter-impl),
// and returns the file's size.
func (p *Provider) readTable(ctx context.Context, id table.Identifier, loc string) (*table.Table, int64, error) {
	fsF := iceio.LoadFSFunc(p.catProps, loc)
	var size int64
	read, err := table.NewFromLocation(ctx, id, loc, func(ctx context.Context) (iceio.IO, error) {
		fsys, err := fsF(ctx)
		if err != nil {
			return nil, err
		}
		return sizedRead{IO: fsys, size: &size, reads: &p.meta.reads}, nil
	}, p.sqlCat)
	if err != nil {
		return nil, 0, err
	}
	return table.New(id, read.Metadata(), loc, fsF, p.sqlCat, table.WithMetricsReporter(metrics.NopReporter{})), size, nil
}

// sizedRead is the FileIO a miss reads the metadata file through: it
// records the file's size (the cache's weight) and counts the read.
type sizedRead struct {
	iceio.IO
	size  *int64
	reads *atomic.Int64
}

// ReadFile implements iceio.ReadFileIO.
func (s sizedRead) ReadFile(name string) ([]byte, error) {
	s.reads.Add(1)
	if rf, ok := s.IO.(iceio.ReadFileIO); ok {
		b, err := rf.ReadFile(name)
		*s.size = int64(len(b))
		return b, err
	}
	f, err := s.IO.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	*s.size = int64(len(b))
	return b, err
}
