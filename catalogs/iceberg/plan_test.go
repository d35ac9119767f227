package iceberg

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	ice "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/flightgw/flightgw/catalogs"
)

// planTable opens an embedded catalog and commits two batches of ids
// (0..9 and 10..19) to default.t, one file each.
func planTable(t *testing.T) (*Provider, catalogs.TableIdent, string) {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	props, err := EmbeddedProperties(dir)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Open(ctx, EmbeddedCatalogName, props)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	sc := ice.NewSchema(0, ice.NestedField{ID: 1, Name: "id", Type: ice.PrimitiveTypes.Int64, Required: true})
	if _, err := p.cat.CreateTable(ctx, []string{"default", "t"}, sc); err != nil {
		t.Fatal(err)
	}
	id := catalogs.TableIdent{Catalog: EmbeddedCatalogName, Namespace: []string{"default"}, Name: "t"}
	var receipts []catalogs.WriteReceipt
	for _, from := range []int64{0, 10} {
		b := idBatch(from, 10)
		r, err := p.WriteBatch(ctx, id, b)
		b.Release()
		if err != nil {
			t.Fatal(err)
		}
		receipts = append(receipts, r)
	}
	if _, err := p.Commit(ctx, id, receipts); err != nil {
		t.Fatal(err)
	}
	return p, id, filepath.Join(dir, "warehouse")
}

func idBatch(from, n int64) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil))
	defer b.Release()
	for i := from; i < from+n; i++ {
		b.Field(0).(*array.Int64Builder).Append(i)
	}
	return b.NewRecordBatch()
}

func TestPlanFilesPlain(t *testing.T) {
	p, id, wh := planTable(t)
	ctx := context.Background()
	plan, err := p.PlanFiles(ctx, id, catalogs.ScanRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if !plan.Plain || len(plan.Files) != 2 || plan.FilesTotal != 2 || plan.Root != wh {
		t.Fatalf("plan %+v, want plain, 2 of 2 files under %s", plan, wh)
	}
	for _, f := range plan.Files {
		if !strings.HasPrefix(f, wh+"/") || !strings.HasSuffix(f, ".parquet") {
			t.Errorf("file %s is not a local Parquet path under the warehouse", f)
		}
	}
	// The column statistics prune like Scan's.
	plan, err = p.PlanFiles(ctx, id, catalogs.ScanRequest{Filters: []catalogs.Filter{{Column: "id", Op: catalogs.OpGtEq, Values: []any{int64(15)}}}})
	if err != nil {
		t.Fatal(err)
	}
	if !plan.Plain || len(plan.Files) != 1 || plan.FilesTotal != 2 {
		t.Fatalf("pruned plan %+v, want plain, 1 of 2 files", plan)
	}
}

func TestPlanFilesNotPlain(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name   string
		change func(t *testing.T, tx *table.Transaction)
		reason string
	}{
		{"equality deletes", func(t *testing.T, tx *table.Transaction) {
			b := idBatch(3, 1)
			defer b.Release()
			recs := func(yield func(arrow.RecordBatch, error) bool) { yield(b, nil) }
			if err := tx.CommitEqualityDeletes(ctx, []int{1}, recs, nil); err != nil {
				t.Fatal(err)
			}
		}, "delete files"},
		{"evolved schema", func(t *testing.T, tx *table.Transaction) {
			if err := tx.UpdateSchema(true, false).AddColumn([]string{"extra"}, ice.PrimitiveTypes.String, "", false, nil).Commit(); err != nil {
				t.Fatal(err)
			}
		}, "evolved"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, id, _ := planTable(t)
			tbl, err := p.cat.LoadTable(ctx, []string{"default", "t"})
			if err != nil {
				t.Fatal(err)
			}
			tx := tbl.NewTransaction()
			c.change(t, tx)
			if _, err := tx.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			plan, err := p.PlanFiles(ctx, id, catalogs.ScanRequest{})
			if err != nil {
				t.Fatal(err)
			}
			if plan.Plain || !strings.Contains(plan.Reason, c.reason) {
				t.Fatalf("plan %+v, want not plain because of %s", plan, c.reason)
			}
		})
	}
}

func TestPlainTask(t *testing.T) {
	root := "/data/wh"
	file := func(path string, format ice.FileFormat) ice.DataFile {
		content := ice.EntryContentData
		if format == ice.PuffinFile {
			content = ice.EntryContentPosDeletes
		}
		b, err := ice.NewDataFileBuilder(*ice.UnpartitionedSpec, content, path, format, nil, nil, nil, 1, 100)
		if err != nil {
			t.Fatal(err)
		}
		return b.Build()
	}
	cases := []struct {
		name   string
		task   table.FileScanTask
		path   string
		reason string
	}{
		{"file url", table.FileScanTask{File: file("file:///data/wh/t/data/a.parquet", ice.ParquetFile)}, "/data/wh/t/data/a.parquet", ""},
		{"plain path", table.FileScanTask{File: file("/data/wh/t/data/a.parquet", ice.ParquetFile)}, "/data/wh/t/data/a.parquet", ""},
		{"positional deletes", table.FileScanTask{File: file("/data/wh/a.parquet", ice.ParquetFile),
			DeleteFiles: []ice.DataFile{file("/data/wh/d.parquet", ice.ParquetFile)}}, "", "delete files"},
		{"deletion vector", table.FileScanTask{File: file("/data/wh/a.parquet", ice.ParquetFile),
			DeletionVectorFiles: []ice.DataFile{file("/data/wh/d.puffin", ice.PuffinFile)}}, "", "delete files"},
		{"orc", table.FileScanTask{File: file("/data/wh/a.orc", ice.OrcFile)}, "", "not Parquet"},
		{"s3", table.FileScanTask{File: file("s3://b/wh/a.parquet", ice.ParquetFile)}, "", "local"},
		{"remote host", table.FileScanTask{File: file("file://host/data/wh/a.parquet", ice.ParquetFile)}, "", "local"},
		{"outside", table.FileScanTask{File: file("/data/other/a.parquet", ice.ParquetFile)}, "", "outside"},
		{"prefix sibling", table.FileScanTask{File: file("/data/wh2/a.parquet", ice.ParquetFile)}, "", "outside"},
		{"dot dot", table.FileScanTask{File: file("/data/wh/../other/a.parquet", ice.ParquetFile)}, "", "local"},
		{"glob", table.FileScanTask{File: file("/data/wh/*.parquet", ice.ParquetFile)}, "", "local"},
		{"quote", table.FileScanTask{File: file("/data/wh/a'.parquet", ice.ParquetFile)}, "", "local"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path, reason := plainTask(c.task, root)
			if path != c.path || !strings.Contains(reason, c.reason) || (c.reason == "") != (reason == "") {
				t.Fatalf("plainTask = %q, %q; want %q, reason with %q", path, reason, c.path, c.reason)
			}
		})
	}
}
