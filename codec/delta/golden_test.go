package delta

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/decimal128"
)

// expectedVersion is one entry of a fixture's expected.json, as deltalake reported it.
type expectedVersion struct {
	Version  int64 `json:"version"`
	Protocol struct {
		MinReaderVersion int32    `json:"minReaderVersion"`
		MinWriterVersion int32    `json:"minWriterVersion"`
		ReaderFeatures   []string `json:"readerFeatures"`
		WriterFeatures   []string `json:"writerFeatures"`
	} `json:"protocol"`
	TableID          string            `json:"tableId"`
	PartitionColumns []string          `json:"partitionColumns"`
	Configuration    map[string]string `json:"configuration"`
	Schema           json.RawMessage   `json:"schema"`
	Files            []struct {
		Path       string         `json:"path"`
		Size       int64          `json:"size"`
		NumRecords *int64         `json:"numRecords"`
		Partition  map[string]any `json:"partition"`
	} `json:"files"`
	FileURIs []string         `json:"fileUris"`
	NumRows  int64            `json:"numRows"`
	Txn      map[string]int64 `json:"txn"`
}

func fixtureTables(t *testing.T) []string {
	t.Helper()
	dirs, err := filepath.Glob("testdata/tables/*/_delta_log")
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no fixture tables: %v", err)
	}
	for i := range dirs {
		dirs[i] = filepath.Dir(dirs[i])
	}
	return dirs
}

func readExpected(t *testing.T, dir string) []expectedVersion {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "expected.json"))
	if err != nil {
		t.Fatal(err)
	}
	var exp []expectedVersion
	if err := json.Unmarshal(b, &exp); err != nil {
		t.Fatal(err)
	}
	return exp
}

// TestGoldenReplay replays every fixture table at every version and checks the snapshot
// against what deltalake reported: protocol, metadata, schema, live files with sizes,
// record counts and typed partition values, decoded file paths, app transactions.
func TestGoldenReplay(t *testing.T) {
	for _, dir := range fixtureTables(t) {
		for _, exp := range readExpected(t, dir) {
			t.Run(filepath.Base(dir)+"/v"+itoa(exp.Version), func(t *testing.T) {
				s, err := Load(context.Background(), DirLog(filepath.Join(dir, "_delta_log")), exp.Version)
				if err != nil {
					t.Fatal(err)
				}
				checkSnapshot(t, s, exp)
			})
		}
	}
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

func sortedCopy(s []string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}

func checkSnapshot(t *testing.T, s *Snapshot, exp expectedVersion) {
	t.Helper()
	if s.Version != exp.Version {
		t.Errorf("version %d, deltalake %d", s.Version, exp.Version)
	}
	p := s.Protocol
	if p.MinReaderVersion != exp.Protocol.MinReaderVersion || p.MinWriterVersion != exp.Protocol.MinWriterVersion ||
		!reflect.DeepEqual(sortedCopy(p.ReaderFeatures), sortedCopy(exp.Protocol.ReaderFeatures)) ||
		!reflect.DeepEqual(sortedCopy(p.WriterFeatures), sortedCopy(exp.Protocol.WriterFeatures)) {
		t.Errorf("protocol %+v, deltalake %+v", p, exp.Protocol)
	}
	if s.Metadata.ID != exp.TableID {
		t.Errorf("table id %q, deltalake %q", s.Metadata.ID, exp.TableID)
	}
	if !reflect.DeepEqual(nonNil(s.Metadata.PartitionColumns), nonNil(exp.PartitionColumns)) {
		t.Errorf("partition columns %v, deltalake %v", s.Metadata.PartitionColumns, exp.PartitionColumns)
	}
	if len(s.Metadata.Configuration) != len(exp.Configuration) || (len(exp.Configuration) > 0 && !reflect.DeepEqual(s.Metadata.Configuration, exp.Configuration)) {
		t.Errorf("configuration %v, deltalake %v", s.Metadata.Configuration, exp.Configuration)
	}
	// The schema, re-encoded by us, equals deltalake's JSON of it.
	ours, err := s.Schema.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	var a, b any
	_ = json.Unmarshal(ours, &a)
	_ = json.Unmarshal(exp.Schema, &b)
	if !reflect.DeepEqual(a, b) {
		t.Errorf("schema\n ours     %s\n deltalake %s", ours, exp.Schema)
	}
	if _, err := ArrowSchema(s.Schema, PhysicalNames); err != nil {
		t.Errorf("arrow schema: %v", err)
	}

	if len(s.Files) != len(exp.Files) {
		t.Fatalf("%d live files, deltalake %d", len(s.Files), len(exp.Files))
	}
	var rows int64
	var uris []string
	for i, f := range s.Files {
		e := exp.Files[i]
		if f.Path != e.Path || f.Size != e.Size {
			t.Errorf("file %d: %s (%d bytes), deltalake %s (%d bytes)", i, f.Path, f.Size, e.Path, e.Size)
			continue
		}
		var st struct{ NumRecords *int64 }
		if err := json.Unmarshal([]byte(f.Stats), &st); err != nil || st.NumRecords == nil {
			t.Errorf("file %s: stats %q: %v", f.Path, f.Stats, err)
		} else {
			rows += *st.NumRecords
			if e.NumRecords != nil && *e.NumRecords != *st.NumRecords {
				t.Errorf("file %s: %d records, deltalake %d", f.Path, *st.NumRecords, *e.NumRecords)
			}
		}
		got := map[string]any{}
		for _, col := range s.Metadata.PartitionColumns {
			fld := s.Schema.Field(col)
			v, err := ParsePartitionValue(fld.Type, f.PartitionValues[col])
			if err != nil {
				t.Fatalf("file %s column %s: %v", f.Path, col, err)
			}
			got[col] = jsonForm(v)
		}
		if len(e.Partition) > 0 || len(got) > 0 {
			if !reflect.DeepEqual(normalize(got), normalize(e.Partition)) {
				t.Errorf("file %s partition %v, deltalake %v", f.Path, got, e.Partition)
			}
		}
		u, err := DecodePath(f.Path)
		if err != nil {
			t.Fatal(err)
		}
		uris = append(uris, u)
	}
	sort.Strings(uris)
	if !reflect.DeepEqual(uris, sortedCopy(exp.FileURIs)) {
		t.Errorf("decoded paths\n ours     %q\n deltalake %q", uris, exp.FileURIs)
	}
	if rows != exp.NumRows {
		t.Errorf("%d rows, deltalake counts %d", rows, exp.NumRows)
	}
	got := map[string]int64{}
	for app, tx := range s.Txns {
		got[app] = tx.Version
	}
	if len(got) != len(exp.Txn) || (len(got) > 0 && !reflect.DeepEqual(got, exp.Txn)) {
		t.Errorf("txns %v, deltalake %v", got, exp.Txn)
	}
}

// jsonForm turns a typed partition value into the form the generator wrote for
// deltalake's: dates and timestamps in ISO form, numbers as numbers.
func jsonForm(v PartitionValue) any {
	switch x := v.(type) {
	case Date:
		return time.Unix(int64(x)*86400, 0).UTC().Format("2006-01-02")
	case Timestamp:
		return time.UnixMicro(int64(x)).UTC().Format("2006-01-02T15:04:05.999999+00:00")
	case decimal128.Num:
		return x.BigInt().String()
	case []byte:
		return string(x)
	}
	return v
}

func normalize(m map[string]any) map[string]any {
	var out map[string]any
	_ = json.Unmarshal(mustJSON(m), &out)
	return out
}

// TestColumnMappingMatchesDataFiles: under column mapping the physical Arrow schema names
// the columns as deltalake wrote them in its Parquet files, and its stats use those names.
func TestColumnMappingMatchesDataFiles(t *testing.T) {
	dir := "testdata/tables/colmap"
	s, err := Load(context.Background(), DirLog(filepath.Join(dir, "_delta_log")), -1)
	if err != nil {
		t.Fatal(err)
	}
	if s.Metadata.Configuration["delta.columnMapping.mode"] != "name" {
		t.Fatalf("fixture is not in column mapping mode name: %v", s.Metadata.Configuration)
	}
	phys, err := ArrowSchema(s.Schema, PhysicalNames)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, f := range phys.Fields() {
		want = append(want, f.Name)
		if f.Name == s.Schema.Field("id").Name {
			t.Fatalf("physical name equals logical name %q", f.Name)
		}
	}
	for _, f := range s.Files {
		p, _ := DecodePath(f.Path)
		b, err := os.ReadFile(filepath.Join(dir, p))
		if err != nil {
			t.Fatal(err)
		}
		tbl := readParquetTable(t, b)
		var got []string
		for _, fld := range tbl.Schema().Fields() {
			got = append(got, fld.Name)
		}
		tbl.Release()
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: columns %v, physical schema %v", p, got, want)
		}
		var st struct{ MinValues map[string]any }
		_ = json.Unmarshal([]byte(f.Stats), &st)
		for _, name := range want {
			if _, ok := st.MinValues[name]; !ok {
				t.Errorf("%s: stats lack physical column %s: %s", p, name, f.Stats)
			}
		}
	}
}
