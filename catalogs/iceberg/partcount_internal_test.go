package iceberg

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightgw/flightgw/catalogs"
)

// TestPartitionedWriteBoundsOpenFiles: an upload whose rows interleave
// more partitions than write.max-open-files has at most that many files
// open in its fanout pass and writes the rest in clustered passes (one
// file open at a time, one file per partition and pass), every row landing
// once.
func TestPartitionedWriteBoundsOpenFiles(t *testing.T) {
	ctx := context.Background()
	props, err := EmbeddedProperties(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	const maxOpen, parts, batches, rowsPer = 4, 10, 3, 200
	props[PropMaxOpenFiles] = fmt.Sprint(maxOpen)
	p, err := Open(ctx, EmbeddedCatalogName, props)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "k", Type: arrow.BinaryTypes.String},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond}},
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	}, nil)
	for _, tc := range []struct {
		name, spec string
		cluster    int64 // clusterBytes
	}{
		{"identity", "k", clusterBytes},
		{"day and bucket", "day(ts), bucket(2, id)", clusterBytes},
		{"clustered passes of 4 KiB", "k", 4 << 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func(old int64) { clusterBytes = old }(clusterBytes)
			clusterBytes = tc.cluster
			id := catalogs.TableIdent{Catalog: EmbeddedCatalogName, Namespace: []string{"default"}, Name: strings.ReplaceAll(tc.name, " ", "_")}
			if _, err := p.CreateTable(ctx, id, sc, map[string]string{OptPartition: tc.spec}); err != nil {
				t.Fatal(err)
			}
			ws, err := p.OpenStream(ctx, id, catalogs.WriteTxn{})
			if err != nil {
				t.Fatal(err)
			}
			for b := range batches {
				kb := array.NewStringBuilder(memory.DefaultAllocator)
				tb := array.NewTimestampBuilder(memory.DefaultAllocator, sc.Field(1).Type.(*arrow.TimestampType))
				ib := array.NewInt64Builder(memory.DefaultAllocator)
				for i := range rowsPer {
					part := i % parts // every partition in every stretch of the batch
					kb.Append(fmt.Sprintf("p%02d", part))
					tb.Append(arrow.Timestamp(int64(part/2)*86_400_000_000 + int64(i)))
					ib.Append(int64(b*rowsPer + i))
				}
				rec := array.NewRecordBatch(sc, []arrow.Array{kb.NewArray(), tb.NewArray(), ib.NewArray()}, rowsPer)
				if err := ws.Write(ctx, rec); err != nil {
					t.Fatal(err)
				}
				rec.Release()
			}
			receipts, err := ws.Close(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := p.Commit(ctx, id, receipts); err != nil {
				t.Fatal(err)
			}
			tbl, err := p.load(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			tasks, err := tbl.Scan().PlanFiles(ctx)
			if err != nil {
				t.Fatal(err)
			}
			// A file's name carries the id of the pass that wrote it.
			passOf := regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
			files := map[string]map[string]int{} // pass → partition → files
			var rows int64
			for _, task := range tasks {
				f := task.File
				rows += f.Count()
				pass := passOf.FindString(f.FilePath())
				if files[pass] == nil {
					files[pass] = map[string]int{}
				}
				files[pass][fmt.Sprint(f.Partition())]++
			}
			t.Logf("%d passes, %d files", len(files), len(tasks))
			if rows != batches*rowsPer {
				t.Fatalf("%d rows landed, want %d", rows, batches*rowsPer)
			}
			// The fanout pass holds at most maxOpen partitions; the rest of
			// the upload goes to clustered passes.
			if len(files) < 2 {
				t.Fatalf("%d pass(es) for %d interleaved partitions with at most %d open", len(files), parts, maxOpen)
			}
			fanout := false
			for pass, ps := range files {
				fanout = fanout || len(ps) <= maxOpen
				for part, n := range ps {
					if n != 1 {
						t.Errorf("pass %s wrote %d files of partition %s, want one", pass, n, part)
					}
				}
			}
			if !fanout {
				t.Errorf("no pass of at most %d partitions: %v", maxOpen, files)
			}
			if len(tasks) > parts*len(files) {
				t.Errorf("%d files for %d partitions: more than one per partition and pass", len(tasks), parts)
			}
		})
	}
}
