// Command commits benchmarks many writers appending to one table through
// one gateway (issue 10, "Many writers, one table"):
//
//	go run ./integration/bench/commits -bin bin/flightgw [-writers 16] [-appends 50] [-rows 100]
//
// Each writer has its own ADBC Go driver connection and makes its appends
// one after the other, each an auto-commit bulk ingest (mode append) of
// -rows rows with keys of its own, over Flight SQL only. The gateway runs
// twice on a fresh embedded lake: with group commit (the default), then
// with the Iceberg catalog property commit.group.enabled=false as the
// reference, each commit its own compare-and-swap loop.
//
// For each run it prints appends landed/attempted, duplicate rows (rows
// minus distinct keys, counted with a query; must be 0), wall time,
// commits per second, the table's snapshots, the bytes of its metadata
// directory, the slowest append, and the first error; then the ratios.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-adbc/go/adbc"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go/table"

	"github.com/flightgw/flightgw/integration/bench/benchutil"
)

var schema = arrow.NewSchema([]arrow.Field{
	{Name: "k", Type: arrow.PrimitiveTypes.Int64},
	{Name: "writer", Type: arrow.PrimitiveTypes.Int32},
	{Name: "v", Type: arrow.BinaryTypes.String},
}, nil)

const tableName = "commits"

func main() {
	bin := flag.String("bin", "bin/flightgw", "gateway binary")
	writers := flag.Int("writers", 16, "concurrent writers")
	appends := flag.Int("appends", 50, "appends per writer")
	rows := flag.Int("rows", 100, "rows per append")
	flag.Parse()
	if err := run(*bin, *writers, *appends, *rows); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// result is what one gateway run measured.
type result struct {
	landed, attempted int
	rows, distinct    int64
	wall, slowest     time.Duration
	snapshots         int
	metaBytes         int64
	firstErr          string
	errKinds          map[string]int
}

func run(bin string, writers, appends, rows int) error {
	tmp, err := os.MkdirTemp("", "flightgw-bench-commits-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	fmt.Printf("%d writers x %d auto-commit appends x %d rows to one table, one gateway, ADBC over Flight SQL\n",
		writers, appends, rows)
	var res [2]result
	for i, group := range []bool{true, false} {
		name := "group commit (default)"
		if !group {
			name = "commit.group.enabled=false"
		}
		r, err := gatewayRun(bin, filepath.Join(tmp, fmt.Sprint("run", i)), group, writers, appends, rows)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		res[i] = r
		print(name, r)
	}
	g, ref := res[0], res[1]
	fmt.Printf("ratio group/reference: commits/s %.2fx, wall %.2fx faster, slowest append %.2fx shorter, snapshots %.2fx fewer, metadata %.2fx smaller\n",
		rate(g)/max(rate(ref), 1e-9), ref.wall.Seconds()/g.wall.Seconds(), ref.slowest.Seconds()/g.slowest.Seconds(),
		float64(ref.snapshots)/float64(max(g.snapshots, 1)), float64(ref.metaBytes)/float64(max(g.metaBytes, 1)))
	if g.landed != g.attempted || g.rows != g.distinct || (ref.rows != ref.distinct) {
		return errors.New("an append did not land, or a row landed twice")
	}
	return nil
}

func rate(r result) float64 { return float64(r.landed) / r.wall.Seconds() }

func print(name string, r result) {
	fmt.Printf("%-28s landed %d/%d  duplicate rows %d (rows %d, distinct keys %d)  wall %.2fs  %.1f commits/s  snapshots %d  metadata %.1f MB  slowest append %.2fs\n",
		name+":", r.landed, r.attempted, r.rows-r.distinct, r.rows, r.distinct, r.wall.Seconds(), rate(r),
		r.snapshots, float64(r.metaBytes)/1e6, r.slowest.Seconds())
	if r.firstErr != "" {
		var kinds []string
		for k, n := range r.errKinds {
			kinds = append(kinds, fmt.Sprintf("%d× %s", n, k))
		}
		sort.Strings(kinds)
		fmt.Printf("%-28s errors: %s; first: %s\n", "", strings.Join(kinds, ", "), r.firstErr)
	}
}

// gatewayRun starts a gateway on a fresh lake in dataDir and runs the
// writers against it.
func gatewayRun(bin, dataDir string, group bool, writers, appends, rows int) (result, error) {
	var res result
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return res, err
	}
	abs, _ := filepath.Abs(dataDir)
	cfg := fmt.Sprintf(`data_dir: %[1]s
limits:
  max_concurrent_writes: %[2]d
  # Every writer is the one anonymous principal: its share is the whole
  # limit (a share equal to the limit is no per-principal bound).
  per_principal_writes: %[2]d
catalogs:
  - name: lake
    type: iceberg
    properties:
      catalog-type: sql
      uri: sqlite:///%[1]s/catalog.db
      warehouse: file://%[1]s/warehouse
      create-namespaces: default
      commit.group.enabled: "%[3]t"
`, abs, writers, group)
	cfgPath := filepath.Join(dataDir, "flightgw.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		return res, err
	}
	gw, err := benchutil.StartGateway(bin, nil, "--config", cfgPath)
	if err != nil {
		return res, err
	}
	defer gw.Stop()
	ctx := context.Background()
	db, err := benchutil.Database(gw.Addr)
	if err != nil {
		return res, err
	}
	defer db.Close()
	// The table, created empty by a first ingest outside the timing.
	if err := ingest(ctx, db, adbc.OptionValueIngestModeCreate, batch(-1, 0, 0)); err != nil {
		return res, fmt.Errorf("create table: %w", err)
	}

	res.attempted = writers * appends
	res.errKinds = map[string]int{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := time.Now()
	for w := range writers {
		wg.Go(func() {
			cnxn, err := db.Open(ctx)
			if err != nil {
				mu.Lock()
				res.firstErr = err.Error()
				mu.Unlock()
				return
			}
			defer cnxn.Close()
			for i := range appends {
				b := batch(w, i, rows)
				t0 := time.Now()
				err := ingestOn(ctx, cnxn, adbc.OptionValueIngestModeAppend, b)
				d := time.Since(t0)
				b.Release()
				mu.Lock()
				res.slowest = max(res.slowest, d)
				if err == nil {
					res.landed++
				} else {
					res.errKinds[errKind(err)]++
					if res.firstErr == "" {
						res.firstErr = err.Error()
					}
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	res.wall = time.Since(start)
	if res.rows, res.distinct, err = count(ctx, db); err != nil {
		return res, fmt.Errorf("count rows: %w", err)
	}
	res.snapshots, res.metaBytes, err = metadataOnDisk(filepath.Join(abs, "warehouse"))
	return res, err
}

// errKind shortens an error to what tells kinds apart.
func errKind(err error) string {
	msg := err.Error()
	for _, k := range []string{"gave up after", "ran out of time", "deadline", "DeadlineExceeded", "Unavailable", "Aborted"} {
		if strings.Contains(msg, k) {
			return k
		}
	}
	if len(msg) > 60 {
		msg = msg[:60]
	}
	return msg
}

// batch is writer w's append i: keys w*1e9 + i*rows + [0, rows).
func batch(w, i, rows int) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for j := range rows {
		k := int64(w)*1_000_000_000 + int64(i*rows+j)
		b.Field(0).(*array.Int64Builder).Append(k)
		b.Field(1).(*array.Int32Builder).Append(int32(w))
		b.Field(2).(*array.StringBuilder).Append("value-" + strconv.FormatInt(k, 10))
	}
	return b.NewRecordBatch()
}

func ingest(ctx context.Context, db adbc.Database, mode string, b arrow.RecordBatch) error {
	defer b.Release()
	cnxn, err := db.Open(ctx)
	if err != nil {
		return err
	}
	defer cnxn.Close()
	return ingestOn(ctx, cnxn, mode, b)
}

func ingestOn(ctx context.Context, cnxn adbc.Connection, mode string, b arrow.RecordBatch) error {
	stmt, err := cnxn.NewStatement()
	if err != nil {
		return err
	}
	defer stmt.Close()
	if err := stmt.SetOption(adbc.OptionKeyIngestTargetTable, tableName); err != nil {
		return err
	}
	if err := stmt.SetOption(adbc.OptionKeyIngestMode, mode); err != nil {
		return err
	}
	if err := stmt.Bind(ctx, b); err != nil {
		return err
	}
	n, err := stmt.ExecuteUpdate(ctx)
	if err == nil && n != b.NumRows() {
		err = fmt.Errorf("ingested %d rows, want %d", n, b.NumRows())
	}
	return err
}

// count counts the table's rows and distinct keys with a query.
func count(ctx context.Context, db adbc.Database) (int64, int64, error) {
	cnxn, err := db.Open(ctx)
	if err != nil {
		return 0, 0, err
	}
	defer cnxn.Close()
	stmt, err := cnxn.NewStatement()
	if err != nil {
		return 0, 0, err
	}
	defer stmt.Close()
	if err := stmt.SetSqlQuery("SELECT count(*), count(DISTINCT k) FROM " + tableName); err != nil {
		return 0, 0, err
	}
	rd, _, err := stmt.ExecuteQuery(ctx)
	if err != nil {
		return 0, 0, err
	}
	defer rd.Release()
	if !rd.Next() || rd.RecordBatch().NumRows() != 1 {
		return 0, 0, fmt.Errorf("count query returned no row: %v", rd.Err())
	}
	rec := rd.RecordBatch()
	return rec.Column(0).(*array.Int64).Value(0), rec.Column(1).(*array.Int64).Value(0), nil
}

// metadataOnDisk finds the table's metadata directory under the
// warehouse and returns the snapshots of its newest metadata file and the
// bytes of everything in the directory.
func metadataOnDisk(warehouse string) (int, int64, error) {
	var dir string
	err := filepath.WalkDir(warehouse, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() && d.Name() == "metadata" && filepath.Base(filepath.Dir(p)) == tableName {
			dir = p
			return fs.SkipAll
		}
		return err
	})
	if err != nil || dir == "" {
		return 0, 0, fmt.Errorf("no metadata directory of %s under %s: %v", tableName, warehouse, err)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0, 0, err
	}
	var bytes int64
	newest, newestV := "", -1
	for _, e := range ents {
		info, err := e.Info()
		if err != nil {
			return 0, 0, err
		}
		bytes += info.Size()
		if v, err := strconv.Atoi(strings.SplitN(e.Name(), "-", 2)[0]); err == nil && strings.HasSuffix(e.Name(), ".metadata.json") && v > newestV {
			newest, newestV = e.Name(), v
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, newest))
	if err != nil {
		return 0, 0, err
	}
	meta, err := table.ParseMetadataBytes(b)
	if err != nil {
		return 0, 0, err
	}
	return len(meta.Snapshots()), bytes, nil
}
