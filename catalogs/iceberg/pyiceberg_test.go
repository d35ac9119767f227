package iceberg_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/catalogs/catalogtest"
	"github.com/flightgw/flightgw/catalogs/iceberg"
)

// pyiceberg returns a Python interpreter that has pyiceberg, from
// FLIGHTGW_PYTHON or the repository's .venv (make iceberg-pyiceberg-check
// sets it up), or skips the test.
func pyiceberg(t *testing.T) string {
	t.Helper()
	py := os.Getenv("FLIGHTGW_PYTHON")
	if py == "" {
		py = filepath.Join("..", "..", ".venv", "bin", "python")
	}
	if err := exec.Command(py, "-c", "import pyiceberg.catalog.sql, pyarrow").Run(); err != nil {
		t.Skipf("no python with pyiceberg at %s (set FLIGHTGW_PYTHON or run make iceberg-pyiceberg-check): %v", py, err)
	}
	return py
}

// runScript runs a script of testdata with py and decodes the one JSON
// object it prints into v.
func runScript(t *testing.T, py string, v any, script string, args ...string) {
	t.Helper()
	cmd := exec.Command(py, append([]string{filepath.Join("testdata", script)}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v\n%s", script, err, stderr.String())
	}
	if err := json.Unmarshal(out, v); err != nil {
		t.Fatalf("%s output %q: %v", script, out, err)
	}
}

// TestPyIcebergInterop proves the embedded lake is a catalog pyiceberg's
// SqlCatalog reads and writes: same catalog name, same iceberg_tables
// layout, files it can open; and that what pyiceberg appends is visible
// to the gateway.
func TestPyIcebergInterop(t *testing.T) {
	py := pyiceberg(t)
	dir := t.TempDir()
	ctx := context.Background()
	p, err := iceberg.OpenEmbedded(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	id := catalogs.TableIdent{Catalog: iceberg.EmbeddedCatalogName, Namespace: []string{"default"}, Name: "people"}
	if _, err := p.CreateTable(ctx, id, catalogtest.Schema, nil); err != nil {
		t.Fatal(err)
	}
	b := catalogtest.Batch(0, 25)
	defer b.Release()
	r, err := p.WriteBatch(ctx, id, b)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.CommitOnce(ctx, id, "from-go", []catalogs.WriteReceipt{r}); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Namespaces [][]string `json:"namespaces"`
		Tables     [][]string `json:"tables"`
		Rows       int        `json:"rows"`
		IDs        []int64    `json:"ids"`
		CommitID   string     `json:"commit_id"`
		FieldIDs   []int      `json:"field_ids"`
	}
	runScript(t, py, &got, "pyiceberg_check.py", dir)
	if !slices.ContainsFunc(got.Namespaces, func(ns []string) bool { return slices.Equal(ns, []string{"default"}) }) ||
		!slices.ContainsFunc(got.Tables, func(tb []string) bool { return slices.Equal(tb, []string{"default", "people"}) }) {
		t.Errorf("pyiceberg sees namespaces %v, tables %v", got.Namespaces, got.Tables)
	}
	if got.Rows != 25 || len(got.IDs) != 25 || got.IDs[24] != 24 || got.CommitID != "from-go" {
		t.Errorf("pyiceberg read %+v, want 25 rows committed as from-go", got)
	}
	spec, err := p.GetTableSpec(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.FieldIDs) != 2 || int32(got.FieldIDs[0]) != spec.SchemaSpec.Fields[0].ID {
		t.Errorf("pyiceberg field ids %v, gateway %+v", got.FieldIDs, spec.SchemaSpec.Fields)
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
	if n != 28 {
		t.Errorf("after pyiceberg's append the gateway reads %d rows, want 28", n)
	}
}

// TestPyIcebergReadsReplace: after a replace with a new schema, pyiceberg
// sees the same table (same UUID, history kept) with the new columns and
// exactly the replaced rows.
func TestPyIcebergReadsReplace(t *testing.T) {
	py := pyiceberg(t)
	dir := t.TempDir()
	ctx := context.Background()
	p, err := iceberg.OpenEmbedded(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	id := catalogs.TableIdent{Catalog: iceberg.EmbeddedCatalogName, Namespace: []string{"default"}, Name: "people"}
	if _, err := p.CreateTable(ctx, id, catalogtest.Schema, nil); err != nil {
		t.Fatal(err)
	}
	b := catalogtest.Batch(0, 25)
	r, err := p.WriteBatch(ctx, id, b)
	b.Release()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.CommitOnce(ctx, id, "before", []catalogs.WriteReceipt{r}); err != nil {
		t.Fatal(err)
	}
	type view struct {
		UUID      string   `json:"uuid"`
		Snapshots int      `json:"snapshots"`
		Operation string   `json:"operation"`
		Columns   []string `json:"columns"`
		Rows      int      `json:"rows"`
		IDs       []int64  `json:"ids"`
	}
	read := func() view {
		t.Helper()
		var v view
		runScript(t, py, &v, "pyiceberg_replace.py", dir, "default.people")
		return v
	}
	before := read()

	sc := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int32},
		{Name: "label", Type: arrow.BinaryTypes.LargeString, Nullable: true},
	}, nil)
	bld := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	bld.Field(0).(*array.Int32Builder).AppendValues([]int32{100, 101, 102}, nil)
	bld.Field(1).(*array.LargeStringBuilder).AppendValues([]string{"a", "b", "c"}, nil)
	rec := bld.NewRecordBatch()
	bld.Release()
	s, err := p.OpenReplaceStream(ctx, id, sc)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Write(ctx, rec); err != nil {
		t.Fatal(err)
	}
	rec.Release()
	receipts, err := s.Close(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.CommitOverwrite(ctx, id, "replace", receipts); err != nil {
		t.Fatal(err)
	}
	after := read()
	if after.UUID != before.UUID || after.Snapshots != before.Snapshots+1 || after.Operation != "overwrite" {
		t.Errorf("pyiceberg sees %+v after the replace, %+v before: want the same table with one overwrite more", after, before)
	}
	if !slices.Equal(after.Columns, []string{"id", "label"}) || after.Rows != 3 || !slices.Equal(after.IDs, []int64{100, 101, 102}) {
		t.Errorf("pyiceberg reads %+v, want columns id, label and ids 100..102", after)
	}
}

// TestPyIcebergReadsRacedCommitOnce: two replicas (two providers on one
// embedded catalog) commit the same receipts under two commit ids at the
// same instant; one lands, the other is ErrFailedPrecondition, and
// pyiceberg reads each row once, in one snapshot.
func TestPyIcebergReadsRacedCommitOnce(t *testing.T) {
	py := pyiceberg(t)
	dir := t.TempDir()
	ctx := context.Background()
	var reps []*iceberg.Provider
	for range 2 {
		p, err := iceberg.OpenEmbedded(ctx, dir)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		reps = append(reps, p)
	}
	id := catalogs.TableIdent{Catalog: iceberg.EmbeddedCatalogName, Namespace: []string{"default"}, Name: "raced"}
	if _, err := reps[0].CreateTable(ctx, id, catalogtest.Schema, nil); err != nil {
		t.Fatal(err)
	}
	b := catalogtest.Batch(0, 10)
	r, err := reps[0].WriteBatch(ctx, id, b)
	b.Release()
	if err != nil {
		t.Fatal(err)
	}
	var start, done sync.WaitGroup
	start.Add(1)
	errs := make([]error, len(reps))
	for i, p := range reps {
		done.Add(1)
		go func() {
			defer done.Done()
			start.Wait()
			_, errs[i] = p.CommitOnce(ctx, id, fmt.Sprintf("replica-%d", i), []catalogs.WriteReceipt{r})
		}()
	}
	start.Done()
	done.Wait()
	landed := 0
	for i, err := range errs {
		switch {
		case err == nil:
			landed++
		case !errors.Is(err, catalogs.ErrFailedPrecondition):
			t.Errorf("replica %d: %v; want ErrFailedPrecondition (the file is in a snapshot)", i, err)
		}
	}
	if landed != 1 {
		t.Errorf("%d commits landed, want exactly one", landed)
	}
	var got struct {
		Snapshots int     `json:"snapshots"`
		Rows      int     `json:"rows"`
		IDs       []int64 `json:"ids"`
	}
	runScript(t, py, &got, "pyiceberg_replace.py", dir, "default.raced")
	if got.Snapshots != 1 || got.Rows != 10 || !slices.Equal(got.IDs, []int64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}) {
		t.Errorf("pyiceberg reads %+v, want one snapshot of rows 0..9, each once", got)
	}
}

// TestPyIcebergReadsV3Nanos: pyiceberg reads a format version 3 table the
// gateway created and wrote (two appends), with its nanosecond timestamps
// exact, as timestamp_ns and timestamptz_ns.
func TestPyIcebergReadsV3Nanos(t *testing.T) {
	py := pyiceberg(t)
	dir := t.TempDir()
	ctx := context.Background()
	p, err := iceberg.OpenEmbedded(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	id := catalogs.TableIdent{Catalog: iceberg.EmbeddedCatalogName, Namespace: []string{"default"}, Name: "v3ns"}
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Nanosecond}, Nullable: true},
		{Name: "tz", Type: &arrow.TimestampType{Unit: arrow.Nanosecond, TimeZone: "UTC"}, Nullable: true},
	}, nil)
	if _, err := p.CreateTable(ctx, id, sc, map[string]string{"format-version": "3"}); err != nil {
		t.Fatal(err)
	}
	const base = int64(1_704_164_645_123_456_000) // 2024-01-02T03:04:05.123456Z
	var want []int64
	for _, ids := range [][]int64{{1, 2}, {3}} {
		bld := array.NewRecordBuilder(memory.DefaultAllocator, sc)
		for _, i := range ids {
			bld.Field(0).(*array.Int64Builder).Append(i)
			bld.Field(1).(*array.TimestampBuilder).Append(arrow.Timestamp(base + 100 + i))
			bld.Field(2).(*array.TimestampBuilder).Append(arrow.Timestamp(base + 200 + i))
			want = append(want, i)
		}
		rec := bld.NewRecordBatch()
		bld.Release()
		r, err := p.WriteBatch(ctx, id, rec)
		rec.Release()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Commit(ctx, id, []catalogs.WriteReceipt{r}); err != nil {
			t.Fatal(err)
		}
	}
	var got struct {
		FormatVersion int               `json:"format_version"`
		Types         map[string]string `json:"types"`
		Arrow         map[string]string `json:"arrow"`
		IDs           []int64           `json:"ids"`
		TS            []int64           `json:"ts"`
		TZ            []int64           `json:"tz"`
	}
	runScript(t, py, &got, "pyiceberg_v3ns.py", dir, "default.v3ns")
	if got.FormatVersion != 3 || got.Types["ts"] != "timestamp_ns" || got.Types["tz"] != "timestamptz_ns" {
		t.Errorf("pyiceberg sees format version %d, types %v; want 3, timestamp_ns and timestamptz_ns", got.FormatVersion, got.Types)
	}
	if !slices.Equal(got.IDs, want) {
		t.Fatalf("pyiceberg reads ids %v, want %v", got.IDs, want)
	}
	for k, i := range want {
		if got.TS[k] != base+100+i || got.TZ[k] != base+200+i {
			t.Errorf("row %d: pyiceberg reads ts %d tz %d, want %d and %d (arrow %v)", i, got.TS[k], got.TZ[k], base+100+i, base+200+i, got.Arrow)
		}
	}
}

// TestPyIcebergReadsStagedCreate: a table made by a staged create (its row
// inserted with its first snapshot in one catalog commit) is one pyiceberg
// reads, with the create's rows, partition spec, sort order, format
// version and commit id, and appends to; the gateway then reads both.
func TestPyIcebergReadsStagedCreate(t *testing.T) {
	py := pyiceberg(t)
	dir := t.TempDir()
	ctx := context.Background()
	p, err := iceberg.OpenEmbedded(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	id := catalogs.TableIdent{Catalog: iceberg.EmbeddedCatalogName, Namespace: []string{"default"}, Name: "staged"}
	// Identity: pyiceberg's append computes other transforms with
	// pyiceberg-core, which the venv does not hold.
	opts := map[string]string{iceberg.OptPartition: "identity(name)", iceberg.OptSort: "id desc", iceberg.OptFormatVersion: "2"}
	rs := stageRows(t, p, id, opts, 0, 25)
	if _, err := p.CommitCreate(ctx, id, catalogtest.Schema, opts, "staged-create", rs); err != nil {
		t.Fatal(err)
	}
	var got struct {
		FormatVersion int      `json:"format_version"`
		IDs           []int64  `json:"ids"`
		Partition     []string `json:"partition"`
		Sort          []string `json:"sort"`
		CommitID      string   `json:"commit_id"`
		FieldIDs      []int    `json:"field_ids"`
	}
	runScript(t, py, &got, "pyiceberg_staged.py", dir, "default.staged")
	if got.FormatVersion != 2 || len(got.IDs) != 25 || got.IDs[24] != 24 || got.CommitID != "staged-create" {
		t.Errorf("pyiceberg read %+v, want format version 2 and 25 rows committed as staged-create", got)
	}
	if !slices.Equal(got.Partition, []string{"identity"}) || !slices.Equal(got.Sort, []string{"DESC"}) {
		t.Errorf("pyiceberg sees partition %v, sort %v; want identity, DESC", got.Partition, got.Sort)
	}
	spec, err := p.GetTableSpec(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.FieldIDs) != 2 || int32(got.FieldIDs[0]) != spec.SchemaSpec.Fields[0].ID {
		t.Errorf("pyiceberg field ids %v, gateway %+v", got.FieldIDs, spec.SchemaSpec.Fields)
	}
	if n := scanRows(t, p, id); n != 28 {
		t.Errorf("after pyiceberg's append the gateway reads %d rows, want 28", n)
	}
}
