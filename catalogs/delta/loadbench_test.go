package delta_test

import (
	"context"
	"testing"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/catalogs/catalogtest"
)

// BenchmarkQueryMetadata is the metadata side of issue 27's bench
// (integration/bench/maintain -catalog delta) without the transport or
// the data: what the gateway asks the backend for per query (the
// table's spec when GetFlightInfo and DoGet resolve it, then the scan,
// opened and released unread), on a table of 1,000 auto-commit appends
// after OPTIMIZE and a checkpoint, and on the same rows in one commit
// (go test -run '^$' -bench QueryMetadata -benchtime 200x).
func BenchmarkQueryMetadata(b *testing.B) {
	const appends, rows = 1000, 100
	ctx := context.Background()
	p := openLocal(b, "")
	one, many := ident("default", "one_commit"), ident("default", "appends_on")
	catalogtest.SeedAppends(b, p, one, many, appends, rows)
	rep, err := p.Maintain(ctx, many, catalogs.MaintainRequest{Tasks: []string{catalogs.TaskOptimize, catalogs.TaskCheckpoint}})
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("optimize: %d files into %d", rep.Tasks[0].RewrittenFiles, rep.Tasks[0].AddedFiles)
	for _, id := range []catalogs.TableIdent{one, many} {
		b.Run(id.Name, func(b *testing.B) {
			for b.Loop() {
				for range 2 {
					if _, err := p.GetTableSpec(ctx, id); err != nil {
						b.Fatal(err)
					}
				}
				res, err := p.Scan(ctx, id, catalogs.ScanRequest{})
				if err != nil {
					b.Fatal(err)
				}
				if res.FilesTotal != 1 && id.Name == many.Name {
					b.Fatalf("%d live files after OPTIMIZE", res.FilesTotal)
				}
				res.Reader.Release()
			}
		})
	}
}
