package iceberg_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/catalogs/catalogtest"
	"github.com/flightgw/flightgw/catalogs/iceberg"
)

// TestReclaimS3: on S3 the reclaimer lists the table's objects and deletes
// an orphan staged file, and leaves the committed files and an object of a
// sibling prefix ("t" and "tt") alone.
func TestReclaimS3(t *testing.T) {
	ctx := context.Background()
	s3 := newFakeS3(t)
	p, err := iceberg.Open(ctx, "lake", s3.props(t, "wh"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	id := catalogs.TableIdent{Catalog: "lake", Namespace: []string{"default"}, Name: "t"}
	if _, err := p.CreateTable(ctx, id, catalogtest.Schema, nil); err != nil {
		t.Fatal(err)
	}
	write := func(from int64) catalogs.WriteReceipt {
		b := catalogtest.Batch(from, 5)
		defer b.Release()
		r, err := p.WriteBatch(ctx, id, b)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	if _, err := p.Commit(ctx, id, []catalogs.WriteReceipt{write(0)}); err != nil {
		t.Fatal(err)
	}
	committed, err := s3.list("wh/")
	if err != nil {
		t.Fatal(err)
	}
	write(10) // staged, never committed
	sibling := "wh/default.db/tt/data/x.parquet"
	if _, err := s3.backend.PutObject(bucket, sibling, nil, strings.NewReader("x"), 1, nil); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	rep, err := p.Reclaim(ctx, catalogs.ReclaimOptions{MinAge: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	after, err := s3.list("wh/")
	if err != nil {
		t.Fatal(err)
	}
	want := slices.Sorted(slices.Values(append(committed, sibling)))
	slices.Sort(after)
	if rep.DataFiles != 1 || !slices.Equal(after, want) {
		t.Fatalf("report %+v; objects left\n%v\nwant\n%v", rep, after, want)
	}
	spec, err := p.GetTableSpec(ctx, id)
	if err != nil || spec.CurrentSnapshotID == nil {
		t.Fatalf("table after reclaim: %+v, %v", spec, err)
	}
}
