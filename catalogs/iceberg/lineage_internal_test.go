package iceberg

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	ice "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/flightgw/flightgw/catalogs"
)

// nsSchema is a table of nanosecond timestamps, with and without zone.
var nsSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Nanosecond}, Nullable: true},
	{Name: "tz", Type: &arrow.TimestampType{Unit: arrow.Nanosecond, TimeZone: "UTC"}, Nullable: true},
}, nil)

// nsValue is row i's timestamp, with digits below the microsecond.
func nsValue(i int) string { return fmt.Sprintf("2024-01-02T03:04:05.123456%03d", 100+i) }

func nsBatch(t *testing.T, ids ...int) arrow.RecordBatch {
	t.Helper()
	var rows []string
	for _, i := range ids {
		v := nsValue(i)
		rows = append(rows, fmt.Sprintf(`{"id": %d, "ts": "%s", "tz": "%sZ"}`, i, v, v))
	}
	rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, nsSchema, strings.NewReader("["+strings.Join(rows, ",")+"]"))
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

func commitNs(t *testing.T, p *Provider, id catalogs.TableIdent, ids ...int) catalogs.CommitOutcome {
	t.Helper()
	rec := nsBatch(t, ids...)
	defer rec.Release()
	r, err := p.WriteBatch(context.Background(), id, rec)
	if err != nil {
		t.Fatal(err)
	}
	out, err := p.Commit(context.Background(), id, []catalogs.WriteReceipt{r})
	if err != nil {
		t.Fatalf("commit %v: %v", ids, err)
	}
	return out
}

// rowRange is the row ids a snapshot or a data file claims.
type rowRange struct {
	what        string
	first, rows int64
}

// lineage lists each snapshot's range and the ranges of the data files it
// added, checking that every file has an explicit first_row_id.
func lineage(t *testing.T, p *Provider, id catalogs.TableIdent) (snaps []rowRange, files map[int64][]rowRange) {
	t.Helper()
	ctx := context.Background()
	tbl, err := p.load(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	fsys, err := tbl.FS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	files = map[int64][]rowRange{}
	for _, s := range tbl.Metadata().Snapshots() {
		if s.FirstRowID == nil || s.AddedRows == nil {
			t.Fatalf("snapshot %d has no first-row-id / added-rows", s.SnapshotID)
		}
		snaps = append(snaps, rowRange{fmt.Sprint(s.SnapshotID), *s.FirstRowID, *s.AddedRows})
		manifests, err := s.Manifests(fsys)
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range manifests {
			if mf.SnapshotID() != s.SnapshotID || mf.ManifestContent() != ice.ManifestContentData {
				continue
			}
			entries, err := mf.FetchEntries(fsys, true)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range entries {
				if e.Status() != ice.EntryStatusADDED {
					continue
				}
				df := e.DataFile()
				if df.FirstRowID() == nil {
					t.Fatalf("data file %s has no first_row_id", df.FilePath())
				}
				files[s.SnapshotID] = append(files[s.SnapshotID], rowRange{df.FilePath(), *df.FirstRowID(), df.Count()})
			}
		}
	}
	sort.Slice(snaps, func(i, j int) bool { return snaps[i].first < snaps[j].first })
	return snaps, files
}

// TestFormatV3NanosAndRowLineage: a table created with format-version 3
// keeps nanosecond timestamps exactly through ingest, a lost
// compare-and-swap and a replace; every snapshot's row-id range follows
// the one before it, and the files each snapshot added fill its range
// exactly, numbered from the table's next-row-id of the attempt that
// landed (not the one that lost the race).
func TestFormatV3NanosAndRowLineage(t *testing.T) {
	p, props := openLake(t)
	ctx := context.Background()
	id := catalogs.TableIdent{Catalog: EmbeddedCatalogName, Namespace: []string{"default"}, Name: "v3ns"}
	if _, err := p.CreateTable(ctx, id, nsSchema, map[string]string{OptFormatVersion: "3"}); err != nil {
		t.Fatalf("create v3: %v", err)
	}
	if v := loadMeta(t, p, id).Version(); v != 3 {
		t.Fatalf("format version %d, want 3", v)
	}
	other, err := Open(ctx, EmbeddedCatalogName, props)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()

	commitNs(t, p, id, 1, 2)
	// The second append loses its first compare-and-swap to another
	// gateway's append.
	cat := p.cat
	p.cat = &racingCatalog{Catalog: cat, before: func() { commitNs(t, other, id, 3) }}
	if out := commitNs(t, p, id, 4, 5, 6); out.Retried != 1 {
		t.Errorf("Retried = %d, want 1 (the racing append)", out.Retried)
	}
	p.cat = cat

	check := func(stage string, wantIDs ...int) {
		t.Helper()
		got := scanAll(t, p, id, catalogs.ScanRequest{})
		var want, wantTS, wantTZ []string
		for _, i := range wantIDs {
			want = append(want, fmt.Sprint(i))
			wantTS = append(wantTS, nsValue(i))
			wantTZ = append(wantTZ, nsValue(i)+"Z")
		}
		wantValues(t, got, "id", want)
		wantValues(t, got, "ts", wantTS)
		wantValues(t, got, "tz", wantTZ)
		checkLineage(t, p, id, stage)
	}
	check("appends", 1, 2, 3, 4, 5, 6)

	s, err := p.OpenReplaceStream(ctx, id, nsSchema)
	if err != nil {
		t.Fatal(err)
	}
	rec := nsBatch(t, 7, 8)
	err = s.Write(ctx, rec)
	rec.Release()
	if err != nil {
		t.Fatal(err)
	}
	receipts, err := s.Close(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Inside the transaction, before the commit: the staged replace
	// alone, its nanoseconds exact.
	staged, _ := readScan(t, catalogs.ScanRequest{}, func(ctx context.Context) (*catalogs.ScanResult, error) {
		return p.ScanStaged(ctx, id, catalogs.ScanRequest{}, receipts, true)
	})
	wantValues(t, staged, "ts", []string{nsValue(7), nsValue(8)})
	wantValues(t, staged, "tz", []string{nsValue(7) + "Z", nsValue(8) + "Z"})
	if _, err := p.CommitOverwrite(ctx, id, "v3-replace", receipts); err != nil {
		t.Fatalf("replace: %v", err)
	}
	check("replace", 7, 8)
	got := scanAll(t, p, id, catalogs.ScanRequest{Columns: []string{"ts", "tz"}})
	if len(got.fields) != 2 {
		t.Fatalf("fields %v", got.fields)
	}
	tbl, err := p.load(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"ts", "tz"} {
		f, _ := tbl.Schema().FindFieldByName(name)
		if want := map[string]ice.Type{"ts": ice.PrimitiveTypes.TimestampNs, "tz": ice.PrimitiveTypes.TimestampTzNs}[name]; !f.Type.Equals(want) {
			t.Errorf("column %s is %s, want %s", name, f.Type, want)
		}
	}
}

// checkLineage checks that every snapshot's row-id range follows the one
// before it, that the files each snapshot added fill its range exactly,
// and that the table's next-row-id is where the last range ends.
func checkLineage(t *testing.T, p *Provider, id catalogs.TableIdent, stage string) {
	t.Helper()
	snaps, files := lineage(t, p, id)
	next := int64(0)
	for _, s := range snaps {
		if s.first != next {
			t.Errorf("%s: snapshot %s starts at row id %d, want %d (the one before ends there)", stage, s.what, s.first, next)
		}
		var sid int64
		fmt.Sscan(s.what, &sid)
		fs := files[sid]
		sort.Slice(fs, func(i, j int) bool { return fs[i].first < fs[j].first })
		at := s.first
		for _, f := range fs {
			if f.first != at {
				t.Errorf("%s: file %s first_row_id %d, want %d", stage, f.what, f.first, at)
			}
			at = f.first + f.rows
		}
		if at != s.first+s.rows {
			t.Errorf("%s: snapshot %s claims rows [%d,%d), its files [%d,%d)", stage, s.what, s.first, s.first+s.rows, s.first, at)
		}
		next = s.first + s.rows
	}
	if nr := loadMeta(t, p, id).NextRowID(); nr != next {
		t.Errorf("%s: next-row-id %d, want %d", stage, nr, next)
	}
}

// TestFormatV3RowLineageMultiTable: a multi-table commit into two v3
// tables that loses its first attempt to another gateway's append
// numbers each table's files from that table's next-row-id of the
// attempt that landed.
func TestFormatV3RowLineageMultiTable(t *testing.T) {
	p, props := openLake(t)
	ctx := context.Background()
	other, err := Open(ctx, EmbeddedCatalogName, props)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	var ids []catalogs.TableIdent
	var commits []catalogs.TableCommit
	for i, name := range []string{"mta", "mtb"} {
		id := catalogs.TableIdent{Catalog: EmbeddedCatalogName, Namespace: []string{"default"}, Name: name}
		if _, err := p.CreateTable(ctx, id, nsSchema, map[string]string{OptFormatVersion: "3"}); err != nil {
			t.Fatal(err)
		}
		commitNs(t, p, id, 1, 2)
		rec := nsBatch(t, 10+i, 20+i, 30+i)
		r, err := p.WriteBatch(ctx, id, rec)
		rec.Release()
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
		commits = append(commits, catalogs.TableCommit{Table: id, Receipts: []catalogs.WriteReceipt{r}})
	}
	// Not racingTxn: the provider probes CommitTransaction with an empty
	// commit when it opens the multi-table path; the race must come
	// between the staging of the real commit and its compare-and-swap.
	var once sync.Once
	p.cat = racingCommit{fakeTxn{p.cat}, func() { once.Do(func() { commitNs(t, other, ids[0], 5) }) }}
	r, ok := p.capabilities().(restProvider)
	if !ok {
		t.Fatalf("a catalog with CommitTransaction gives %T", p.capabilities())
	}
	outs, err := r.CommitTables(ctx, "v3-multi", commits)
	if err != nil {
		t.Fatalf("CommitTables: %v", err)
	}
	if outs[0].Retried != 1 {
		t.Errorf("Retried = %d, want 1 (the racing append)", outs[0].Retried)
	}
	for _, id := range ids {
		checkLineage(t, p, id, id.Name)
	}
	if n := loadMeta(t, p, ids[0]).NextRowID(); n != 6 {
		t.Errorf("table %s: next-row-id %d, want 6 (2 + the racing 1 + 3)", ids[0], n)
	}
}

// racingCommit runs before ahead of every CommitTransaction that commits
// something.
type racingCommit struct {
	fakeTxn
	before func()
}

func (c racingCommit) CommitTransaction(ctx context.Context, commits []table.TableCommit) error {
	if len(commits) > 0 && len(commits[0].Identifier) > 0 {
		c.before()
	}
	return c.fakeTxn.CommitTransaction(ctx, commits)
}
