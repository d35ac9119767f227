package paimon_test

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/catalogs/paimon"
)

// The cross-checks with Paimon Java (mk/paimon.mk, paimon-table-check):
// TestWriteSamples writes the sample tables into -samples-out with the
// rows each should hold (expected/<table>.txt, in Tables.render's
// spelling), for `Main verify-tables` to read back with Paimon Java;
// TestReadJavaTables reads the tables `Main write-sample` wrote into
// -java-warehouse.
var (
	samplesOut    = flag.String("samples-out", "", "write the sample tables and their expected rows into this warehouse")
	javaWarehouse = flag.String("java-warehouse", "", "read the tables Paimon Java wrote into this warehouse")
)

// sampleSchema is the samples' schema: the columns Tables.writeSample uses.
var sampleSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "p", Type: arrow.BinaryTypes.String, Nullable: true},
}, nil)

// sampleRow is one row of the samples.
type sampleRow struct {
	id   int64
	name *string
	p    string
}

func (r sampleRow) render() string {
	n := "null"
	if r.name != nil {
		n = *r.name
	}
	return fmt.Sprintf("id=%d,name=%s,p=%s", r.id, n, r.p)
}

func sampleBatch(rows []sampleRow) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, sampleSchema)
	defer b.Release()
	for _, r := range rows {
		b.Field(0).(*array.Int64Builder).Append(r.id)
		if r.name == nil {
			b.Field(1).AppendNull()
		} else {
			b.Field(1).(*array.StringBuilder).Append(*r.name)
		}
		b.Field(2).(*array.StringBuilder).Append(r.p)
	}
	return b.NewRecordBatch()
}

// rowsFrom builds n rows from id first: names say which commit wrote
// them, p alternates between two partitions, every seventh name is null
// and some names are long enough for truncated string statistics.
func rowsFrom(first, n int64, commit int) []sampleRow {
	out := make([]sampleRow, 0, n)
	for i := first; i < first+n; i++ {
		name := fmt.Sprintf("c%d-%d", commit, i)
		if i%5 == 0 {
			name += "-a-name-longer-than-sixteen-characters-ü"
		}
		r := sampleRow{id: i, name: &name, p: fmt.Sprintf("p%d", i%2)}
		if i%7 == 0 {
			r.name = nil
		}
		out = append(out, r)
	}
	return out
}

// longRows builds n rows from id first with names of lo to hi bytes
// (from the id and the commit), in two partitions: string columns whose
// Take outgrows the kernel's first estimate (issue 19: with an allocator
// whose buffers had spare capacity, Paimon's split by partition and
// bucket and its merge on read cut such values or panicked).
func longRows(first, n int64, commit, lo, hi int) []sampleRow {
	out := make([]sampleRow, 0, n)
	for i := first; i < first+n; i++ {
		size := lo + int((i*7919+int64(commit)*104729)%int64(hi-lo+1))
		name := fmt.Sprintf("c%d-%d-", commit, i)
		name += strings.Repeat(string(rune('a'+i%26)), max(size-len(name), 0))
		out = append(out, sampleRow{id: i, name: &name, p: fmt.Sprintf("p%d", i%2)})
	}
	return out
}

// sample is one table the gateway writes for Paimon Java to read.
type sample struct {
	name    string
	opts    map[string]string
	commits [][]sampleRow
	// overwrite commits the last batch with CommitOverwrite.
	overwrite bool
	// overwriteAt > 0 commits that batch with CommitOverwrite too.
	overwriteAt int
	// batch is the rows per batch a stream is sent (17 when 0).
	batch int
	// defaults are the catalog's table-default.* options the table is
	// created with (manifest compaction options, which a client may not
	// set).
	defaults map[string]string
	// compact, when set, names the maintenance task (compact,
	// full_compact) run after commit compactAt; its COMPACT snapshot
	// must land. The snapshot before it and the COMPACT one are written
	// as expected/<name>@<snapshot>.txt, read by time travel.
	compact   string
	compactAt int
}

// overwrites reports whether commit i of s is an overwrite.
func (s sample) overwrites(i int) bool {
	return (s.overwrite && i == len(s.commits)-1) || (s.overwriteAt > 0 && i == s.overwriteAt)
}

// manyCommits is n commits of rows rows each from id first+i*step: a
// table whose manifests the commits merge.
func manyCommits(n int, first, step, rows int64) [][]sampleRow {
	out := make([][]sampleRow, n)
	for i := range out {
		out[i] = rowsFrom(first+int64(i)*step, rows, i)
	}
	return out
}

func samples() []sample {
	return []sample{
		{name: "g_append", commits: [][]sampleRow{rowsFrom(0, 50, 0), rowsFrom(50, 30, 1)}},
		{name: "g_fixed", opts: map[string]string{"bucket": "4", "bucket-key": "id"},
			commits: [][]sampleRow{rowsFrom(0, 100, 0), rowsFrom(100, 20, 1)}},
		{name: "g_pk", opts: map[string]string{"primary-key": "id", "bucket": "2"},
			commits: [][]sampleRow{rowsFrom(0, 40, 0), rowsFrom(20, 40, 1), rowsFrom(10, 5, 2)}},
		{name: "g_part", opts: map[string]string{"partition": "p"},
			commits: [][]sampleRow{rowsFrom(0, 30, 0), rowsFrom(30, 30, 1)}},
		{name: "g_pk_part", opts: map[string]string{"primary-key": "id,p", "partition": "p", "bucket": "3"},
			commits: [][]sampleRow{rowsFrom(0, 30, 0), rowsFrom(10, 30, 1)}},
		{name: "g_over", commits: [][]sampleRow{rowsFrom(0, 40, 0), rowsFrom(100, 7, 1)}, overwrite: true},
		// Manifest compaction: minor merges into rolled 12 KiB manifests;
		// an overwrite whose DELETE entries a full compaction drops; a
		// primary-key table whose level-0 files' manifests are merged.
		{name: "g_many", commits: manyCommits(60, 0, 2, 2),
			defaults: map[string]string{"manifest.merge-min-count": "4", "manifest.target-file-size": "12 kb"}},
		{name: "g_many_over", commits: manyCommits(20, 0, 3, 3), overwriteAt: 10,
			defaults: map[string]string{"manifest.merge-min-count": "3", "manifest.full-compaction-threshold-size": "1b"}},
		{name: "g_many_pk", opts: map[string]string{"primary-key": "id", "bucket": "2"}, commits: manyCommits(40, 0, 1, 5),
			defaults: map[string]string{"manifest.merge-min-count": "3"}},
		// Keys updated within one stream, across the level-0 files it
		// spills (samplesProps bounds the buffer), and across commits.
		{name: "g_pk_spill", opts: map[string]string{"primary-key": "id", "bucket": "2"},
			commits: [][]sampleRow{append(rowsFrom(0, 400, 0), rowsFrom(100, 150, 3)...),
				append(rowsFrom(300, 200, 1), rowsFrom(0, 50, 4)...)}},
		// Several lanes' files at once (samplesProps lowers the spread).
		{name: "g_lanes", commits: [][]sampleRow{rowsFrom(0, 3000, 0), rowsFrom(3000, 2000, 1)}},
		// Issue 19's repros: one ingest of 20,000 rows in one batch into a
		// partitioned append table; a primary-key table of 100k rows and
		// 120k updates that make values longer, through a 1 MiB write
		// buffer (spilled level-0 files merged on read).
		{name: "g_part_long", opts: map[string]string{"partition": "p"}, batch: 20000,
			commits: [][]sampleRow{longRows(0, 20000, 0, 1, 200)}},
		// Compaction (compact.go): a primary-key table whose buckets pass
		// the sorted-run trigger, compacted into the last level, then
		// written again; a partitioned one fully compacted; an append
		// table's small files.
		{name: "g_compact_pk", opts: map[string]string{"primary-key": "id", "bucket": "2"}, compact: "compact", compactAt: 6,
			commits: append(manyCommits(7, 0, 3, 6), rowsFrom(2, 4, 50))},
		{name: "g_compact_pk_part", opts: map[string]string{"primary-key": "id,p", "partition": "p", "bucket": "2"}, compact: "full_compact", compactAt: 2,
			commits: append(manyCommits(3, 0, 4, 9), rowsFrom(0, 3, 51))},
		{name: "g_compact_append", opts: map[string]string{"partition": "p"}, compact: "compact", compactAt: 5,
			commits: append(manyCommits(6, 0, 5, 5), rowsFrom(100, 2, 52))},
		{name: "g_pk_long", opts: map[string]string{"primary-key": "id", "bucket": "2"}, batch: 20000,
			defaults: map[string]string{"write-buffer-size": "1 mb"},
			commits:  [][]sampleRow{longRows(0, 100000, 0, 1, 60), longRows(0, 120000, 1, 100, 200)}},
	}
}

// samplesProps are the samples' catalog properties beyond the warehouse:
// small enough bounds that the samples' streams spill primary-key rows
// (write-buffer-size, as Paimon's table option), rotate open files
// (write.max-open-files), and, with SetLaneSpread, write through several
// lanes.
var samplesProps = map[string]string{"table-default.write-buffer-size": "2 kb", paimon.PropMaxOpenFiles: "2"}

// sampleLaneSpread is the lane spread of the samples' streams.
const sampleLaneSpread = 4 << 10

// expected is what a sample holds: every row, or for a primary-key table
// the last row written of each key.
func (s sample) expected() []string {
	var rows []sampleRow
	for i, c := range s.commits {
		if s.overwrites(i) {
			rows = nil
		}
		rows = append(rows, c...)
	}
	if s.opts["primary-key"] != "" {
		last := map[int64]sampleRow{}
		for _, r := range rows {
			last[r.id] = r
		}
		rows = rows[:0]
		for _, r := range last {
			rows = append(rows, r)
		}
	}
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r.render()
	}
	slices.Sort(out)
	return out
}

// writeSample creates and fills one sample table, one commit per batch
// (through streams, as the gateway's ingest does), in warehouse wh.
func writeSample(t *testing.T, wh string, s sample) catalogs.TableIdent {
	t.Helper()
	ctx := context.Background()
	props := sampleProps(t, wh, map[string]string{paimon.PropCreateNamespaces: "default"})
	maps.Copy(props, samplesProps)
	for k, v := range s.defaults {
		props[paimon.PropTableDefaultPrefix+k] = v
	}
	p, err := paimon.Open(ctx, "lake", props)
	if err != nil {
		t.Fatal(err)
	}
	return fillSample(t, p, s)
}

// fillSample creates and fills one sample table in p's catalog, one
// commit per batch (through streams, as the gateway's ingest does).
func fillSample(t *testing.T, p *paimon.Provider, s sample) catalogs.TableIdent {
	t.Helper()
	ctx := context.Background()
	id := catalogs.TableIdent{Catalog: "lake", Namespace: []string{"default"}, Name: s.name}
	if _, err := p.CreateTable(ctx, id, sampleSchema, s.opts); err != nil {
		t.Fatal(err)
	}
	for i, rows := range s.commits {
		ws, err := p.OpenStream(ctx, id, catalogs.WriteTxn{})
		if err != nil {
			t.Fatal(err)
		}
		for len(rows) > 0 { // several batches per stream
			n := min(len(rows), cmp.Or(s.batch, 17))
			b := sampleBatch(rows[:n])
			err := ws.Write(ctx, b)
			b.Release()
			if err != nil {
				t.Fatalf("%s: write: %v", s.name, err)
			}
			rows = rows[n:]
		}
		rs, err := ws.Close(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if s.overwrites(i) {
			_, err = p.CommitOverwrite(ctx, id, fmt.Sprintf("%s-%d", s.name, i), rs)
		} else {
			_, err = p.CommitOnce(ctx, id, fmt.Sprintf("%s-%d", s.name, i), rs)
		}
		if err != nil {
			t.Fatalf("%s: commit %d: %v", s.name, i, err)
		}
		if s.compact != "" && i == s.compactAt {
			rep, err := p.Maintain(ctx, id, catalogs.MaintainRequest{Tasks: []string{s.compact}})
			if err != nil || !rep.Tasks[0].Committed {
				t.Fatalf("%s: %s after commit %d: %+v, %v", s.name, s.compact, i, rep, err)
			}
		}
	}
	return id
}

// scanRendered reads a table with the backend's Scan, rendered and sorted.
func scanRendered(t *testing.T, p *paimon.Provider, id catalogs.TableIdent) []string {
	t.Helper()
	res, err := p.Scan(context.Background(), id, catalogs.ScanRequest{Columns: []string{"id", "name", "p"}})
	if err != nil {
		t.Fatalf("scan %s: %v", id, err)
	}
	defer res.Reader.Release()
	var out []string
	for res.Reader.Next() {
		b := res.Reader.RecordBatch()
		ids := b.Column(0).(*array.Int64)
		names := b.Column(1).(*array.String)
		ps := b.Column(2).(*array.String)
		for i := range int(b.NumRows()) {
			r := sampleRow{id: ids.Value(i), p: ps.Value(i)}
			if names.IsValid(i) {
				n := names.Value(i)
				r.name = &n
			}
			out = append(out, r.render())
		}
	}
	if err := res.Reader.Err(); err != nil {
		t.Fatalf("scan %s: %v", id, err)
	}
	slices.Sort(out)
	return out
}

// TestSamplesRoundTrip writes every sample and reads it back with the
// backend's own scan (merge-on-read for the primary-key tables).
func TestSamplesRoundTrip(t *testing.T) {
	defer paimon.SetLaneSpread(sampleLaneSpread)()
	p, wh := openLocal(t, samplesProps)
	for _, s := range samples() {
		id := writeSample(t, wh, s)
		if got, want := scanRendered(t, p, id), s.expected(); !slices.Equal(got, want) {
			t.Errorf("%s: scan gave %d rows, want %d:\n got %v\nwant %v", s.name, len(got), len(want), got, want)
		}
	}
}

// TestWriteSamples writes the samples for Paimon Java (run by make
// paimon-table-check with -samples-out).
func TestWriteSamples(t *testing.T) {
	if *samplesOut == "" {
		t.Skip("-samples-out not set")
	}
	exp := filepath.Join(*samplesOut, "expected")
	if isS3(*samplesOut) {
		if exp = *samplesExpected; exp == "" {
			t.Fatal("an s3:// -samples-out needs -samples-expected")
		}
		defer paimon.SetS3PartSize(s3SamplePartSize)()
	} else if err := os.RemoveAll(*samplesOut); err != nil {
		t.Fatal(err)
	}
	defer paimon.SetLaneSpread(sampleLaneSpread)()
	if err := os.MkdirAll(exp, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name string, want []string) {
		body := fmt.Sprintf("ROWS %d\n%s\n", len(want), strings.Join(want, "\n"))
		if err := os.WriteFile(filepath.Join(exp, name+".txt"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range samples() {
		writeSample(t, *samplesOut, s)
		write(s.name, s.expected())
		if s.compact != "" {
			// Snapshot compactAt+1 is the last before the compaction,
			// compactAt+2 the COMPACT one: both hold those commits' rows.
			before := s
			before.commits = s.commits[:s.compactAt+1]
			write(fmt.Sprintf("%s@%d", s.name, s.compactAt+1), before.expected())
			write(fmt.Sprintf("%s@%d", s.name, s.compactAt+2), before.expected())
		}
	}
}

// TestReadSamplesBack reads the samples in -samples-out back with the
// backend's scan after Paimon Java compacted their manifests (make
// paimon-table-check: compact-manifests).
func TestReadSamplesBack(t *testing.T) {
	if *samplesOut == "" {
		t.Skip("-samples-out not set")
	}
	p, err := paimon.Open(context.Background(), "lake", map[string]string{paimon.PropWarehouse: *samplesOut})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range samples() {
		id := catalogs.TableIdent{Catalog: "lake", Namespace: []string{"default"}, Name: s.name}
		if got, want := scanRendered(t, p, id), s.expected(); !slices.Equal(got, want) {
			t.Errorf("%s after Java's manifest compaction: got %d rows, want %d", s.name, len(got), len(want))
		}
	}
}

// javaSampleTables are the tables of Tables.writeSample, sorted.
var javaSampleTables = []string{"j_append", "j_fixed", "j_part", "j_pk"}

// javaSampleRows are the rows Tables.writeSample leaves in a table: two
// commits of ten rows, the second updating every key of the primary-key
// table.
func javaSampleRows(name string) []sampleRow {
	var out []sampleRow
	for commit := 0; commit < 2; commit++ {
		for i := int64(0); i < 10; i++ {
			k := int64(commit)*10 + i
			if name == "j_pk" {
				k = i
				if commit == 0 {
					continue // updated by the second commit
				}
			}
			n := fmt.Sprintf("n%d-%d", commit, i)
			out = append(out, sampleRow{id: k, name: &n, p: fmt.Sprintf("p%d", i%2)})
		}
	}
	return out
}

// TestReadJavaTables reads the tables Paimon Java's write-sample wrote:
// two commits of ten rows each into append, fixed-bucket, primary-key
// (the second commit updates every key) and partitioned tables.
func TestReadJavaTables(t *testing.T) {
	if *javaWarehouse == "" {
		t.Skip("-java-warehouse not set")
	}
	p, err := paimon.Open(context.Background(), "lake", sampleProps(t, *javaWarehouse, nil))
	if err != nil {
		t.Fatal(err)
	}
	names := javaSampleTables
	// Listing finds them too (on S3, past Java's directory markers).
	if ns, err := p.ListNamespaces(context.Background()); err != nil || !slices.ContainsFunc(ns, func(n []string) bool { return slices.Equal(n, []string{"db"}) }) {
		t.Errorf("ListNamespaces: %v (%v), want db among them", ns, err)
	}
	ids, err := p.ListTables(context.Background(), []string{"db"})
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, id := range ids {
		listed = append(listed, id.Name)
	}
	if slices.Sort(listed); !slices.Equal(listed, names) {
		t.Errorf("ListTables(db): %v, want %v", listed, names)
	}
	for _, name := range names {
		id := catalogs.TableIdent{Catalog: "lake", Namespace: []string{"db"}, Name: name}
		var want []string
		for _, r := range javaSampleRows(name) {
			want = append(want, r.render())
		}
		slices.Sort(want)
		if got := scanRendered(t, p, id); !slices.Equal(got, want) {
			t.Errorf("%s: got %v, want %v", name, got, want)
		}
	}
}
