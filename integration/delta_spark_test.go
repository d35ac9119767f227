package integration

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
)

// sparkFixtures are the tables Delta Spark 4.0 wrote
// (integration/delta/spark/make_fixtures.py), each with the rows Spark
// read back (expected.json).
const sparkFixtures = "../catalogs/delta/testdata/spark"

// TestDeltaGatewayReadsSpark: the gateway's SQL (`SELECT *` through the
// engine) over each table Delta Spark wrote answers exactly what Spark
// read: deletion vectors, V2 checkpoints with sidecars, column mapping
// name and id with renamed and dropped columns, row tracking after an
// UPDATE, timestamp_ntz and date partitions, in-commit timestamps with
// vacuumProtocolCheck, a column and a struct field added after the first
// commit. No reader venv needed: the
// oracle is Spark's own read, committed beside the tables.
func TestDeltaGatewayReadsSpark(t *testing.T) {
	requireEngine(t)
	g := startGateway(t, `
catalogs:
  - name: dl
    type: delta
    properties: {warehouse: "${DATA}/delta", create-namespaces: spark}
default_catalog: dl
`)
	ns := filepath.Join(g.dataDir, "delta", "spark")
	ents, err := os.ReadDir(sparkFixtures)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		if e.IsDir() {
			names = append(names, e.Name())
		}
	}
	if len(names) < 9 {
		t.Fatalf("Spark fixtures %v: want the nine tables", names)
	}
	c, ctx := g.flightClient(t), context.Background()
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			if err := os.CopyFS(filepath.Join(ns, name), os.DirFS(filepath.Join(sparkFixtures, name))); err != nil {
				t.Fatal(err)
			}
			var want deltaReaderOut
			b, err := os.ReadFile(filepath.Join(sparkFixtures, name, "expected.json"))
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(b, &want); err != nil {
				t.Fatal(err)
			}
			info, err := c.Execute(ctx, "SELECT * FROM dl.spark."+name)
			if err != nil {
				t.Fatal(err)
			}
			got := renderBatches(t, collect(t, ctx, c, info))
			slices.SortStableFunc(got.Rows, func(a, b []any) int {
				x, _ := strconv.ParseInt(a[0].(string), 10, 64)
				y, _ := strconv.ParseInt(b[0].(string), 10, 64)
				return int(x - y)
			})
			if !slices.Equal(got.Columns, want.Columns) {
				t.Fatalf("columns %v, Spark's %v", got.Columns, want.Columns)
			}
			compareDeltaRows(t, "gateway SQL over Spark's "+name, want.Columns, got, want.Rows)
		})
	}
}
