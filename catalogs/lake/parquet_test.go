package lake_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/flightgw/flightgw/catalogs/lake"
)

type rowCounter struct{ rows, batches int64 }

func (c *rowCounter) Observe(b arrow.RecordBatch) { c.rows += b.NumRows(); c.batches++ }

func ints(from, n int64) arrow.RecordBatch {
	sc := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	for i := range n {
		b.Field(0).(*array.Int64Builder).Append(from + i)
	}
	return b.NewRecordBatch()
}

// TestParquetFile: the observer sees every batch (WriteAs: the rows, not
// their on-disk form); a small row-group size closes row groups as the
// file grows; after Close, Bytes is the file's size and a reader finds
// every row.
func TestParquetFile(t *testing.T) {
	st := lake.Local{Root: t.TempDir()}
	ctx := context.Background()
	out, err := st.Writer(ctx, "t/data-1.parquet")
	if err != nil {
		t.Fatal(err)
	}
	first := ints(0, 5000)
	defer first.Release()
	obs := &rowCounter{}
	f, err := lake.NewParquetFile(out, first.Schema(), first, lake.ParquetOptions{RowGroupBytes: 1 << 10,
		Props: []parquet.WriterProperty{parquet.WithDataPageSize(512)}}, obs)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Write(first); err != nil {
		t.Fatal(err)
	}
	second, seen := ints(5000, 5000), ints(0, 3)
	defer second.Release()
	defer seen.Release()
	if err := f.WriteAs(second, seen); err != nil {
		t.Fatal(err)
	}
	if f.Rows() != 10000 || obs.rows != 5003 || obs.batches != 2 || f.Size() <= 0 {
		t.Errorf("rows %d, observed %d in %d batches, size %d", f.Rows(), obs.rows, obs.batches, f.Size())
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(st.Root, "t/data-1.parquet"))
	if err != nil || int64(len(b)) != f.Bytes() {
		t.Fatalf("file of %d bytes, %v; Bytes says %d", len(b), err, f.Bytes())
	}
	rd, err := file.NewParquetReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if rd.NumRows() != 10000 || rd.NumRowGroups() < 2 {
		t.Errorf("%d rows in %d row groups, want 10000 in several", rd.NumRows(), rd.NumRowGroups())
	}
	fr, err := pqarrow.NewFileReader(rd, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := fr.ReadTable(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Release()
	if tbl.NumRows() != 10000 {
		t.Errorf("read %d rows", tbl.NumRows())
	}
}
