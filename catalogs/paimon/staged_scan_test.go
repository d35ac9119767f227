package paimon_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/catalogs/catalogtest"
	"github.com/flightgw/flightgw/catalogs/paimon"
)

// stagedRows writes rows [from, from+n) of catalogtest.Schema named
// <prefix>-<id> to t without committing them.
func stagedRows(t *testing.T, p *paimon.Provider, id catalogs.TableIdent, from, n int64, prefix string) catalogs.WriteReceipt {
	t.Helper()
	b := array.NewRecordBuilder(memory.DefaultAllocator, catalogtest.Schema)
	for i := from; i < from+n; i++ {
		b.Field(0).(*array.Int64Builder).Append(i)
		b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("%s-%d", prefix, i))
	}
	rec := b.NewRecordBatch()
	b.Release()
	defer rec.Release()
	r, err := p.WriteBatch(context.Background(), id, rec)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// readNames drains a scan of (id, name) into a map, failing on a key
// read twice (a merge that kept two versions of a row).
func readNames(t *testing.T, res *catalogs.ScanResult, err error) map[int64]string {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	defer res.Reader.Release()
	out := map[int64]string{}
	for res.Reader.Next() {
		rec := res.Reader.RecordBatch()
		ids, names := rec.Column(0).(*array.Int64), rec.Column(1).(*array.String)
		for i := range ids.Len() {
			if _, dup := out[ids.Value(i)]; dup {
				t.Errorf("key %d read twice", ids.Value(i))
			}
			out[ids.Value(i)] = names.Value(i)
		}
	}
	if err := res.Reader.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// want builds the expected map: ids [from, from+n) named <prefix>-<id>.
func want(m map[int64]string, from, n int64, prefix string) map[int64]string {
	for i := from; i < from+n; i++ {
		m[i] = fmt.Sprintf("%s-%d", prefix, i)
	}
	return m
}

// testScanStaged checks ScanStaged on a primary-key table of p: staged
// updates of committed keys are read merged (the staged value wins, once
// per key), new keys added, two staged writes of the same keys read as
// their commit does; an overwrite reads only the staged rows; nothing
// is committed by reading; a receipt of another table and a snapshot are
// refused.
func testScanStaged(t *testing.T, p *paimon.Provider) {
	ctx := context.Background()
	ns := []string{"default"}
	id := catalogs.TableIdent{Catalog: "lake", Namespace: ns, Name: "pk"}
	if _, err := p.CreateTable(ctx, id, catalogtest.Schema, map[string]string{"primary-key": "id", "bucket": "2"}); err != nil {
		t.Fatal(err)
	}
	c := stagedRows(t, p, id, 0, 10, "row")
	if _, err := p.CommitOnce(ctx, id, "c1", []catalogs.WriteReceipt{c}); err != nil {
		t.Fatal(err)
	}
	names := func(res *catalogs.ScanResult, err error) map[int64]string { return readNames(t, res, err) }
	cols := catalogs.ScanRequest{Columns: []string{"id", "name"}}
	committed := want(map[int64]string{}, 0, 10, "row")

	staged := []catalogs.WriteReceipt{stagedRows(t, p, id, 5, 10, "v2")}
	got := names(p.ScanStaged(ctx, id, cols, staged, false))
	exp := want(want(map[int64]string{}, 0, 5, "row"), 5, 10, "v2")
	if !maps.Equal(got, exp) {
		t.Errorf("merged view:\n got %v\nwant %v", got, exp)
	}
	// Two writes of one transaction to the same keys read as the commit
	// of both will.
	two := append(staged, stagedRows(t, p, id, 12, 4, "v3"))
	before := names(p.ScanStaged(ctx, id, cols, two, false))

	over := names(p.ScanStaged(ctx, id, cols, staged[:1], true))
	if exp := want(map[int64]string{}, 5, 10, "v2"); !maps.Equal(over, exp) {
		t.Errorf("overwrite view:\n got %v\nwant %v", over, exp)
	}
	if empty := names(p.ScanStaged(ctx, id, cols, nil, true)); len(empty) != 0 {
		t.Errorf("overwrite with nothing staged: %v", empty)
	}
	if got := names(p.Scan(ctx, id, cols)); !maps.Equal(got, committed) {
		t.Errorf("committed rows after staged reads:\n got %v\nwant %v", got, committed)
	}

	if _, err := p.CommitOnce(ctx, id, "c2", two); err != nil {
		t.Fatal(err)
	}
	if after := names(p.Scan(ctx, id, cols)); !maps.Equal(before, after) || len(after) != 16 {
		t.Errorf("staged view of two writes is not what their commit reads:\n staged %v\ncommitted %v", before, after)
	}

	other := catalogs.TableIdent{Catalog: "lake", Namespace: ns, Name: "other"}
	if _, err := p.CreateTable(ctx, other, catalogtest.Schema, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := p.ScanStaged(ctx, other, cols, staged, false); !errors.Is(err, catalogs.ErrInvalidArgument) || !strings.Contains(err.Error(), "belongs to table") {
		t.Errorf("a receipt of another table: %v", err)
	}
	snap := int64(1)
	if _, err := p.ScanStaged(ctx, id, catalogs.ScanRequest{SnapshotID: &snap}, staged, false); !errors.Is(err, catalogs.ErrInvalidArgument) {
		t.Errorf("a snapshot: %v", err)
	}
}

func TestScanStagedLocal(t *testing.T) {
	p, _ := openLocal(t, nil)
	testScanStaged(t, p)
}

func TestScanStagedS3(t *testing.T) {
	p, _ := newFakeS3(t).open(t, nil)
	testScanStaged(t, p)
}
