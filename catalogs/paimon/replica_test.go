package paimon_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/catalogs/lake"
	"github.com/flightgw/flightgw/catalogs/paimon"
)

// openReplica opens a second provider on the warehouse wh, as a second
// gateway process sharing it does: nothing in memory is shared.
func openReplica(t *testing.T, wh string) *paimon.Provider {
	t.Helper()
	p, err := paimon.Open(context.Background(), "lake", map[string]string{paimon.PropWarehouse: wh,
		lake.PropCommitMinWait: "1", lake.PropCommitMaxWait: "20"})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestReplicasCommitAFileOnce: two providers sharing a warehouse (two
// replicas) commit the same receipts under two commit ids. Whichever way
// the race goes (the second loses the compare-and-swap to the first; the
// first lands between the second's replay check and its commit; the
// second starts after), one lands and the other is refused with
// ErrFailedPrecondition naming the file, and the rows are in the table
// once. The same id on the second replica answers the landed snapshot.
func TestReplicasCommitAFileOnce(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name string
		// race commits rs as idA on a while b commits them as idB, and
		// returns b's outcome.
		race func(t *testing.T, a, b *paimon.Provider, id catalogs.TableIdent, rs []catalogs.WriteReceipt, idB string) (catalogs.CommitOutcome, error)
	}{
		{"lost compare-and-swap", func(t *testing.T, a, b *paimon.Provider, id catalogs.TableIdent, rs []catalogs.WriteReceipt, idB string) (catalogs.CommitOutcome, error) {
			var once sync.Once
			paimon.SetBeforeAttempt(b, func() { once.Do(func() { commitOnce(t, a, id, "job-a", rs) }) })
			defer paimon.SetBeforeAttempt(b, nil)
			return b.CommitOnce(ctx, id, idB, rs)
		}},
		{"landed after the replay check", func(t *testing.T, a, b *paimon.Provider, id catalogs.TableIdent, rs []catalogs.WriteReceipt, idB string) (catalogs.CommitOutcome, error) {
			if err := b.CheckUnreferenced(ctx, id, rs); err != nil {
				t.Fatalf("CheckUnreferenced before either commit: %v", err)
			}
			commitOnce(t, a, id, "job-a", rs)
			return b.CommitOnce(ctx, id, idB, rs)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a, wh := openLocal(t, nil)
			b := openReplica(t, wh)
			id := catalogs.TableIdent{Catalog: "lake", Namespace: []string{"default"}, Name: "twice"}
			if _, err := a.CreateTable(ctx, id, sampleSchema, nil); err != nil {
				t.Fatal(err)
			}
			rs := stage(t, a, id, 0, 10)
			out, err := c.race(t, a, b, id, rs, "job-b")
			if !errors.Is(err, catalogs.ErrFailedPrecondition) || !strings.Contains(err.Error(), "job-b") || !strings.Contains(err.Error(), ".parquet") {
				t.Errorf("second replica's commit under another id = %+v, %v; want ErrFailedPrecondition naming the commit and the file", out, err)
			}
			if n := countRows(t, a, id); n != 10 {
				t.Errorf("%d rows after both commits, want 10 (each row once)", n)
			}
			again, err := b.CommitOnce(ctx, id, "job-a", rs)
			if err != nil || again.SnapshotID != 1 || again.Duplicate {
				t.Errorf("the landed id on the second replica = %+v, %v; want snapshot 1, not a duplicate", again, err)
			}
		})
	}
}

func commitOnce(t *testing.T, p *paimon.Provider, id catalogs.TableIdent, commitID string, rs []catalogs.WriteReceipt) {
	t.Helper()
	if _, err := p.CommitOnce(context.Background(), id, commitID, rs); err != nil {
		t.Fatalf("CommitOnce %s: %v", commitID, err)
	}
}

func countRows(t *testing.T, p *paimon.Provider, id catalogs.TableIdent) int64 {
	t.Helper()
	res, err := p.Scan(context.Background(), id, catalogs.ScanRequest{Columns: []string{"id"}})
	if err != nil {
		t.Fatal(err)
	}
	defer res.Reader.Release()
	n := int64(0)
	for res.Reader.Next() {
		n += res.Reader.RecordBatch().NumRows()
	}
	return n
}
