package delta_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"

	"github.com/flightgw/flightgw/catalogs"
	dcodec "github.com/flightgw/flightgw/codec/delta"
)

var colmapSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "p", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "st", Type: arrow.StructOf(arrow.Field{Name: "x", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		arrow.Field{Name: "y", Type: arrow.BinaryTypes.String, Nullable: true}), Nullable: true},
	{Name: "arr", Type: arrow.ListOf(arrow.StructOf(arrow.Field{Name: "z", Type: arrow.PrimitiveTypes.Int64, Nullable: true})), Nullable: true},
}, nil)

const colmapRows = `[{"id": 1, "p": "a", "st": {"x": 10, "y": "u"}, "arr": [{"z": 5}, null]},
{"id": 2, "p": null, "st": null, "arr": []},
{"id": 3, "p": "a", "st": {"x": null, "y": "w"}, "arr": null}]`

// TestColumnMappingWrite: a table created with delta.columnMapping.mode
// name or id is on reader 3 / writer 7 with columnMapping among both
// feature lists; every column, nested ones too, has an id and a physical
// name col-<uuid> (maxColumnId the largest id); the data files hold the
// physical names with the ids as Parquet field ids, under random
// two-character directories; partition values and stats go by physical
// name; the gateway reads the rows back by logical
// name, nested ones included. An unknown mode is refused.
func TestColumnMappingWrite(t *testing.T) {
	for _, mode := range []string{"name", "id"} {
		t.Run(mode, func(t *testing.T) {
			wh := t.TempDir()
			p := openLocal(t, wh)
			ctx := context.Background()
			id := ident("default", "cm")
			if _, err := p.CreateTable(ctx, id, colmapSchema, map[string]string{"partition": "p", dcodec.PropColumnMappingMode: mode}); err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join(wh, "default", "cm")
			acts, err := dcodec.ParseCommit("0", mustRead(t, filepath.Join(dir, "_delta_log", dcodec.CommitName(0))))
			if err != nil {
				t.Fatal(err)
			}
			var md *dcodec.Metadata
			for _, a := range acts {
				if a.Protocol != nil {
					pr := a.Protocol
					if pr.MinReaderVersion != 3 || pr.MinWriterVersion != 7 || !slices.Contains(pr.ReaderFeatures, "columnMapping") || !slices.Contains(pr.WriterFeatures, "columnMapping") {
						t.Errorf("protocol %+v, want 3/7 with columnMapping in both lists", *pr)
					}
				}
				if a.MetaData != nil {
					md = a.MetaData
				}
			}
			if md.Configuration[dcodec.PropColumnMappingMode] != mode || md.Configuration[dcodec.PropColumnMappingMaxID] != "7" {
				t.Errorf("configuration %v, want mode %s and maxColumnId 7 (id p st st.x st.y arr arr.element.z)", md.Configuration, mode)
			}
			sch, err := dcodec.ParseSchema(md.SchemaString)
			if err != nil {
				t.Fatal(err)
			}
			if err := dcodec.CheckColumnMapping(sch, "id"); err != nil {
				t.Fatal(err)
			}
			phys := map[string]string{}
			for _, f := range sch.Fields {
				phys[f.Name], _ = f.PhysicalName()
				if !strings.HasPrefix(phys[f.Name], "col-") {
					t.Errorf("column %s: physical name %q", f.Name, phys[f.Name])
				}
			}

			rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, colmapSchema, strings.NewReader(colmapRows))
			if err != nil {
				t.Fatal(err)
			}
			defer rec.Release()
			r, err := p.WriteBatch(ctx, id, rec)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := p.Commit(ctx, id, []catalogs.WriteReceipt{r}); err != nil {
				t.Fatal(err)
			}
			adds := 0
			for _, a := range logLines(t, dir, 1) {
				raw, ok := a["add"]
				if !ok {
					continue
				}
				adds++
				var add dcodec.AddFile
				if err := json.Unmarshal(raw, &add); err != nil {
					t.Fatal(err)
				}
				if _, ok := add.PartitionValues[phys["p"]]; !ok || len(add.PartitionValues) != 1 {
					t.Errorf("partition values %v, want the key %s", add.PartitionValues, phys["p"])
				}
				var stats struct{ NullCount map[string]int64 }
				_ = json.Unmarshal([]byte(add.Stats), &stats)
				if _, ok := stats.NullCount[phys["id"]]; !ok || len(stats.NullCount) != 1 {
					t.Errorf("stats %s, want nullCount by the physical name %s", add.Stats, phys["id"])
				}
				rel, _ := dcodec.DecodePath(add.Path)
				if d, _, ok := strings.Cut(rel, "/"); !ok || len(d) != 2 {
					t.Errorf("data file %s, want it under a random two-character directory (no %s=… directory)", rel, phys["p"])
				}
				checkFieldIDs(t, filepath.Join(dir, rel), sch)
			}
			if adds != 2 {
				t.Errorf("%d adds, want 2 (two partitions)", adds)
			}
			bs, n, err := scanAll(t, p, id)
			if err != nil || n != 3 {
				t.Fatalf("scan: %d rows, %v", n, err)
			}
			got := rowStrings(bs)
			slices.Sort(got)
			want := []string{`1|a|{"x":10,"y":"u"}|[{"z":5},null]`, `2|(null)|(null)|[]`, `3|a|{"x":null,"y":"w"}|(null)`}
			if !slices.Equal(got, want) {
				t.Errorf("rows %q, want %q", got, want)
			}
		})
	}
	p := openLocal(t, "")
	_, err := p.CreateTable(context.Background(), ident("default", "bad"), colmapSchema, map[string]string{dcodec.PropColumnMappingMode: "both"})
	if err == nil || !strings.Contains(err.Error(), dcodec.PropColumnMappingMode) {
		t.Errorf("mode both: %v, want InvalidArgument naming the option", err)
	}
}

// checkFieldIDs checks that a data file's columns are the schema's
// physical names with its ids as Parquet field ids, nested ones too.
func checkFieldIDs(t *testing.T, path string, sch *dcodec.StructType) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	pr, err := file.NewParquetReader(f)
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	want := map[string]int32{}
	var walk func(s *dcodec.StructType)
	walk = func(s *dcodec.StructType) {
		for _, fl := range s.Fields {
			n, _ := fl.PhysicalName()
			want[n], _, _ = fl.ColumnMappingID()
			switch ty := fl.Type.(type) {
			case *dcodec.StructType:
				walk(ty)
			case *dcodec.ArrayType:
				if st, ok := ty.ElementType.(*dcodec.StructType); ok {
					walk(st)
				}
			}
		}
	}
	walk(sch)
	root := pr.MetaData().Schema.Root()
	seen := 0
	for i := 0; i < pr.MetaData().Schema.NumColumns(); i++ {
		for node := pr.MetaData().Schema.Column(i).SchemaNode(); node != nil && node != root; node = node.Parent() {
			if id, ok := want[node.Name()]; ok {
				seen++
				if node.FieldID() != id {
					t.Errorf("%s: field %s has field id %d, want %d", path, node.Name(), node.FieldID(), id)
				}
			} else if strings.HasPrefix(node.Name(), "col-") || node.Name() == "x" || node.Name() == "id" || node.Name() == "z" {
				t.Errorf("%s: field %s is not a physical name of the schema", path, node.Name())
			}
		}
	}
	if seen == 0 {
		t.Errorf("%s: no column by physical name", path)
	}
}
