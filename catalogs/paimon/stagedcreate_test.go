package paimon_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/catalogs/catalogtest"
	"github.com/flightgw/flightgw/catalogs/paimon"
)

func lakeIdent(name string) catalogs.TableIdent {
	return catalogs.TableIdent{Catalog: "lake", Namespace: []string{"default"}, Name: name}
}

// stageCreate stages n rows from row from in a create stream of id with
// sc and opts.
func stageCreate(t *testing.T, p *paimon.Provider, id catalogs.TableIdent, sc *arrow.Schema, opts map[string]string, from, n int) []catalogs.WriteReceipt {
	t.Helper()
	return catalogtest.StageCreate(t, p, id, sc, opts, "", int64(from), int64(n))
}

// stagedDataFiles lists the data files under the table directory of id.
func stagedDataFiles(t *testing.T, wh string, id catalogs.TableIdent) []string {
	t.Helper()
	fs, err := listDir(filepath.Join(wh, "default.db", id.Name))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []string
	for _, f := range fs {
		if strings.HasPrefix(filepath.Base(f), "data-") {
			out = append(out, f)
		}
	}
	return out
}

// TestStagedCreate: what is Paimon's in a staged create (the backend
// contract, catalogtest StagedCreate, checks the rest: invisible until
// its commit, the race, discard, an empty create): the data files are
// under the table directory with no schema directory before the commit
// (what makes a directory a table for Paimon's FileSystemCatalog);
// CommitCreate writes schema-0 and snapshot-1, and repeated after a lost
// reply answers snapshot 1; a discarded partitioned create leaves no
// directory (pypaimon would list it); receipts of another schema are
// refused.
func TestStagedCreate(t *testing.T) {
	p, wh := openLocal(t, nil)
	ctx := context.Background()
	id := lakeIdent("staged")
	rs := stageCreate(t, p, id, catalogtest.Schema, nil, 0, 4)
	if len(stagedDataFiles(t, wh, id)) == 0 {
		t.Fatal("no data file staged under the table directory")
	}
	if _, err := os.Stat(filepath.Join(wh, "default.db", "staged", "schema")); !os.IsNotExist(err) {
		t.Fatalf("schema directory before the commit: %v", err)
	}
	out, err := p.CommitCreate(ctx, id, catalogtest.Schema, nil, "c-1", rs)
	if err != nil || out.SnapshotID != 1 {
		t.Fatalf("CommitCreate: %+v %v", out, err)
	}
	if spec, err := p.GetTableSpec(ctx, id); err != nil || spec.SchemaSpec.SchemaVersion != 0 {
		t.Fatalf("spec after the create: %+v %v, want schema 0", spec.SchemaSpec, err)
	}
	if again, err := p.CommitCreate(ctx, id, catalogtest.Schema, nil, "c-1", rs); err != nil || again.SnapshotID != 1 {
		t.Fatalf("repeated CommitCreate: %+v %v, want snapshot 1", again, err)
	}
	// A discarded create leaves no directory (pypaimon would list it).
	gone := lakeIdent("discarded")
	if err := p.Discard(ctx, gone, stageCreate(t, p, gone, catalogtest.Schema, map[string]string{"partition": catalogtest.Schema.Field(1).Name}, 0, 3)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(wh, "default.db", gone.Name)); !os.IsNotExist(err) {
		t.Fatalf("directory of the discarded create: %v, want none", err)
	}
	// Receipts of another schema are refused.
	narrow := arrow.NewSchema(catalogtest.Schema.Fields()[:1], nil)
	if _, err := p.CommitCreate(ctx, lakeIdent("narrow"), narrow, nil, "c-4", rs); !errors.Is(err, catalogs.ErrInvalidArgument) {
		t.Fatalf("receipts of another schema: %v, want InvalidArgument", err)
	}
}

// TestStagedCreateAppendRace: 8 create_appends of one name at once (the
// losers append through CommitOnce, as txn does): one creates the table
// and every row lands. A create_append of another layout that loses is
// AlreadyExists and appends nothing.
func TestStagedCreateAppendRace(t *testing.T) {
	p, _ := openLocal(t, nil)
	ctx := context.Background()
	id := lakeIdent("appended")
	const n = 8
	rs := make([][]catalogs.WriteReceipt, n)
	for i := range n {
		rs[i] = stageCreate(t, p, id, catalogtest.Schema, nil, 100*i, i+1)
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cid := fmt.Sprintf("c-%d", i)
			_, err := p.CommitCreate(ctx, id, catalogtest.Schema, nil, cid, rs[i])
			if errors.Is(err, catalogs.ErrAlreadyExists) {
				_, err = p.CommitOnce(ctx, id, cid, rs[i])
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	want := 0
	for i, err := range errs {
		if err != nil {
			t.Errorf("create_append %d: %v", i, err)
		}
		want += i + 1
	}
	if rows, err := scanAll(ctx, p, id); err != nil || len(rows) != want {
		t.Fatalf("rows %d (%v), want %d", len(rows), err, want)
	}
	// Another layout: a bucketed create that lost to the plain one.
	opts := map[string]string{"bucket": "2", "bucket-key": catalogtest.Schema.Field(0).Name}
	odd := stageCreate(t, p, id, catalogtest.Schema, opts, 1000, 3)
	_, err := p.CommitCreate(ctx, id, catalogtest.Schema, opts, "c-odd", odd)
	if !errors.Is(err, catalogs.ErrAlreadyExists) {
		t.Fatalf("create of another layout: %v, want AlreadyExists", err)
	}
	if _, err := p.CommitOnce(ctx, id, "c-odd", odd); !errors.Is(err, catalogs.ErrAlreadyExists) {
		t.Fatalf("append of a create of another layout: %v, want AlreadyExists", err)
	}
	if rows, err := scanAll(ctx, p, id); err != nil || len(rows) != want {
		t.Fatalf("rows %d (%v) after the refused append, want %d", len(rows), err, want)
	}
}

// TestStagedCreateFirstCommitFails: when the first snapshot cannot be
// written after schema-0 was (here its manifest directory cannot be
// made), CommitCreate fails and the table is gone again, so that the
// retry of the create lands.
func TestStagedCreateFirstCommitFails(t *testing.T) {
	p, wh := openLocal(t, nil)
	ctx := context.Background()
	id := lakeIdent("failing")
	blocker := filepath.Join(wh, "default.db", id.Name, "manifest")
	paimon.SetBeforeAttempt(p, func() {
		if err := os.WriteFile(blocker, []byte("x"), 0o644); err != nil {
			t.Error(err)
		}
	})
	rs := stageCreate(t, p, id, catalogtest.Schema, nil, 0, 3)
	if _, err := p.CommitCreate(ctx, id, catalogtest.Schema, nil, "c-1", rs); err == nil {
		t.Fatal("CommitCreate landed with its manifest directory blocked")
	}
	if _, err := p.GetTableSpec(ctx, id); !errors.Is(err, catalogs.ErrNotFound) {
		t.Fatalf("table after the failed create: %v, want not found", err)
	}
	paimon.SetBeforeAttempt(p, nil)
	if err := os.Remove(blocker); err != nil {
		t.Fatal(err)
	}
	if err := p.Discard(ctx, id, rs); err != nil {
		t.Fatal(err)
	}
	rs = stageCreate(t, p, id, catalogtest.Schema, nil, 0, 3)
	if out, err := p.CommitCreate(ctx, id, catalogtest.Schema, nil, "c-2", rs); err != nil || out.SnapshotID != 1 {
		t.Fatalf("retried create: %+v %v", out, err)
	}
	if rows, err := scanAll(ctx, p, id); err != nil || len(rows) != 3 {
		t.Fatalf("rows %d (%v), want 3", len(rows), err)
	}
}

// TestStagedCreatePypaimon: before its commit a staged create's table is
// not one pypaimon loads (its directory holds data files, no schema); made
// (two streams, partitioned), pypaimon reads it as the gateway reads it.
func TestStagedCreatePypaimon(t *testing.T) {
	p, wh := openLocal(t, nil)
	ctx := context.Background()
	id := lakeIdent("staged_py")
	opts := map[string]string{"partition": "p"}
	var rs []catalogs.WriteReceipt
	for _, rows := range [][]sampleRow{rowsFrom(0, 5, 0), rowsFrom(5, 4, 1)} {
		ws, err := p.OpenCreateStream(ctx, id, sampleSchema, opts, catalogs.WriteTxn{})
		if err != nil {
			t.Fatal(err)
		}
		b := sampleBatch(rows)
		err = ws.Write(ctx, b)
		b.Release()
		if err != nil {
			t.Fatal(err)
		}
		got, err := ws.Close(ctx)
		if err != nil {
			t.Fatal(err)
		}
		rs = append(rs, got...)
	}
	pypaimonSeesNoTable(t, wh, id.Name)
	if _, err := p.CommitCreate(ctx, id, sampleSchema, opts, "c-py", rs); err != nil {
		t.Fatal(err)
	}
	want := scanRendered(t, p, id)
	if len(want) != 9 {
		t.Fatalf("the gateway reads %d rows, want 9", len(want))
	}
	pypaimonReads(t, wh, id.Name, want)
}

// pypaimonSeesNoTable checks that pypaimon's filesystem catalog on the
// warehouse wh does not load default.<table> (its list_tables, 2.1,
// names every directory of the database, table or not), skipped as
// pypaimonReads is without a python that has pypaimon.
func pypaimonSeesNoTable(t *testing.T, wh, table string) {
	t.Helper()
	py := os.Getenv("FLIGHTGW_PYPAIMON")
	if py == "" {
		py = filepath.Join("..", "..", ".venv-paimon", "bin", "python")
	}
	if err := exec.Command(py, "-c", "import pypaimon").Run(); err != nil {
		t.Logf("pypaimon not checked: no python with pypaimon at %s: %v", py, err)
		return
	}
	script := `
import sys
from pypaimon import CatalogFactory
c = CatalogFactory.create({"warehouse": sys.argv[1]})
try:
    c.get_table("default." + sys.argv[2])
except Exception as e:
    assert type(e).__name__ == "TableNotExistException", repr(e)
else:
    raise AssertionError("pypaimon loads the table")
print("NO TABLE")
`
	out, err := exec.Command(py, "-c", script, wh, table).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "NO TABLE") {
		t.Fatalf("pypaimon on the staged create of %s: %v\n%s", table, err, out)
	}
}

// TestStagedCreateS3: on S3 a staged create's data files are objects under
// the table's prefix and no schema object exists before the commit; of 4
// creates at once one lands (put-if-absent of schema-0 by If-None-Match),
// the others are AlreadyExists, and once they discard, the table's data
// objects are the winner's only.
func TestStagedCreateS3(t *testing.T) {
	s3 := newFakeS3(t)
	p, prefix := s3.open(t, nil)
	ctx := context.Background()
	id := lakeIdent("s3staged")
	const n = 4
	rs := make([][]catalogs.WriteReceipt, n)
	for i := range n {
		rs[i] = stageCreate(t, p, id, catalogtest.Schema, nil, 100*i, i+1)
	}
	objects := func(kind string) []string {
		t.Helper()
		all, err := s3.list(prefix + "default.db/" + id.Name + "/")
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, o := range all {
			if strings.HasPrefix(path.Base(o), kind) {
				out = append(out, o)
			}
		}
		return out
	}
	if got := objects("data-"); len(got) < n {
		t.Fatalf("data objects before the commit: %v, want %d streams' files", got, n)
	}
	if got := objects("schema-"); len(got) != 0 {
		t.Fatalf("schema objects before the commit: %v", got)
	}
	if _, err := p.GetTableSpec(ctx, id); !errors.Is(err, catalogs.ErrNotFound) {
		t.Fatalf("table before its commit: %v, want not found", err)
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			_, errs[i] = p.CommitCreate(ctx, id, catalogtest.Schema, nil, fmt.Sprintf("c-%d", i), rs[i])
		})
	}
	wg.Wait()
	won := -1
	for i, err := range errs {
		switch {
		case err == nil && won >= 0:
			t.Fatalf("creates %d and %d both landed", won, i)
		case err == nil:
			won = i
		case !errors.Is(err, catalogs.ErrAlreadyExists):
			t.Errorf("create %d: %v, want AlreadyExists", i, err)
		default:
			if err := p.Discard(ctx, id, rs[i]); err != nil {
				t.Fatal(err)
			}
		}
	}
	if won < 0 {
		t.Fatal("no create landed")
	}
	if rows, err := scanAll(ctx, p, id); err != nil || len(rows) != won+1 {
		t.Fatalf("rows %d (%v), want the winner's %d", len(rows), err, won+1)
	}
	var want int
	for _, m := range receiptFiles(t, rs[won]) {
		want += len(m.Data.NewFiles)
	}
	if got := objects("data-"); len(got) != want {
		t.Fatalf("data objects %v, want the winner's %d only", got, want)
	}
}

// TestStagedCreateNotOnJDBC: a JDBC catalog's create is made up front
// (its table is also a metastore row), so it is not staged, and a create
// stream is refused.
func TestStagedCreateNotOnJDBC(t *testing.T) {
	p, _, _ := openSQLite(t, nil)
	if p.StagesCreate(nil) {
		t.Fatal("a JDBC catalog stages creates")
	}
	_, err := p.OpenCreateStream(context.Background(), lakeIdent("jdbc"), catalogtest.Schema, nil, catalogs.WriteTxn{})
	if !errors.Is(err, catalogs.ErrInvalidArgument) {
		t.Fatalf("create stream on a JDBC catalog: %v, want InvalidArgument", err)
	}
}

// TestStagedCreateAppenderFirst: a writer that sees schema-0 the moment
// it lands and commits snapshot-1 before the create does costs the create
// nothing: the create retries and lands as snapshot-2, with every row.
func TestStagedCreateAppenderFirst(t *testing.T) {
	p, wh := openLocal(t, nil)
	other := openReplica(t, wh)
	ctx := context.Background()
	id := lakeIdent("contended")
	var once sync.Once
	paimon.SetBeforeAttempt(p, func() {
		once.Do(func() {
			b := catalogtest.Batch(1000, 2)
			defer b.Release()
			r, err := other.WriteBatch(ctx, id, b)
			if err == nil {
				_, err = other.CommitOnce(ctx, id, "appender", []catalogs.WriteReceipt{r})
			}
			if err != nil {
				t.Errorf("the appender: %v", err)
			}
		})
	})
	rs := stageCreate(t, p, id, catalogtest.Schema, nil, 0, 3)
	out, err := p.CommitCreate(ctx, id, catalogtest.Schema, nil, "c-1", rs)
	if err != nil || out.SnapshotID != 2 || out.Retried != 1 {
		t.Fatalf("CommitCreate: %+v %v, want snapshot 2 after one lost race", out, err)
	}
	if rows, err := scanAll(ctx, p, id); err != nil || len(rows) != 5 {
		t.Fatalf("rows %d (%v), want the appender's 2 and the create's 3", len(rows), err)
	}
}

// TestStagedCreateScan: a transaction reads the table it creates as the
// commit will make it: the schema GetTableSpec gives afterwards, and a
// primary-key table's two streams merged by key (the second write of a
// key wins); receipts of another create are refused.
func TestStagedCreateScan(t *testing.T) {
	p, _ := openLocal(t, nil)
	ctx := context.Background()
	id := lakeIdent("scanned")
	opts := map[string]string{"primary-key": "id", "bucket": "2"}
	rs := append(stageCreate(t, p, id, catalogtest.Schema, opts, 0, 4), stageCreate(t, p, id, catalogtest.Schema, opts, 2, 4)...)
	sc, err := p.CreateSchema(ctx, id, catalogtest.Schema, opts)
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.ScanCreate(ctx, id, catalogtest.Schema, opts, catalogs.ScanRequest{}, rs)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for res.Reader.Next() {
		n += res.Reader.RecordBatch().NumRows()
	}
	res.Reader.Release()
	if n != 6 {
		t.Fatalf("the created table reads %d rows in the transaction, want 6 keys", n)
	}
	if _, err := p.ScanCreate(ctx, id, catalogtest.Schema, nil, catalogs.ScanRequest{}, rs); !errors.Is(err, catalogs.ErrInvalidArgument) {
		t.Fatalf("receipts of another create: %v, want InvalidArgument", err)
	}
	if _, err := p.CommitCreate(ctx, id, catalogtest.Schema, opts, "c-1", rs); err != nil {
		t.Fatal(err)
	}
	if spec, err := p.GetTableSpec(ctx, id); err != nil || !spec.Schema.Equal(sc) {
		t.Fatalf("schema after the commit %v (%v), want the one read before: %v", spec.Schema, err, sc)
	}
	if rows, err := scanAll(ctx, p, id); err != nil || len(rows) != 6 {
		t.Fatalf("rows after the commit %d (%v), want 6", len(rows), err)
	}
}

// TestStagedCreateDuringDrop: a drop of a failed create of the name
// (dropCreated, DropUnwritten) holds snapshot-1 with its mark from before
// it removes schema-0 until after. A reader of the table meanwhile gets
// NotFound (the table is going), not a corrupt snapshot; a new create
// that wins schema-0 once the old one is gone waits for the mark to go
// and lands its snapshot-1 (before, its commit failed on the mark:
// "snapshot-1 is not Paimon snapshot JSON", and left an empty table).
func TestStagedCreateDuringDrop(t *testing.T) {
	p, wh := openLocal(t, nil)
	ctx := context.Background()
	mark := func(name string) string {
		return filepath.Join(wh, "default.db", name, "snapshot", "snapshot-1")
	}
	put := func(name string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(mark(name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(mark(name), paimon.UnwrittenMark, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// A reader while the drop holds schema-0 and the mark.
	going := lakeIdent("going")
	if _, err := p.CommitCreate(ctx, going, catalogtest.Schema, nil, "c-going", nil); err != nil {
		t.Fatal(err)
	}
	put("going")
	if _, err := p.GetTableSpec(ctx, going); !errors.Is(err, catalogs.ErrNotFound) {
		t.Errorf("GetTableSpec of a table being dropped: %v, want NotFound", err)
	}
	if _, err := p.Scan(ctx, going, catalogs.ScanRequest{}); !errors.Is(err, catalogs.ErrNotFound) {
		t.Errorf("Scan of a table being dropped: %v, want NotFound", err)
	}

	// A create once schema-0 is gone, the mark not yet.
	again := lakeIdent("again")
	rs := stageCreate(t, p, again, catalogtest.Schema, nil, 0, 3)
	put("again")
	removed := make(chan error, 1)
	go func() {
		time.Sleep(200 * time.Millisecond)
		removed <- os.Remove(mark("again"))
	}()
	if _, err := p.CommitCreate(ctx, again, catalogtest.Schema, nil, "c-again", rs); err != nil {
		t.Fatalf("CommitCreate while a drop of the name finishes: %v", err)
	}
	if err := <-removed; err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	if rows, err := scanAll(ctx, p, again); err != nil || len(rows) != 3 {
		t.Fatalf("rows of the create: %d, %v; want 3", len(rows), err)
	}
}
