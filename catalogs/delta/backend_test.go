package delta_test

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/catalogs/catalogtest"
	"github.com/flightgw/flightgw/catalogs/delta"
	dcodec "github.com/flightgw/flightgw/codec/delta"
)

func ident(ns, name string) catalogs.TableIdent {
	return catalogs.TableIdent{Catalog: "lake", Namespace: []string{ns}, Name: name}
}

// scanAll reads every row of a table; the batches are retained for the
// test's life.
func scanAll(t *testing.T, p catalogs.Scanner, id catalogs.TableIdent) ([]arrow.RecordBatch, int64, error) {
	t.Helper()
	res, err := p.Scan(context.Background(), id, catalogs.ScanRequest{})
	if err != nil {
		return nil, 0, err
	}
	defer res.Reader.Release()
	var out []arrow.RecordBatch
	var n int64
	for res.Reader.Next() {
		b := res.Reader.RecordBatch()
		b.Retain()
		t.Cleanup(b.Release)
		out = append(out, b)
		n += b.NumRows()
	}
	return out, n, res.Reader.Err()
}

// TestFixtures reads the tables delta-rs wrote (codec/delta/testdata) and
// appends each one's rows back to it: partitioned, column-mapped and
// checkpointed tables read; a table this backend cannot honour is refused
// with FailedPrecondition naming the feature or the layout.
func TestFixtures(t *testing.T) {
	wh := t.TempDir()
	if err := exec.Command("cp", "-r", "../../codec/delta/testdata/tables", filepath.Join(wh, "fx")).Run(); err != nil {
		t.Fatal(err)
	}
	p := openLocal(t, wh)
	for _, tc := range []struct {
		table    string
		rows     int64
		readErr  string // the feature a read refusal names
		writeErr string // the feature or layout a write refusal names
	}{
		{table: "appends", rows: 12},
		{table: "checkpoint", rows: 18},
		{table: "replace", rows: 11},
		{table: "partitioned", rows: 22},
		{table: "colmap", rows: 6, writeErr: "changeDataFeed"}, // writer 5 implies writer 4's features
		{table: "dv", readErr: "variantType", writeErr: "variantType"},
	} {
		t.Run(tc.table, func(t *testing.T) {
			id := ident("fx", tc.table)
			bs, n, err := scanAll(t, p, id)
			if tc.readErr != "" {
				if !errors.Is(err, catalogs.ErrFailedPrecondition) || !strings.Contains(err.Error(), tc.readErr) {
					t.Fatalf("scan: %v, want FailedPrecondition naming %s", err, tc.readErr)
				}
			} else if err != nil || n != tc.rows {
				t.Fatalf("scan: %d rows, %v; want %d", n, err, tc.rows)
			}
			s, err := p.OpenStream(context.Background(), id, catalogs.WriteTxn{})
			if tc.writeErr != "" {
				if !errors.Is(err, catalogs.ErrFailedPrecondition) || !strings.Contains(err.Error(), tc.writeErr) {
					t.Fatalf("open stream: %v, want FailedPrecondition naming %s", err, tc.writeErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, b := range bs {
				if err := s.Write(context.Background(), b); err != nil {
					t.Fatal(err)
				}
			}
			rs, err := s.Close(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if _, err := p.Commit(context.Background(), id, rs); err != nil {
				t.Fatal(err)
			}
			bs2, n2, err := scanAll(t, p, id)
			if err != nil || n2 != 2*tc.rows {
				t.Fatalf("after appending the rows back: %d rows, %v; want %d", n2, err, 2*tc.rows)
			}
			// Every row, partition values included, is there twice.
			count := map[string]int{}
			for _, r := range rowStrings(bs) {
				count[r] += 2
			}
			for _, r := range rowStrings(bs2) {
				count[r]--
			}
			for r, c := range count {
				if c != 0 {
					t.Errorf("row %s: %d copies too few after appending it back", r, c)
				}
			}
		})
	}
}

// rowStrings renders each row as its values' strings.
func rowStrings(bs []arrow.RecordBatch) []string {
	var out []string
	for _, b := range bs {
		for i := 0; i < int(b.NumRows()); i++ {
			var vs []string
			for _, c := range b.Columns() {
				vs = append(vs, c.ValueStr(i))
			}
			out = append(out, strings.Join(vs, "|"))
		}
	}
	return out
}

// logLines reads version v of a table's log as its JSON lines.
func logLines(t *testing.T, tableDir string, v int64) []map[string]json.RawMessage {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(tableDir, "_delta_log", dcodec.CommitName(v)))
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]json.RawMessage
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var m map[string]json.RawMessage
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

// TestCommitLog: an append is the next log version with commitInfo first
// (WRITE, a blind append, the commit id), the txn of the commit id at that
// version, and adds with numRecords, min/max and null counts; CommitOnce
// repeated with the same receipts answers that version, with other files
// it is a Duplicate of that version, and FindCommit
// finds it with its rows.
func TestCommitLog(t *testing.T) {
	wh := t.TempDir()
	p := openLocal(t, wh)
	ctx := context.Background()
	id := ident("default", "log")
	if _, err := p.CreateTable(ctx, id, catalogtest.Schema, nil); err != nil {
		t.Fatal(err)
	}
	v0 := logLines(t, filepath.Join(wh, "default", "log"), 0)
	if string(v0[1]["protocol"]) != `{"minReaderVersion":1,"minWriterVersion":7,"writerFeatures":[]}` {
		t.Errorf("protocol %s", v0[1]["protocol"])
	}
	b := catalogtest.Batch(5, 4)
	defer b.Release()
	r, err := p.WriteBatch(ctx, id, b)
	if err != nil {
		t.Fatal(err)
	}
	out, err := p.CommitOnce(ctx, id, "c-1", []catalogs.WriteReceipt{r})
	if err != nil || out.SnapshotID != 1 || out.Duplicate {
		t.Fatalf("commit: %+v, %v", out, err)
	}
	lines := logLines(t, filepath.Join(wh, "default", "log"), 1)
	var ci map[string]any
	if err := json.Unmarshal(lines[0]["commitInfo"], &ci); err != nil {
		t.Fatalf("first line %v is not commitInfo: %v", lines[0], err)
	}
	if ci["operation"] != "WRITE" || ci["isBlindAppend"] != true || ci["flightgw.commitId"] != "c-1" {
		t.Errorf("commitInfo %v", ci)
	}
	if string(lines[1]["txn"]) == "" || !strings.Contains(string(lines[1]["txn"]), `"appId":"c-1","version":1`) {
		t.Errorf("second line %v, want the txn of c-1 at version 1", lines[1])
	}
	var add dcodec.AddFile
	if err := json.Unmarshal(lines[2]["add"], &add); err != nil {
		t.Fatal(err)
	}
	var stats map[string]any
	if err := json.Unmarshal([]byte(add.Stats), &stats); err != nil {
		t.Fatalf("stats %q: %v", add.Stats, err)
	}
	want := `{"maxValues":{"id":8,"name":"row-8"},"minValues":{"id":5,"name":"row-5"},"nullCount":{"id":0,"name":0},"numRecords":4}`
	if add.Stats != want || !add.DataChange || !strings.HasSuffix(add.Path, ".zstd.parquet") {
		t.Errorf("add %+v\nstats %s\nwant  %s", add, add.Stats, want)
	}
	// The same commit repeated (its reply lost) is version 1 again, not a
	// Duplicate: a Duplicate's files are the caller's to discard, and
	// these are the table's.
	again, err := p.CommitOnce(ctx, id, "c-1", []catalogs.WriteReceipt{r})
	if err != nil || again.Duplicate || again.SnapshotID != 1 {
		t.Fatalf("repeated CommitOnce: %+v, %v; want version 1, not a Duplicate", again, err)
	}
	// Other files under a landed commit id: a Duplicate of version 1.
	other, err := p.WriteBatch(ctx, id, b)
	if err != nil {
		t.Fatal(err)
	}
	dup, err := p.CommitOnce(ctx, id, "c-1", []catalogs.WriteReceipt{other})
	if err != nil || !dup.Duplicate || dup.SnapshotID != 1 {
		t.Fatalf("CommitOnce of other files under c-1: %+v, %v; want a Duplicate of version 1", dup, err)
	}
	rec, ok, err := p.FindCommit(ctx, id, "c-1")
	if err != nil || !ok || rec.RowCount != 4 || rec.Outcome.SnapshotID != 1 {
		t.Fatalf("FindCommit: %+v %v %v", rec, ok, err)
	}
	if _, ok, err := p.FindCommit(ctx, id, "c-2"); ok || err != nil {
		t.Fatalf("FindCommit of an unknown id: %v %v", ok, err)
	}
	if _, n, err := scanAll(t, p, id); err != nil || n != 4 {
		t.Fatalf("scan: %d rows, %v", n, err)
	}
}

// inlineDV encodes the row indexes (< 65536, ascending) as an inline
// deletion vector: a portable RoaringBitmapArray of one array container.
func inlineDV(rows []uint16) *dcodec.DeletionVector {
	b := binary.LittleEndian.AppendUint32(nil, 1681511377) // portable magic
	b = binary.LittleEndian.AppendUint64(b, 1)
	b = binary.LittleEndian.AppendUint32(b, 0) // high 32 bits
	b = binary.LittleEndian.AppendUint32(b, 12346)
	b = binary.LittleEndian.AppendUint32(b, 1)
	b = binary.LittleEndian.AppendUint16(b, 0)
	b = binary.LittleEndian.AppendUint16(b, uint16(len(rows)-1))
	b = binary.LittleEndian.AppendUint32(b, 16) // the container's offset
	for _, r := range rows {
		b = binary.LittleEndian.AppendUint16(b, r)
	}
	return &dcodec.DeletionVector{StorageType: "i", PathOrInlineDv: dcodec.EncodeZ85(b), SizeInBytes: int32(len(b)), Cardinality: int64(len(rows))}
}

// TestDeletionVectors: a file's inline deletion vector (as Spark writes
// one on DELETE: remove and re-add with the DV, protocol with the
// feature) hides its rows from the scan, across row groups.
func TestDeletionVectors(t *testing.T) {
	wh := t.TempDir()
	p := openLocal(t, wh)
	ctx := context.Background()
	id := ident("default", "dv")
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
	dir := filepath.Join(wh, "default", "dv")
	var add dcodec.AddFile
	if err := json.Unmarshal(logLines(t, dir, 1)[2]["add"], &add); err != nil {
		t.Fatal(err)
	}
	ts := int64(1)
	dvAdd := add
	dvAdd.DeletionVector = inlineDV([]uint16{1, 3, 9})
	acts := []dcodec.Action{
		{Protocol: &dcodec.Protocol{MinReaderVersion: 3, MinWriterVersion: 7,
			ReaderFeatures: []string{dcodec.FeatureDeletionVectors}, WriterFeatures: []string{dcodec.FeatureDeletionVectors}}},
		{Remove: &dcodec.RemoveFile{Path: add.Path, DeletionTimestamp: &ts, DataChange: true}},
		{Add: &dvAdd},
	}
	enc, err := dcodec.EncodeCommit(acts)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "_delta_log", dcodec.CommitName(2)), enc, 0o644); err != nil {
		t.Fatal(err)
	}
	bs, n, err := scanAll(t, p, id)
	if err != nil || n != 7 {
		t.Fatalf("scan: %d rows, %v; want 7", n, err)
	}
	var got []int64
	for _, b := range bs {
		got = append(got, b.Column(0).(*array.Int64).Int64Values()...)
	}
	if want := []int64{0, 2, 4, 5, 6, 7, 8}; !equal(got, want) {
		t.Fatalf("ids %v, want %v", got, want)
	}
	// An append to the table keeps the DVs (deletionVectors is written
	// by never emitting one).
	r2, err := p.WriteBatch(ctx, id, b)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Commit(ctx, id, []catalogs.WriteReceipt{r2}); err != nil {
		t.Fatal(err)
	}
	if _, n, err := scanAll(t, p, id); err != nil || n != 17 {
		t.Fatalf("after an append: %d rows, %v; want 17", n, err)
	}
}

func equal(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestOverwriteAppendOnly: a table with delta.appendOnly refuses an
// overwrite, naming the feature, and keeps its rows; appends still land.
func TestOverwriteAppendOnly(t *testing.T) {
	wh := t.TempDir()
	p := openLocal(t, wh)
	ctx := context.Background()
	id := ident("default", "ao")
	if _, err := p.CreateTable(ctx, id, catalogtest.Schema, nil); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(wh, "default", "ao")
	var md dcodec.Metadata
	acts, err := dcodec.ParseCommit("0", mustRead(t, filepath.Join(dir, "_delta_log", dcodec.CommitName(0))))
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range acts {
		if a.MetaData != nil {
			md = *a.MetaData
		}
	}
	md.Configuration = map[string]string{"delta.appendOnly": "true"}
	enc, err := dcodec.EncodeCommit([]dcodec.Action{{MetaData: &md}})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "_delta_log", dcodec.CommitName(1)), enc, 0o644); err != nil {
		t.Fatal(err)
	}
	b := catalogtest.Batch(0, 3)
	defer b.Release()
	for _, overwrite := range []bool{false, true} {
		r, err := p.WriteBatch(ctx, id, b)
		if err != nil {
			t.Fatal(err)
		}
		if overwrite {
			_, err = p.CommitOverwrite(ctx, id, "ow", []catalogs.WriteReceipt{r})
			if !errors.Is(err, catalogs.ErrFailedPrecondition) || !strings.Contains(err.Error(), "appendOnly") {
				t.Fatalf("overwrite of an appendOnly table: %v, want FailedPrecondition naming appendOnly", err)
			}
			if err := p.Discard(ctx, id, []catalogs.WriteReceipt{r}); err != nil {
				t.Fatal(err)
			}
		} else if _, err := p.Commit(ctx, id, []catalogs.WriteReceipt{r}); err != nil {
			t.Fatal(err)
		}
	}
	if _, n, err := scanAll(t, p, id); err != nil || n != 3 {
		t.Fatalf("rows %d, %v; want the append's 3", n, err)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestOverwriteRacesAppend: an overwrite loses its version to another
// writer's append (a second provider on the warehouse, as another
// process), retries, and removes the appended file too: its removes are
// rebuilt from the newest snapshot, so the table is what the log's order
// says (the append, then the overwrite), never the overwrite with the
// appended rows silently kept, nor those rows dropped without a remove.
func TestOverwriteRacesAppend(t *testing.T) {
	wh := t.TempDir()
	p, other := openLocal(t, wh), openLocal(t, wh)
	id := ident("default", "race")
	if _, err := p.CreateTable(context.Background(), id, catalogtest.Schema, nil); err != nil {
		t.Fatal(err)
	}
	commitRows(t, p, id, 0, 3, false) // version 1
	raced := false
	defer delta.SetBeforeCommitWrite(func(_ catalogs.TableIdent, v int64) {
		if v == 2 && !raced {
			raced = true
			commitRows(t, other, id, 100, 4, false) // takes version 2
		}
	})()
	out := commitRows(t, p, id, 200, 5, true)
	if !raced || out.SnapshotID != 3 || out.Retried == 0 {
		t.Fatalf("overwrite: %+v (raced %t), want version 3 after a retry", out, raced)
	}
	bs, n, err := scanAll(t, p, id)
	if err != nil || n != 5 {
		t.Fatalf("rows %d, %v; want the overwrite's 5", n, err)
	}
	for _, r := range rowStrings(bs) {
		if !strings.HasPrefix(r, "20") {
			t.Errorf("row %s, want only the overwrite's (ids 200–204)", r)
		}
	}
	removes := 0
	for _, a := range logLines(t, filepath.Join(wh, "default", "race"), 3) {
		if _, ok := a["remove"]; ok {
			removes++
		}
	}
	if removes != 2 {
		t.Errorf("version 3 removes %d files, want 2 (version 1's and the racing append's)", removes)
	}
}

// TestCreateAppendOnly: delta.appendOnly true as a create option lists
// the writer feature appendOnly (without it the property is not active)
// and the table refuses an overwrite.
func TestCreateAppendOnly(t *testing.T) {
	wh := t.TempDir()
	p := openLocal(t, wh)
	ctx := context.Background()
	id := ident("default", "ao2")
	if _, err := p.CreateTable(ctx, id, catalogtest.Schema, map[string]string{"delta.appendOnly": "true"}); err != nil {
		t.Fatal(err)
	}
	for _, l := range logLines(t, filepath.Join(wh, "default", "ao2"), 0) {
		if b, ok := l["protocol"]; ok && !strings.Contains(string(b), `"appendOnly"`) {
			t.Errorf("protocol %s, want the writer feature appendOnly", b)
		}
	}
	b := catalogtest.Batch(0, 3)
	defer b.Release()
	r, err := p.WriteBatch(ctx, id, b)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.CommitOverwrite(ctx, id, "ow", []catalogs.WriteReceipt{r}); !errors.Is(err, catalogs.ErrFailedPrecondition) {
		t.Errorf("overwrite: %v, want FailedPrecondition", err)
	}
	if _, err := p.CreateTable(ctx, ident("default", "ao3"), catalogtest.Schema, map[string]string{"delta.appendOnly": "yes"}); !errors.Is(err, catalogs.ErrInvalidArgument) || !strings.Contains(err.Error(), "delta.appendOnly") {
		t.Errorf("delta.appendOnly yes: %v, want InvalidArgument naming it", err)
	}
}
