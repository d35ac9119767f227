//go:build duckdb_arrow

package engine

import (
	"context"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// collect runs q and returns its schema, its columns as chunked arrays,
// its batch count and whether it took the fast path.
func collect(t *testing.T, eng *Engine, q string, resolve Resolver) (*arrow.Schema, []*arrow.Chunked, int, bool) {
	t.Helper()
	r, err := eng.Query(context.Background(), q, nil, resolve)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	fast := r.fast != nil
	var recs []arrow.RecordBatch
	for r.Next() {
		b := r.RecordBatch()
		b.Retain()
		recs = append(recs, b)
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	schema := r.Schema()
	cols := make([]*arrow.Chunked, schema.NumFields())
	for i := range cols {
		var chunks []arrow.Array
		for _, b := range recs {
			if v, ok := b.Column(i).(interface{ ValidateFull() error }); ok && v.ValidateFull() != nil {
				err := v.ValidateFull()
				t.Fatalf("column %s: %v", schema.Field(i).Name, err)
			}
			chunks = append(chunks, b.Column(i))
		}
		cols[i] = arrow.NewChunked(schema.Field(i).Type, chunks)
	}
	for _, b := range recs {
		b.Release()
	}
	return schema, cols, len(recs), fast
}

// TestFastBatchesMatchDuckDB: batches gathered from DuckDB's vectors equal
// those DuckDB converts itself, for every type the fast path takes, with
// nulls (first appearing mid-batch), inline and out-of-line strings,
// partial chunks, and more rows than one batch; every pooled buffer comes
// back.
func TestFastBatchesMatchDuckDB(t *testing.T) {
	f := newFixture(t)
	const q = `SELECT
		i::BIGINT AS big, (i % 120)::TINYINT AS tiny, (i % 30000)::SMALLINT AS small, i::INTEGER AS int,
		(i % 200)::UTINYINT AS utiny, (i % 60000)::USMALLINT AS usmall, i::UINTEGER AS uint, i::UBIGINT AS ubig,
		CASE WHEN i % 7 = 0 THEN NULL ELSE i / 3.0 END::DOUBLE AS dbl, (i / 7.0)::FLOAT AS flt,
		i % 3 = 0 AS flag, CASE WHEN i % 5 = 0 THEN NULL ELSE i % 2 = 0 END AS nflag,
		DATE '2020-01-01' + (i % 1000)::INTEGER AS d, TIME '00:00:00' + INTERVAL (i % 86400) SECOND AS tm,
		TIMESTAMP '2024-01-01' + INTERVAL (i) SECOND AS ts, (TIMESTAMP '2024-01-01' + INTERVAL (i) SECOND)::TIMESTAMPTZ AS tstz,
		(TIMESTAMP '2024-01-01' + INTERVAL (i) SECOND)::TIMESTAMP_S AS ts_s, (TIMESTAMP '2024-01-01' + INTERVAL (i) SECOND)::TIMESTAMP_MS AS ts_ms,
		(TIMESTAMP '2024-01-01' + INTERVAL (i) SECOND)::TIMESTAMP_NS AS ts_ns,
		CASE WHEN i % 11 = 0 THEN NULL WHEN i % 4 = 0 THEN '' WHEN i % 2 = 0 THEN 'short-' || i
			ELSE 'a string longer than twelve bytes, number ' || i END AS str,
		CASE WHEN i >= 100000 AND i % 13 = 0 THEN NULL ELSE ('blob-' || i)::BLOB END AS late_null_blob,
		NULL::VARCHAR AS all_null, 42 AS const_int, 'a constant string longer than twelve' AS const_str,
		'short' AS const_short, true AS const_bool
		FROM range(150000) r(i) WHERE i % 17 <> 0`
	// Leave the pool's buffers full of set bits first: the fast path
	// reuses them without zeroing, so it must set every byte it uses.
	_, dirty, _, _ := collect(t, f.eng, `SELECT -1::BIGINT AS a, -1::BIGINT AS b, -1::BIGINT AS c, NOT false AS d,
		repeat(chr(255), 40) AS e FROM range(300000)`, f.resolve)
	for _, c := range dirty {
		c.Release()
	}
	fastSchema, fastCols, batches, fast := collect(t, f.eng, q, f.resolve)
	if !fast {
		t.Fatal("the query did not take the fast path")
	}
	if batches < 3 {
		t.Errorf("%d batches, want several", batches)
	}
	fastBatches = false
	refSchema, refCols, _, refFast := collect(t, f.eng, q, f.resolve)
	fastBatches = true
	if refFast {
		t.Fatal("the reference took the fast path")
	}
	if !fastSchema.Equal(refSchema) {
		t.Fatalf("schemas differ:\nfast %s\nref  %s", fastSchema, refSchema)
	}
	for i := range refCols {
		name := refSchema.Field(i).Name
		if fastCols[i].Len() != refCols[i].Len() || fastCols[i].NullN() != refCols[i].NullN() {
			t.Errorf("column %s: %d rows %d nulls, want %d rows %d nulls", name,
				fastCols[i].Len(), fastCols[i].NullN(), refCols[i].Len(), refCols[i].NullN())
			continue
		}
		if !array.ChunkedEqual(fastCols[i], refCols[i]) {
			t.Errorf("column %s differs", name)
		}
		fastCols[i].Release()
		refCols[i].Release()
	}
	if n := f.eng.pool.outstanding(); n != 0 {
		t.Errorf("%d pooled bytes not given back", n)
	}
}

// TestFastBatchesBoundStrings: a batch of long strings ends early, past
// maxBatchValueBytes, instead of growing to 64Ki rows.
func TestFastBatchesBoundStrings(t *testing.T) {
	f := newFixture(t)
	_, cols, batches, fast := collect(t, f.eng, `SELECT repeat('x', 40000) AS s FROM range(5000)`, f.resolve)
	defer cols[0].Release()
	if !fast || cols[0].Len() != 5000 {
		t.Fatalf("fast %v, %d rows", fast, cols[0].Len())
	}
	if batches < 3 {
		t.Errorf("200 MB of strings in %d batches, want at least 3", batches)
	}
	for _, c := range cols[0].Chunks() {
		s := c.(*array.String)
		if n := len(s.ValueBytes()); n > maxBatchValueBytes+vectorSize*40000 {
			t.Errorf("a batch holds %d bytes of strings", n)
		}
		if v := s.Value(0); v != strings.Repeat("x", 40000) {
			t.Fatalf("value of %d bytes", len(v))
		}
	}
}

// TestFastBatchesStopEarly: a stream closed after its first batch gives
// every pooled buffer back.
func TestFastBatchesStopEarly(t *testing.T) {
	f := newFixture(t)
	r, err := f.eng.Query(context.Background(), `SELECT i, 'value ' || i AS s FROM range(1000000) t(i)`, nil, f.resolve)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Next() || r.fast == nil {
		t.Fatalf("no first batch on the fast path: %v", r.Err())
	}
	r.Close()
	if n := f.eng.pool.outstanding(); n != 0 {
		t.Errorf("%d pooled bytes not given back", n)
	}
}
