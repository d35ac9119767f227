package catalogtest

import (
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/flightgw/flightgw/catalogs"
)

// testStagedScanner checks ScanStaged: the transaction's view is the
// committed rows and the staged ones, only the staged ones for an
// overwrite; scanning commits nothing; a receipt of another table is
// refused with ErrInvalidArgument.
func (s suite) testStagedScanner(t *testing.T) {
	in, id := s.setup(t, "staged_scan")
	ss, ok := in.Provider.(catalogs.StagedScanner)
	if !ok && s.cfg.StagedScans {
		t.Fatalf("the backend declares StagedScans but %T is no catalogs.StagedScanner", in.Provider)
	}
	skipUnless(t, ok, "catalogs.StagedScanner")
	ctx := context.Background()
	if _, err := in.Provider.Commit(ctx, id, []catalogs.WriteReceipt{write(t, in, id, 0, 100)}); err != nil {
		t.Fatal(err)
	}
	staged := []catalogs.WriteReceipt{write(t, in, id, 100, 50)}
	defer discard(t, in, id, staged)
	wantRows(t, "ScanStaged", scanNames(t, "ScanStaged", ss, id, staged, false), 0, 150)
	wantRows(t, "ScanStaged(overwrite)", scanNames(t, "ScanStaged(overwrite)", ss, id, staged, true), 100, 50)
	if n := rows(t, in, id); n != 100 {
		t.Errorf("rows after scanning staged writes = %d, want the 100 committed", n)
	}
	other := createTable(t, in, "staged_scan_other")
	_, err := ss.ScanStaged(ctx, other, catalogs.ScanRequest{}, staged, false)
	wantKind(t, "ScanStaged(a receipt of another table)", err, catalogs.ErrInvalidArgument, other.Name)
}

// scanNames reads a ScanStaged of the suite's columns: id → name.
func scanNames(t *testing.T, what string, ss catalogs.StagedScanner, id catalogs.TableIdent, staged []catalogs.WriteReceipt, overwrite bool) map[int64]string {
	t.Helper()
	res, err := ss.ScanStaged(context.Background(), id, catalogs.ScanRequest{Columns: []string{"id", "name"}}, staged, overwrite)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	defer res.Reader.Release()
	out := map[int64]string{}
	for res.Reader.Next() {
		b := res.Reader.RecordBatch()
		ids, ok1 := b.Column(0).(*array.Int64)
		names, ok2 := b.Column(1).(*array.String)
		if !ok1 || !ok2 {
			t.Fatalf("%s: columns are %s, %s", what, b.Column(0).DataType(), b.Column(1).DataType())
		}
		for i := range ids.Len() {
			out[ids.Value(i)] = names.Value(i)
		}
	}
	if err := res.Reader.Err(); err != nil {
		t.Fatalf("%s reader: %v", what, err)
	}
	return out
}
