package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	_ "github.com/flightgw/flightgw/catalogs/paimon"
)

// TestPaimonThroughTheGateway ingests into a Paimon primary-key table
// created from the ingest's options, updates keys in a second commit and
// a transaction, and reads the merged rows back with SQL.
func TestPaimonThroughTheGateway(t *testing.T) {
	requireEngine(t)
	g := startGateway(t, `
catalogs:
  - name: pm
    type: paimon
    properties: {warehouse: "${DATA}/paimon", create-namespaces: default}
default_catalog: pm
`)
	c := g.flightClient(t)
	ctx := context.Background()
	create := modeCreate("pk")
	create.Catalog = ptr("pm")
	create.Options = map[string]string{"bucket": "2", "primary-key": "id"}
	if n, err := c.ExecuteIngest(ctx, reader(t, people(t, 0, 10)), create); err != nil || n != 10 {
		t.Fatalf("create: n=%d err=%v", n, err)
	}
	// Keys 5..14: 5..9 are updates (their score changes), 10..14 new.
	upd := modeAppend("pk")
	upd.Catalog = ptr("pm")
	if _, err := c.ExecuteIngest(ctx, reader(t, people(t, 5, 10)), upd); err != nil {
		t.Fatal(err)
	}
	tx, err := c.BeginTransaction(ctx)
	if err != nil {
		t.Fatal(err)
	}
	in := modeAppend("pk")
	in.Catalog = ptr("pm")
	in.TransactionId = tx.ID()
	if _, err := c.ExecuteIngest(ctx, reader(t, people(t, 20, 3)), in); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	got := queryOne(t, g, "SELECT count(*), count(DISTINCT id), min(id), max(id) FROM pm.default.pk")
	if want := "18|18|0|22"; got != want {
		t.Fatalf("rows = %s, want %s", got, want)
	}
	// Key 5's last write is the second commit's first row (score 0.5).
	if got := queryOne(t, g, "SELECT score FROM pm.default.pk WHERE id = 5"); got != "0.5" {
		t.Fatalf("score of key 5 = %s, want the update's 0.5", got)
	}
}

// queryOne runs a query through ADBC and returns its rows as "a|b|c",
// joined by newlines.
func queryOne(t *testing.T, g *gateway, query string) string {
	t.Helper()
	rows, err := queryRows(t, g.adbcConn(t, nil), query, nil)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return strings.Join(rows, "\n")
}

// TestPaimonNativeParquet: an append Paimon table is read by DuckDB from
// its Parquet files (a Plain plan); a primary-key table of the same rows
// goes through the catalog scan; both give the same rows and types.
func TestPaimonNativeParquet(t *testing.T) {
	requireEngine(t)
	g := startGateway(t, `
catalogs:
  - name: pm
    type: paimon
    properties: {warehouse: "${DATA}/paimon", create-namespaces: default}
default_catalog: pm
`)
	c, ctx := g.flightClient(t), context.Background()
	for _, tc := range []struct {
		name string
		opts map[string]string
	}{{"app", nil}, {"pk", map[string]string{"bucket": "2", "primary-key": "id"}}} {
		for i := range 2 {
			// The table's options go with the create only: a plain append
			// refuses options (they could not be applied).
			o := modeCreate(tc.name)
			o.Options = tc.opts
			if i > 0 {
				o = modeAppend(tc.name)
			}
			o.Catalog = ptr("pm")
			if _, err := c.ExecuteIngest(ctx, reader(t, people(t, i*50, 50)), o); err != nil {
				t.Fatal(err)
			}
		}
	}
	cnxn := g.adbcConn(t, nil)
	if !readsFiles(t, g, cnxn, "pm.default.app") {
		t.Fatal("a Paimon append table is not read from its files")
	}
	if readsFiles(t, g, cnxn, "pm.default.pk") {
		t.Fatal("a Paimon primary-key table is read from its files, without its merge")
	}
	const q = `SELECT id, name, score FROM pm.default.%s WHERE id %% 3 = 0 ORDER BY id`
	ns, nrows := querySchema(t, cnxn, fmt.Sprintf(q, "app"))
	ss, srows := querySchema(t, cnxn, fmt.Sprintf(q, "pk"))
	if len(nrows) != 34 || strings.Join(nrows, "\n") != strings.Join(srows, "\n") {
		t.Errorf("rows differ:\nfiles %q\nscan  %q", nrows, srows)
	}
	for i, f := range ns.Fields() {
		if !arrow.TypeEqual(f.Type, ss.Field(i).Type) {
			t.Errorf("column %s: %s from the files, %s from the scan", f.Name, f.Type, ss.Field(i).Type)
		}
	}
}
