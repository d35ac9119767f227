package iceberg_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	ice "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/catalogs/catalogtest"
	"github.com/flightgw/flightgw/catalogs/iceberg"
)

// createPartitioned creates default.events, partitioned by
// identity(cat), day(ts) and bucket[4](id), straight through iceberg-go,
// as another engine sharing the catalog would.
func createPartitioned(t *testing.T, wh string) {
	t.Helper()
	db, err := sql.Open("sqliteshim", "file:"+filepath.Join(filepath.Dir(wh), "catalog.db")+"?_pragma=busy_timeout(60000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	cat, err := sqlcat.NewCatalog("lake", db, sqlcat.SQLite, ice.Properties{"warehouse": "file://" + wh})
	if err != nil {
		t.Fatal(err)
	}
	sc := ice.NewSchema(0,
		ice.NestedField{ID: 1, Name: "id", Type: ice.PrimitiveTypes.Int64, Required: true},
		ice.NestedField{ID: 2, Name: "ts", Type: ice.PrimitiveTypes.TimestampTz, Required: false},
		ice.NestedField{ID: 3, Name: "cat", Type: ice.PrimitiveTypes.String, Required: false},
	)
	spec := ice.NewPartitionSpec(
		ice.PartitionField{SourceIDs: []int{3}, FieldID: 1000, Name: "cat", Transform: ice.IdentityTransform{}},
		ice.PartitionField{SourceIDs: []int{2}, FieldID: 1001, Name: "ts_day", Transform: ice.DayTransform{}},
		ice.PartitionField{SourceIDs: []int{1}, FieldID: 1002, Name: "id_bucket", Transform: ice.BucketTransform{NumBuckets: 4}},
	)
	if _, err := cat.CreateTable(context.Background(), []string{"default", "events"}, sc, catalog.WithPartitionSpec(&spec)); err != nil {
		t.Fatalf("create partitioned table: %v", err)
	}
}

func eventBatch(t *testing.T, cat string, day int, from, n int64) arrow.RecordBatch {
	t.Helper()
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
		{Name: "cat", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	base := time.Date(2024, 3, day, 12, 0, 0, 0, time.UTC)
	for i := from; i < from+n; i++ {
		b.Field(0).(*array.Int64Builder).Append(i)
		b.Field(1).(*array.TimestampBuilder).Append(arrow.Timestamp(base.Add(time.Duration(i) * time.Second).UnixMicro()))
		b.Field(2).(*array.StringBuilder).Append(cat)
	}
	return b.NewRecordBatch()
}

func TestPartitionedWriteAndPrunedScan(t *testing.T) {
	p, wh := openLocal(t, nil)
	createPartitioned(t, wh)
	ctx := context.Background()
	id := catalogs.TableIdent{Catalog: "lake", Namespace: []string{"default"}, Name: "events"}
	spec, err := p.GetTableSpec(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range spec.PartitionSpec.Fields {
		got = append(got, f.Name+":"+f.Transform.String())
	}
	if strings.Join(got, ",") != "cat:identity,ts_day:day,id_bucket:bucket[4]" {
		t.Errorf("partition spec = %v", got)
	}
	var receipts []catalogs.WriteReceipt
	for _, c := range []struct {
		cat string
		day int
	}{{"a", 1}, {"b", 1}, {"a", 2}} {
		b := eventBatch(t, c.cat, c.day, int64(c.day)*1000, 40)
		r, err := p.WriteBatch(ctx, id, b)
		b.Release()
		if err != nil {
			t.Fatalf("WriteBatch: %v", err)
		}
		var meta struct {
			Files []struct{ Path string } `json:"files"`
		}
		if err := json.Unmarshal(r.Metadata, &meta); err != nil {
			t.Fatal(err)
		}
		if len(meta.Files) != 4 {
			t.Errorf("40 rows in one day and category wrote %d files, want one per id bucket (4)", len(meta.Files))
		}
		for _, f := range meta.Files {
			if !strings.Contains(f.Path, "/cat="+c.cat+"/") || !strings.Contains(f.Path, "ts_day=2024-03-0") {
				t.Errorf("data file %s is not under its partition", f.Path)
			}
		}
		receipts = append(receipts, r)
	}
	if _, err := p.Commit(ctx, id, receipts); err != nil {
		t.Fatalf("Commit: %v", err)
	}
	res, err := p.Scan(ctx, id, catalogs.ScanRequest{Filters: []catalogs.Filter{
		{Column: "cat", Op: catalogs.OpEq, Values: []any{"a"}},
		{Column: "ts", Op: catalogs.OpGtEq, Values: []any{time.Date(2024, 3, 2, 0, 0, 0, 0, time.UTC)}},
	}})
	if err != nil {
		t.Fatalf("Scan: %v", err)
	}
	defer res.Reader.Release()
	var n int64
	for res.Reader.Next() {
		n += res.Reader.RecordBatch().NumRows()
	}
	if err := res.Reader.Err(); err != nil {
		t.Fatal(err)
	}
	if n != 40 {
		t.Errorf("scan of cat=a, day 2 returned %d rows, want 40", n)
	}
	if res.FilesTotal != 12 || res.FilesPlanned != 4 {
		t.Errorf("files planned %d of %d, want 4 of 12", res.FilesPlanned, res.FilesTotal)
	}
	_, err = p.Scan(ctx, id, catalogs.ScanRequest{Filters: []catalogs.Filter{{Column: "nope", Op: catalogs.OpEq, Values: []any{"a"}}}})
	if !errors.Is(err, catalogs.ErrInvalidArgument) || !strings.Contains(err.Error(), "nope") {
		t.Errorf("scan with a filter on a missing column = %v", err)
	}
}

func TestStreamRollsFiles(t *testing.T) {
	p, _ := openLocal(t, map[string]string{iceberg.PropTargetFileSize: "32768"})
	ctx := context.Background()
	id := catalogs.TableIdent{Catalog: "lake", Namespace: []string{"default"}, Name: "rolled"}
	if _, err := p.CreateTable(ctx, id, catalogtest.Schema, nil); err != nil {
		t.Fatal(err)
	}
	s, err := p.OpenStream(ctx, id, catalogs.WriteTxn{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 80 {
		b := catalogtest.Batch(int64(i)*500, 500)
		err := s.Write(ctx, b)
		b.Release()
		if err != nil {
			t.Fatal(err)
		}
	}
	rs, err := s.Close(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// About 150 KiB of Parquet: files roll once they pass the target.
	if len(rs) < 3 {
		t.Errorf("40000 rows with a 32 KiB target wrote %d file(s), want several", len(rs))
	}
	for i, r := range rs[:len(rs)-1] {
		if r.ByteCount < 32768/2 || r.ByteCount > 4*32768 {
			t.Errorf("file %d of %d has %d bytes, want about the 32 KiB target", i, len(rs), r.ByteCount)
		}
	}
	if err := s.Abort(ctx); err != nil {
		t.Errorf("Abort after Close: %v", err)
	}
	// Receipts travel as JSON between processes.
	raw, err := json.Marshal(rs)
	if err != nil {
		t.Fatal(err)
	}
	var back []catalogs.WriteReceipt
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	out, err := p.CommitOnce(ctx, id, "stream-1", back)
	if err != nil {
		t.Fatalf("CommitOnce: %v", err)
	}
	rec, ok, err := p.FindCommit(ctx, id, "stream-1")
	if err != nil || !ok || rec.RowCount != 40000 || rec.Outcome.SnapshotID != out.SnapshotID {
		t.Errorf("FindCommit = %+v, %v, %v", rec, ok, err)
	}
}

func TestCancelledWriteLeavesNothing(t *testing.T) {
	p, wh := openLocal(t, nil)
	id := catalogs.TableIdent{Catalog: "lake", Namespace: []string{"default"}, Name: "cancel"}
	if _, err := p.CreateTable(context.Background(), id, catalogtest.Schema, nil); err != nil {
		t.Fatal(err)
	}
	before, _ := listDir(wh)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	b := catalogtest.Batch(0, 100)
	defer b.Release()
	if _, err := p.WriteBatch(ctx, id, b); err == nil {
		t.Fatal("WriteBatch with a cancelled context succeeded")
	}
	after, _ := listDir(wh)
	if len(after) != len(before) {
		t.Errorf("cancelled write left files: before %v, after %v", before, after)
	}
}

func TestSecurityContext(t *testing.T) {
	p, _ := openLocal(t, map[string]string{iceberg.PropS3SessionToken: "tok", "s3.session-token-expires-at-ms": "4102444800000"})
	ctx := context.Background()
	id := catalogs.TableIdent{Catalog: "lake", Namespace: []string{"default"}, Name: "sec"}
	if _, err := p.CreateTable(ctx, id, catalogtest.Schema, nil); err != nil {
		t.Fatal(err)
	}
	sec, err := p.GetSecurityContext(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if sec.Encryption.Kind != catalogs.EncryptionNone || sec.Credentials.Token.Reveal() != "tok" ||
		sec.Credentials.ExpiresAt.Year() != 2100 || sec.Credentials.Scope.Kind != catalogs.ScopeTableReadWrite {
		t.Errorf("security context = %+v", sec)
	}
	expired, _ := openLocal(t, map[string]string{iceberg.PropS3SessionToken: "tok", "s3.session-token-expires-at-ms": "1000"})
	if _, err := expired.CreateTable(ctx, id, catalogtest.Schema, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := expired.GetSecurityContext(ctx, id); !errors.Is(err, catalogs.ErrUnauthenticated) {
		t.Errorf("expired credential: %v, want ErrUnauthenticated", err)
	}
}

func TestDiscardStaysInsideTheTable(t *testing.T) {
	p, wh := openLocal(t, nil)
	ctx := context.Background()
	id := catalogs.TableIdent{Catalog: "lake", Namespace: []string{"default"}, Name: "guarded"}
	if _, err := p.CreateTable(ctx, id, catalogtest.Schema, nil); err != nil {
		t.Fatal(err)
	}
	victim := filepath.Join(filepath.Dir(wh), "catalog.db")
	forged := `{"format":"flightgw.iceberg.data-files/v1","table":"lake.default.guarded","files":[{"path":"file://` + victim + `"}]}`
	err := p.Discard(ctx, id, []catalogs.WriteReceipt{{Metadata: []byte(forged)}})
	if !errors.Is(err, catalogs.ErrInvalidArgument) {
		t.Errorf("Discard of a file outside the table = %v, want ErrInvalidArgument", err)
	}
	if _, err := listDir(filepath.Dir(victim)); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(victim); err != nil || fi.Size() == 0 {
		t.Errorf("catalog.db after forged Discard: %v", err)
	}
	wrong := `{"format":"flightgw.iceberg.data-files/v1","table":"lake.default.other","files":[]}`
	if err := p.Discard(ctx, id, []catalogs.WriteReceipt{{Metadata: []byte(wrong)}}); !errors.Is(err, catalogs.ErrInvalidArgument) {
		t.Errorf("Discard of another table's receipt = %v", err)
	}
}

func TestCommitSameReceiptTwice(t *testing.T) {
	p, _ := openLocal(t, nil)
	ctx := context.Background()
	id := catalogs.TableIdent{Catalog: "lake", Namespace: []string{"default"}, Name: "twice"}
	if _, err := p.CreateTable(ctx, id, catalogtest.Schema, nil); err != nil {
		t.Fatal(err)
	}
	b := catalogtest.Batch(0, 10)
	defer b.Release()
	r, err := p.WriteBatch(ctx, id, b)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Commit(ctx, id, []catalogs.WriteReceipt{r}); err != nil {
		t.Fatal(err)
	}
	// A plain Commit retried after a lost reply must not append twice.
	_, err = p.Commit(ctx, id, []catalogs.WriteReceipt{r})
	if !errors.Is(err, catalogs.ErrFailedPrecondition) || !strings.Contains(err.Error(), "twice") {
		t.Errorf("second Commit of the same receipt = %v, want ErrFailedPrecondition naming the table", err)
	}
	res, err := p.Scan(ctx, id, catalogs.ScanRequest{})
	if err != nil {
		t.Fatal(err)
	}
	defer res.Reader.Release()
	var n int64
	for res.Reader.Next() {
		n += res.Reader.RecordBatch().NumRows()
	}
	if n != 10 {
		t.Errorf("rows = %d, want 10", n)
	}
}
