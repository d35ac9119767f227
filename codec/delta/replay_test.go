package delta

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// memLog is a Log held in memory, for logs the tests rearrange.
type memLog map[string][]byte

func (m memLog) List(context.Context) ([]string, error) {
	var out []string
	for k := range m {
		if !strings.Contains(k, "/") {
			out = append(out, k)
		}
	}
	return out, nil
}

func (m memLog) Read(_ context.Context, name string) ([]byte, error) {
	b, ok := m[name]
	if !ok {
		return nil, &fs.PathError{Op: "read", Path: name, Err: fs.ErrNotExist}
	}
	return b, nil
}

func loadDirLog(t *testing.T, table string) memLog {
	t.Helper()
	dir := filepath.Join("testdata/tables", table, "_delta_log")
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	m := memLog{}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		m[e.Name()] = b
	}
	return m
}

func readParquetTable(t *testing.T, b []byte) arrow.Table {
	t.Helper()
	pf, err := file.NewParquetReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := fr.ReadTable(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

func writeParquetTable(t *testing.T, tbl arrow.Table) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := pqarrow.WriteTable(tbl, &buf, 1024, nil, pqarrow.DefaultWriterProps()); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// selectColumns keeps the named top-level columns of tbl.
func selectColumns(tbl arrow.Table, names ...string) arrow.Table {
	var fields []arrow.Field
	var cols []arrow.Column
	for _, n := range names {
		idx := tbl.Schema().FieldIndices(n)
		if len(idx) == 0 {
			continue
		}
		fields = append(fields, tbl.Schema().Field(idx[0]))
		cols = append(cols, *tbl.Column(idx[0]))
	}
	return array.NewTable(arrow.NewSchema(fields, nil), cols, tbl.NumRows())
}

func sliceTable(tbl arrow.Table, i, j int64) arrow.Table {
	cols := make([]arrow.Column, tbl.NumCols())
	for c := range cols {
		ch := array.NewChunkedSlice(tbl.Column(c).Data(), i, j)
		cols[c] = *arrow.NewColumn(tbl.Schema().Field(c), ch)
		ch.Release()
	}
	return array.NewTable(tbl.Schema(), cols, j-i)
}

const cpName = "00000000000000000009.checkpoint.parquet"

func dropCommitsUpTo(m memLog, v int64) {
	for i := int64(0); i <= v; i++ {
		delete(m, CommitName(i))
	}
}

func lastExpected(t *testing.T, table string) expectedVersion {
	exp := readExpected(t, filepath.Join("testdata/tables", table))
	return exp[len(exp)-1]
}

// TestCheckpointReplay: with the commits the checkpoint covers removed (metadata cleanup),
// replay starts from deltalake's classic checkpoint and still agrees with deltalake; a
// version before the checkpoint is then not found.
func TestCheckpointReplay(t *testing.T) {
	m := loadDirLog(t, "checkpoint")
	dropCommitsUpTo(m, 9)
	s, err := Load(context.Background(), m, -1)
	if err != nil {
		t.Fatal(err)
	}
	if s.Checkpoint != cpName {
		t.Fatalf("replayed from %q, want %s", s.Checkpoint, cpName)
	}
	if s.LastCheckpoint == nil || s.LastCheckpoint.Version != 9 {
		t.Errorf("_last_checkpoint %+v, want version 9", s.LastCheckpoint)
	}
	checkSnapshot(t, s, lastExpected(t, "checkpoint"))
	if _, err := Load(context.Background(), m, 5); !errors.Is(err, ErrVersionNotFound) {
		t.Errorf("version 5 after cleanup: %v, want ErrVersionNotFound", err)
	}
}

// TestMultipartCheckpoint splits deltalake's checkpoint into parts: all parts present,
// replay uses them; one missing, the checkpoint is ignored (the protocol: a multi-part
// checkpoint with missing parts must be ignored) and replay falls back to the commits.
func TestMultipartCheckpoint(t *testing.T) {
	m := loadDirLog(t, "checkpoint")
	tbl := readParquetTable(t, m[cpName])
	defer tbl.Release()
	n := tbl.NumRows()
	cuts := []int64{0, n / 3, 2 * n / 3, n}
	names := []string{
		"00000000000000000009.checkpoint.0000000001.0000000003.parquet",
		"00000000000000000009.checkpoint.0000000002.0000000003.parquet",
		"00000000000000000009.checkpoint.0000000003.0000000003.parquet",
	}
	for i := range names {
		part := sliceTable(tbl, cuts[i], cuts[i+1])
		m[names[i]] = writeParquetTable(t, part)
		part.Release()
	}
	delete(m, cpName)
	exp := lastExpected(t, "checkpoint")

	full := memLog{}
	for k, v := range m {
		full[k] = v
	}
	dropCommitsUpTo(m, 9)
	s, err := Load(context.Background(), m, -1)
	if err != nil {
		t.Fatal(err)
	}
	if s.Checkpoint != names[0] {
		t.Fatalf("replayed from %q, want the multi-part checkpoint", s.Checkpoint)
	}
	checkSnapshot(t, s, exp)

	delete(full, names[1])
	s, err = Load(context.Background(), full, -1)
	if err != nil {
		t.Fatal(err)
	}
	if s.Checkpoint != "" {
		t.Errorf("replayed from incomplete checkpoint %q", s.Checkpoint)
	}
	checkSnapshot(t, s, exp)
}

// TestV2CheckpointSidecars builds a UUID-named JSON V2 checkpoint whose file actions are in
// a sidecar (deltalake's checkpoint rows, add and remove columns only).
func TestV2CheckpointSidecars(t *testing.T) {
	m := loadDirLog(t, "checkpoint")
	ctx := context.Background()
	at9, err := Load(ctx, m, 9)
	if err != nil {
		t.Fatal(err)
	}
	tbl := readParquetTable(t, m[cpName])
	defer tbl.Release()
	side := selectColumns(tbl, "add", "remove")
	m["_sidecars/016ae953-37a9-438e-8683-9a9a4a79a395.parquet"] = writeParquetTable(t, side)
	side.Release()

	acts := []Action{{CheckpointMetadata: &CheckpointMetadata{Version: 9}}, {Protocol: &at9.Protocol}, {MetaData: &at9.Metadata}}
	for _, tx := range at9.Txns {
		acts = append(acts, Action{Txn: &tx})
	}
	acts = append(acts, Action{Sidecar: &Sidecar{Path: "016ae953-37a9-438e-8683-9a9a4a79a395.parquet", SizeInBytes: 1, ModificationTime: 1}})
	body, err := EncodeCommit(acts)
	if err != nil {
		t.Fatal(err)
	}
	const v2 = "00000000000000000009.checkpoint.80a083e8-7026-4e79-81be-64bd76c43a11.json"
	m[v2] = body
	delete(m, cpName)
	dropCommitsUpTo(m, 9)

	s, err := Load(ctx, m, -1)
	if err != nil {
		t.Fatal(err)
	}
	if s.Checkpoint != v2 {
		t.Fatalf("replayed from %q, want %s", s.Checkpoint, v2)
	}
	checkSnapshot(t, s, lastExpected(t, "checkpoint"))

	// A V2 checkpoint missing its checkpointMetadata is malformed.
	m[v2] = bytes.Replace(body, []byte(`{"checkpointMetadata":{"version":9}}`+"\n"), nil, 1)
	if _, err := Load(ctx, m, -1); !errors.Is(err, ErrMalformed) {
		t.Errorf("v2 checkpoint without checkpointMetadata: %v, want ErrMalformed", err)
	}
	// A sidecar that is gone is an error, never a silently smaller table.
	m[v2] = body
	delete(m, "_sidecars/016ae953-37a9-438e-8683-9a9a4a79a395.parquet")
	if _, err := Load(ctx, m, -1); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing sidecar: %v, want fs.ErrNotExist", err)
	}
}

// TestV2ParquetCheckpoint: a UUID-named Parquet V2 checkpoint (deltalake's checkpoint rows
// plus the checkpointMetadata column) replays like the classic one.
func TestV2ParquetCheckpoint(t *testing.T) {
	m := loadDirLog(t, "checkpoint")
	tbl := readParquetTable(t, m[cpName])
	defer tbl.Release()
	cmType := arrow.StructOf(
		arrow.Field{Name: "version", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		arrow.Field{Name: "tags", Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.BinaryTypes.String), Nullable: true})
	rows := make([]string, tbl.NumRows())
	for i := range rows {
		rows[i] = "null"
	}
	rows[0] = `{"version":9,"tags":[{"key":"numOfAddFiles","value":"10"}]}`
	cm, _, err := array.FromJSON(memory.DefaultAllocator, cmType, strings.NewReader("["+strings.Join(rows, ",")+"]"))
	if err != nil {
		t.Fatal(err)
	}
	defer cm.Release()
	fields := append(tbl.Schema().Fields(), arrow.Field{Name: "checkpointMetadata", Type: cmType, Nullable: true})
	cols := make([]arrow.Column, 0, len(fields))
	for c := 0; c < int(tbl.NumCols()); c++ {
		cols = append(cols, *tbl.Column(c))
	}
	ch := arrow.NewChunked(cmType, []arrow.Array{cm})
	cols = append(cols, *arrow.NewColumn(fields[len(fields)-1], ch))
	v2tbl := array.NewTable(arrow.NewSchema(fields, nil), cols, tbl.NumRows())
	defer v2tbl.Release()

	const v2 = "00000000000000000009.checkpoint.3a0d65cd-4056-49b8-937b-95f9e3ee90e5.parquet"
	m[v2] = writeParquetTable(t, v2tbl)
	delete(m, cpName)
	dropCommitsUpTo(m, 9)
	s, err := Load(context.Background(), m, -1)
	if err != nil {
		t.Fatal(err)
	}
	if s.Checkpoint != v2 {
		t.Fatalf("replayed from %q", s.Checkpoint)
	}
	checkSnapshot(t, s, lastExpected(t, "checkpoint"))

	// The same file without checkpointMetadata is not a valid UUID-named checkpoint.
	m[v2] = writeParquetTable(t, tbl)
	if _, err := Load(context.Background(), m, -1); !errors.Is(err, ErrMalformed) {
		t.Errorf("uuid-named checkpoint without checkpointMetadata: %v", err)
	}
}

// TestTombstones: deltalake's delete leaves removes; they are tombstones until the
// retention passes.
func TestTombstones(t *testing.T) {
	s, err := Load(context.Background(), loadDirLog(t, "checkpoint"), -1)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Tombstones) != 2 {
		t.Fatalf("%d tombstones, want the 2 files the delete removed", len(s.Tombstones))
	}
	ts := *s.Tombstones[0].DeletionTimestamp
	week, err := ParseInterval("interval 1 week")
	if err != nil {
		t.Fatal(err)
	}
	at := func(ms int64) time.Time { return time.UnixMilli(ms) }
	if n := len(s.LiveTombstones(at(ts+3600_000), week)); n != 2 {
		t.Errorf("an hour later %d live tombstones, want 2", n)
	}
	if n := len(s.LiveTombstones(at(ts+8*24*3600_000), week)); n != 0 {
		t.Errorf("eight days later %d live tombstones, want 0", n)
	}
	for _, r := range s.Tombstones {
		for _, f := range s.Files {
			if f.Path == r.Path {
				t.Errorf("%s is both live and a tombstone", r.Path)
			}
		}
	}
}
