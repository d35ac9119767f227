package iceberg

import (
	"context"
	"encoding/base64"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightgw/flightgw/catalogs"
)

// FuzzReceipt feeds arbitrary bytes to the receipt decoder (receipts come
// from clients in distributed writes): it must fail cleanly, never panic,
// and never accept a file outside the table.
func FuzzReceipt(f *testing.F) {
	ctx := context.Background()
	dir := f.TempDir()
	props, err := EmbeddedProperties(dir)
	if err != nil {
		f.Fatal(err)
	}
	p, err := Open(ctx, "lake", props)
	if err != nil {
		f.Fatal(err)
	}
	defer p.Close()
	id := catalogs.TableIdent{Catalog: "lake", Namespace: []string{"default"}, Name: "fuzz"}
	sc := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil)
	if _, err := p.CreateTable(ctx, id, sc, nil); err != nil {
		f.Fatal(err)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	b.Field(0).(*array.Int64Builder).AppendValues([]int64{1, 2, 3}, nil)
	rec := b.NewRecordBatch()
	b.Release()
	r, err := p.WriteBatch(ctx, id, rec)
	rec.Release()
	if err != nil {
		f.Fatal(err)
	}
	tbl, err := p.load(ctx, id)
	if err != nil {
		f.Fatal(err)
	}
	f.Add([]byte(r.Metadata))
	// A replace receipt (format v2, with a new schema).
	wide := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "v", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	rs, err := p.OpenReplaceStream(ctx, id, wide)
	if err != nil {
		f.Fatal(err)
	}
	rr, err := rs.Close(ctx)
	if err != nil || len(rr) != 1 {
		f.Fatalf("replace receipts %v: %v", rr, err)
	}
	f.Add([]byte(rr[0].Metadata))
	f.Add([]byte(`{"format":"flightgw.iceberg.data-files/v1","table":"lake.default.fuzz","files":[{"path":"/etc/passwd","data_file":"` +
		base64.StdEncoding.EncodeToString([]byte{0, 1, 2}) + `"}]}`))
	f.Add([]byte(`null`))
	loc, err := resolveLocation(tbl.Location())
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		rms, err := parseReceipts(id, []catalogs.WriteReceipt{{Metadata: data}})
		if err != nil {
			return
		}
		files, err := dataFiles(id, tbl.Metadata(), rms)
		if err != nil {
			return
		}
		if _, err := schemaChangeFor(id, tbl, rms, true); err != nil {
			return
		}
		for _, df := range files {
			if df == nil || df.FilePath() == "" {
				t.Errorf("decoded a data file with no path from %q", data)
			} else if err := checkFile(id, loc, df.FilePath()); err != nil {
				t.Errorf("accepted a file outside the table from %q: %v", data, err)
			}
		}
	})
}
