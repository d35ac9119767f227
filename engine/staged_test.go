//go:build duckdb_arrow

package engine

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/flightgw/flightgw/catalogs"
)

// stagedScanner is a memScanner that is also a catalogs.StagedScanner:
// the transaction's view of table t is the table "t@txn".
type stagedScanner struct {
	*memScanner
	staged int
}

func (s *stagedScanner) ScanStaged(ctx context.Context, t catalogs.TableIdent, req catalogs.ScanRequest, staged []catalogs.WriteReceipt, overwrite bool) (*catalogs.ScanResult, error) {
	s.staged++
	t.Name += "@txn"
	return s.Scan(ctx, t, req)
}

// TestStagedStreamPath: a table with a transaction's staged writes whose
// backend has no file plan is read on the stream path through
// ScanStaged (the transaction's view, not the committed rows), joined
// with a table without staged writes; a backend that cannot scan staged
// writes refuses the query FailedPrecondition naming the table, never
// answering it from the committed rows.
func TestStagedStreamPath(t *testing.T) {
	f := newFixture(t)
	f.scan.tables["sales@txn"] = batch(t, f.scan.tables["sales"].Schema(), `[{"id":1,"region":"eu","amount":99,"qty":1},{"id":9,"region":"us","amount":1,"qty":1}]`)
	ss := &stagedScanner{memScanner: f.scan}
	resolve := func(scanner catalogs.Scanner) Resolver {
		return func(cat, sch, name string) (Table, error) {
			tb, err := f.resolve(cat, sch, name)
			if err == nil && name == "sales" {
				tb.Scanner = scanner
				tb.Staged = &Staged{Receipts: []catalogs.WriteReceipt{{}}}
			}
			return tb, err
		}
	}
	const q = `SELECT s.id, s.amount, r.manager FROM sales s JOIN regions r USING (region) ORDER BY s.id`
	r, err := f.eng.Query(context.Background(), q, nil, resolve(ss))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for r.Next() {
		got = append(got, render(r.RecordBatch())...)
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	r.Close()
	if want := []string{"1|99|ann", "9|1|bob"}; !slices.Equal(got, want) || ss.staged != 1 {
		t.Errorf("staged view: %v (%d ScanStaged), want %v", got, ss.staged, want)
	}

	_, err = f.eng.Query(context.Background(), q, nil, resolve(f.scan))
	if !errors.Is(err, catalogs.ErrFailedPrecondition) || !strings.Contains(err.Error(), "lake.default.sales has uncommitted writes") {
		t.Errorf("a backend without ScanStaged: %v", err)
	}
}
