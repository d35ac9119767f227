package paimon_test

import (
	"context"
	"testing"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/catalogs/catalogtest"
)

// BenchmarkQueryMetadata is the metadata side of issue 27's bench
// (integration/bench/maintain -catalog paimon) without the transport or
// the data: what the gateway asks the backend for per query (the
// table's spec when GetFlightInfo and DoGet resolve it, then the plan of
// the files DuckDB reads), on an append table of 1,000 auto-commit
// appends after compact and expire_snapshots, and on the same rows in
// one commit (go test -run '^$' -bench QueryMetadata -benchtime 200x).
func BenchmarkQueryMetadata(b *testing.B) {
	const appends, rows = 1000, 100
	ctx := context.Background()
	p, _ := openLocal(b, nil)
	id := func(n string) catalogs.TableIdent {
		return catalogs.TableIdent{Catalog: "lake", Namespace: []string{"default"}, Name: n}
	}
	one, many := id("one_commit"), id("appends_on")
	catalogtest.SeedAppends(b, p, one, many, appends, rows)
	rep, err := p.Maintain(ctx, many, catalogs.MaintainRequest{Tasks: []string{catalogs.TaskCompact, catalogs.TaskExpireSnapshots}})
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("compact: %d files into %d", rep.Tasks[0].RewrittenFiles, rep.Tasks[0].AddedFiles)
	for _, t := range []catalogs.TableIdent{one, many} {
		b.Run(t.Name, func(b *testing.B) {
			for b.Loop() {
				for range 2 {
					if _, err := p.GetTableSpec(ctx, t); err != nil {
						b.Fatal(err)
					}
				}
				plan, err := p.PlanFiles(ctx, t, catalogs.ScanRequest{})
				if err != nil {
					b.Fatal(err)
				}
				if t.Name == many.Name && plan.FilesTotal != 1 {
					b.Fatalf("%d live files after compact", plan.FilesTotal)
				}
			}
		})
	}
}
