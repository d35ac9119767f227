package paimon_test

import (
	"context"
	"testing"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/catalogs/catalogtest"
)

// TestMatchCommit: a commit id matches exactly the data files its
// snapshot's delta added, with the rows they hold; other files, more or
// fewer, do not match; an id that never landed is not landed.
func TestMatchCommit(t *testing.T) {
	p, _ := openLocal(t, nil)
	ctx := context.Background()
	id := catalogs.TableIdent{Catalog: "lake", Namespace: []string{"default"}, Name: "match"}
	if _, err := p.CreateTable(ctx, id, catalogtest.Schema, nil); err != nil {
		t.Fatal(err)
	}
	stage := func(from, n int64) catalogs.WriteReceipt {
		t.Helper()
		b := catalogtest.Batch(from, n)
		defer b.Release()
		r, err := p.WriteBatch(ctx, id, b)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	first := []catalogs.WriteReceipt{stage(0, 1), stage(1, 4)}
	out, err := p.CommitOnce(ctx, id, "first", first)
	if err != nil {
		t.Fatal(err)
	}
	never := stage(10, 6)
	for _, c := range []struct {
		name, id     string
		receipts     []catalogs.WriteReceipt
		landed, same bool
	}{
		{"its files", "first", first, true, true},
		{"fewer files", "first", first[:1], true, false},
		{"other files", "first", []catalogs.WriteReceipt{never}, true, false},
		{"more files", "first", append([]catalogs.WriteReceipt{never}, first...), true, false},
		{"never landed", "second", first, false, false},
	} {
		rec, landed, same, err := p.MatchCommit(ctx, id, c.id, c.receipts)
		wantRows := uint64(0)
		if c.landed {
			wantRows = 5
		}
		if err != nil || landed != c.landed || same != c.same || rec.RowCount != wantRows || (landed && rec.Outcome.SnapshotID != out.SnapshotID) {
			t.Errorf("%s: MatchCommit(%s) = %+v, landed %v, same %v, %v; want landed %v, same %v, %d rows in snapshot %d",
				c.name, c.id, rec, landed, same, err, c.landed, c.same, wantRows, out.SnapshotID)
		}
	}
}
