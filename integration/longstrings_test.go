package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	ice "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"

	_ "github.com/flightgw/flightgw/catalogs/paimon"
)

// Issue 19's repros through the gateway, with ADBC: strings of 1–200
// bytes in batches of 20,000 rows, which the arrow-go Take kernel cut
// into NUL bytes, or panicked on in a goroutine of its own (killing the
// gateway), while the process allocator's buffers had spare capacity.
// Every value read back by SQL must be the one sent.

var longSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "p", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "body", Type: arrow.BinaryTypes.String, Nullable: true},
}, nil)

// longBody is row id's body in the write called gen: lo..hi bytes.
func longBody(id, gen, lo, hi int) string {
	n := lo + (id*7919+gen*104729)%(hi-lo+1)
	return fmt.Sprintf("%d:", gen) + strings.Repeat(string(rune('a'+id%26)), n)
}

// longBatches are rows [from, from+n) in batches of size rows.
func longBatches(from, n, size, gen, lo, hi int) []arrow.RecordBatch {
	var out []arrow.RecordBatch
	for start := from; start < from+n; start += size {
		b := array.NewRecordBuilder(memory.DefaultAllocator, longSchema)
		for id := start; id < min(start+size, from+n); id++ {
			b.Field(0).(*array.Int64Builder).Append(int64(id))
			b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("p%d", id%2))
			b.Field(2).(*array.StringBuilder).Append(longBody(id, gen, lo, hi))
		}
		out = append(out, b.NewRecordBatch())
		b.Release()
	}
	return out
}

// checkLongRows reads id and body of table in id order and compares them
// with want(id) for ids [0, n).
func checkLongRows(t *testing.T, g *gateway, table string, n int, want func(id int) string) {
	t.Helper()
	rows, err := queryRows(t, g.adbcConn(t, nil), "SELECT id, body FROM "+table+" ORDER BY id", nil)
	if err != nil {
		t.Fatalf("%s: %v", table, err)
	}
	if len(rows) != n {
		t.Fatalf("%s: %d rows, want %d", table, len(rows), n)
	}
	for id, r := range rows {
		if w := fmt.Sprintf("%d|%s", id, want(id)); r != w {
			t.Fatalf("%s: row %d is %.80q (%d bytes), want %.80q (%d bytes)", table, id, r, len(r), w, len(w))
		}
	}
}

func TestLongStringsThroughTheGateway(t *testing.T) {
	requireEngine(t)
	g := startGateway(t, `
catalogs:
  - name: lake
    type: iceberg
    properties: {catalog-type: sql, uri: "sqlite:///${DATA}/catalog.db", warehouse: "file://${DATA}/warehouse", create-namespaces: default}
  - name: pm
    type: paimon
    properties: {warehouse: "${DATA}/paimon", create-namespaces: default, table-default.write-buffer-size: "1 mb"}
default_catalog: lake
`)
	c, ctx := g.flightClient(t), context.Background()
	ingest := func(name, cat string, opts map[string]string, create bool, batches []arrow.RecordBatch) {
		t.Helper()
		o := modeAppend(name)
		if create {
			o = modeCreate(name)
		}
		o.Catalog, o.Options = ptr(cat), opts
		want := 0
		for _, b := range batches {
			want += int(b.NumRows())
		}
		if n, err := c.ExecuteIngest(ctx, reader(t, batches...), o); err != nil || n != int64(want) {
			t.Fatalf("%s.%s: ingest n=%d err=%v, want %d rows", cat, name, n, err, want)
		}
	}

	t.Run("paimon-partitioned-append", func(t *testing.T) {
		ingest("part_long", "pm", map[string]string{"partition": "p"}, true, longBatches(0, 20000, 20000, 0, 1, 200))
		checkLongRows(t, g, "pm.default.part_long", 20000, func(id int) string { return longBody(id, 0, 1, 200) })
	})
	t.Run("paimon-primary-key-spill", func(t *testing.T) {
		// 100k rows, then 120k updates and new keys with longer values,
		// through a 1 MiB write buffer: SELECT * merges many level-0 files.
		ingest("pk_long", "pm", map[string]string{"primary-key": "id", "bucket": "2"}, true, longBatches(0, 100000, 20000, 0, 1, 60))
		ingest("pk_long", "pm", nil, false, longBatches(0, 120000, 20000, 1, 100, 200))
		checkLongRows(t, g, "pm.default.pk_long", 120000, func(id int) string { return longBody(id, 1, 100, 200) })
	})
	t.Run("iceberg-bucketed", func(t *testing.T) {
		// Created as pyiceberg and Spark users create it: bucket(16, id).
		sc := ice.NewSchema(0,
			ice.NestedField{ID: 1, Name: "id", Type: ice.PrimitiveTypes.Int64, Required: true},
			ice.NestedField{ID: 2, Name: "p", Type: ice.PrimitiveTypes.String},
			ice.NestedField{ID: 3, Name: "body", Type: ice.PrimitiveTypes.String})
		spec := ice.NewPartitionSpec(ice.PartitionField{SourceIDs: []int{1}, FieldID: 1000, Name: "id_bucket", Transform: ice.BucketTransform{NumBuckets: 16}})
		if _, err := g.catalog(t).CreateTable(ctx, []string{"default", "bucketed_long"}, sc, catalog.WithPartitionSpec(&spec)); err != nil {
			t.Fatal(err)
		}
		ingest("bucketed_long", "lake", nil, false, longBatches(0, 200000, 20000, 0, 1, 200))
		checkLongRows(t, g, "lake.default.bucketed_long", 200000, func(id int) string { return longBody(id, 0, 1, 200) })
	})
}
