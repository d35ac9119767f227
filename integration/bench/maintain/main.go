// Command maintain benchmarks what table maintenance buys a table written
// by many small commits (issue 27):
//
//	go run ./integration/bench/maintain -bin bin/flightgw [-catalog iceberg|delta|paimon] [-appends 1000] [-rows 1000]
//
// One gateway on a fresh embedded Iceberg lake, or with -catalog delta or
// paimon on a Delta or Paimon catalog of local files. Table "appends_off" gets -appends
// auto-commit appends of -rows rows (ADBC bulk ingest, mode append, one
// connection, one after the other); table "appends_on" the same, then one
// MaintainTable with the table's defaults (Iceberg: rewrite_data_files,
// expire_snapshots, rewrite_manifests; Delta: optimize, checkpoint;
// Paimon: compact, the append table's small files, expire_snapshots); table
// "one_commit" the same rows in one ingest. On Iceberg the two appended
// tables are created with the options a continuous writer's table sets
// (snapshots older than a second may expire, metadata.json files that
// leave the metadata log are deleted; docs/maintenance.md). For each it
// times a full-table aggregate (SELECT count(*), sum(k), max(v), the
// median of -rounds rounds (5) over the three tables, after every table is
// written), and prints its live data files and metadata bytes and files
// (Iceberg: its metadata directory, and the newest metadata.json, which
// every load reads; Delta: its _delta_log's; Paimon: its snapshot and
// manifest directories), appends_on's before the maintenance too; then the
// aggregate's ratio to "one_commit" with maintenance off and on.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-adbc/go/adbc"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/flightgw/flightgw/client"
	"github.com/flightgw/flightgw/codec/actions"
	"github.com/flightgw/flightgw/integration/bench/benchutil"
)

var schema = arrow.NewSchema([]arrow.Field{
	{Name: "k", Type: arrow.PrimitiveTypes.Int64},
	{Name: "v", Type: arrow.BinaryTypes.String},
}, nil)

func main() {
	bin := flag.String("bin", "bin/flightgw", "gateway binary")
	appends := flag.Int("appends", 1000, "auto-commit appends")
	rows := flag.Int("rows", 1000, "rows per append")
	catalog := flag.String("catalog", "iceberg", "iceberg (the embedded lake), delta or paimon")
	rounds := flag.Int("rounds", 5, "rounds of the three aggregates (the median is reported)")
	keep := flag.Bool("keep", false, "keep the data directory (its path is printed) to look at the tables after")
	flag.Parse()
	if _, ok := formats[*catalog]; !ok {
		fmt.Fprintf(os.Stderr, "bench: -catalog %q: iceberg, delta or paimon\n", *catalog)
		os.Exit(2)
	}
	if *rounds < 1 {
		fmt.Fprintln(os.Stderr, "bench: -rounds must be at least 1")
		os.Exit(2)
	}
	if err := run(*bin, *catalog, *appends, *rows, *rounds, *keep); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// formats are what differs between the catalogs: the gateway's
// configuration, where a table's metadata lives, the maintenance run.
var formats = map[string]struct {
	config string // a config file's text; "" for the embedded lake
	meta   func(dir, table string) []string
	tasks  []string
	// opts are the table options the appended tables are created with.
	opts map[string]string
}{
	"iceberg": {
		meta: func(dir, t string) []string {
			return []string{filepath.Join(dir, "warehouse", "default.db", t, "metadata")}
		},
		tasks: []string{"rewrite_data_files", "expire_snapshots", "rewrite_manifests"},
		// What a table written by a continuous writer sets: snapshots
		// older than a second may expire (Iceberg's default keeps 5
		// days of them, every one in every metadata.json), and the
		// metadata.json files that leave the metadata log (100) are
		// deleted at the next commit (Iceberg's default keeps them for
		// the orphan reclaimer).
		opts: map[string]string{"history.expire.max-snapshot-age-ms": "1000", "write.metadata.delete-after-commit.enabled": "true"},
	},
	"delta": {
		config: "catalogs:\n  - name: dl\n    type: delta\n    properties: {warehouse: %q, create-namespaces: default}\ndefault_catalog: dl\n",
		meta:   func(dir, t string) []string { return []string{filepath.Join(dir, "delta", "default", t, "_delta_log")} },
		tasks:  []string{"optimize", "checkpoint"},
	},
	"paimon": {
		config: "catalogs:\n  - name: pm\n    type: paimon\n    properties: {warehouse: %q, create-namespaces: default}\ndefault_catalog: pm\n",
		meta: func(dir, t string) []string {
			d := filepath.Join(dir, "paimon", "default.db", t)
			return []string{filepath.Join(d, "snapshot"), filepath.Join(d, "manifest")}
		},
		tasks: []string{"compact", "expire_snapshots"},
	},
}

func run(bin, catalog string, appends, rows, rounds int, keep bool) error {
	dir, err := os.MkdirTemp("", "flightgw-bench-maintain-")
	if err != nil {
		return err
	}
	if keep {
		defer fmt.Println("kept:", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	f := formats[catalog]
	var args []string
	if f.config != "" {
		cfg := filepath.Join(dir, "flightgw.yaml")
		if err := os.WriteFile(cfg, fmt.Appendf(nil, f.config, filepath.Join(dir, catalog)), 0o644); err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Join(dir, catalog), 0o755); err != nil {
			return err
		}
		args = []string{"--config", cfg}
	}
	gw, err := benchutil.StartGateway(bin, []string{"FLIGHTGW_DATA_DIR=" + dir}, args...)
	if err != nil {
		return err
	}
	defer gw.Stop()
	ctx := context.Background()
	db, err := benchutil.Database(gw.Addr)
	if err != nil {
		return err
	}
	defer db.Close()
	cnxn, err := db.Open(ctx)
	if err != nil {
		return err
	}
	defer cnxn.Close()
	fc, err := flightsql.NewClient(gw.Addr, nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer fc.Close()
	fmt.Printf("%d auto-commit appends x %d rows to one %s table, then a full-table aggregate, one gateway, ADBC over Flight SQL\n", appends, rows, catalog)

	// Every table is written (and maintained) first, then the aggregates
	// are timed in interleaved rounds: the first query of a process, and
	// load that comes and goes, then weigh on every table alike.
	type written struct {
		name  string
		took  time.Duration
		files int
	}
	var tables []written

	// The reference: the same batches in one ingest stream, one commit.
	var all []arrow.RecordBatch
	for i := range appends {
		all = append(all, batch(i*rows, rows))
	}
	rd, err := array.NewRecordReader(schema, all)
	if err != nil {
		return err
	}
	t0 := time.Now()
	err = ingestStream(ctx, cnxn, "one_commit", rd)
	rd.Release()
	for _, b := range all {
		b.Release()
	}
	if err != nil {
		return fmt.Errorf("one_commit: %w", err)
	}
	tables = append(tables, written{"one_commit", time.Since(t0), 1})
	if len(f.opts) > 0 {
		fmt.Printf("the appended tables are created with %v\n", f.opts)
	}
	for _, name := range []string{"appends_off", "appends_on"} {
		t0 := time.Now()
		for i := range appends {
			var err error
			if i == 0 {
				err = create(ctx, fc, name, f.opts, batch(0, rows))
			} else {
				err = ingestOn(ctx, cnxn, name, adbc.OptionValueIngestModeAppend, batch(i*rows, rows))
			}
			if err != nil {
				return fmt.Errorf("%s: append %d: %w", name, i, err)
			}
		}
		took, files := time.Since(t0), appends
		if name == "appends_on" {
			m, err := metaOf(f.meta(dir, name))
			if err != nil {
				return err
			}
			fmt.Printf("%-34s %s\n", "appends_on before MaintainTable:", m)
			m0 := time.Now()
			res, err := client.MaintainTable(ctx, fc, actions.MaintainRequest{TableRef: actions.TableRef{Table: name}, Tasks: f.tasks})
			if err != nil {
				return fmt.Errorf("MaintainTable: %w", err)
			}
			rw := res.Tasks[0]
			if !rw.Committed {
				return errors.New("the rewrite did not commit: " + rw.Abandoned)
			}
			files = appends - rw.RewrittenFiles + rw.AddedFiles
			if catalog == "delta" {
				fmt.Printf("%-34s optimize rewrote %d files into %d in %.2fs; checkpoint task wrote one: %v (OPTIMIZE's version may be a checkpoint's)\n", "MaintainTable appends_on:",
					rw.RewrittenFiles, rw.AddedFiles, time.Since(m0).Seconds(), res.Tasks[1].Committed)
			} else if catalog == "paimon" {
				fmt.Printf("%-34s compact rewrote %d files into %d in %.2fs; expired %d snapshots\n", "MaintainTable appends_on:",
					rw.RewrittenFiles, rw.AddedFiles, time.Since(m0).Seconds(), len(res.Tasks[1].ExpiredSnapshots))
			} else {
				rm := res.Tasks[2]
				fmt.Printf("%-34s rewrote %d files into %d, %d manifests into %d, in %.2fs; expired %d snapshots, %d retained\n", "MaintainTable appends_on:",
					rw.RewrittenFiles, rw.AddedFiles, rm.RewrittenFiles, rm.AddedFiles, time.Since(m0).Seconds(), len(res.Tasks[1].ExpiredSnapshots),
					res.Tasks[1].RetainedSnapshots)
			}
		}
		tables = append(tables, written{name, took, files})
	}

	times := make([][]time.Duration, len(tables))
	var want string
	for range rounds {
		for k, tb := range tables {
			took, got, err := aggregate(ctx, cnxn, tb.name)
			if err != nil {
				return fmt.Errorf("%s: aggregate: %w", tb.name, err)
			}
			if want == "" {
				want = got
			} else if got != want {
				return fmt.Errorf("%s: aggregate %s, want %s", tb.name, got, want)
			}
			times[k] = append(times[k], took)
		}
	}
	agg := make([]time.Duration, len(tables))
	for k, tb := range tables {
		slices.Sort(times[k])
		agg[k] = times[k][len(times[k])/2]
		m, err := metaOf(f.meta(dir, tb.name))
		if err != nil {
			return err
		}
		fmt.Printf("%-34s writes %7.2fs  aggregate %7.1f ms  live data files %5d  %s\n",
			tb.name+":", tb.took.Seconds(), float64(agg[k].Microseconds())/1000, tb.files, m)
	}
	fmt.Printf("aggregate vs one commit: maintenance off %.2fx, on %.2fx\n", agg[1].Seconds()/agg[0].Seconds(), agg[2].Seconds()/agg[0].Seconds())
	return nil
}

// batch is rows keys [from, from+n).
func batch(from, n int) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for k := from; k < from+n; k++ {
		b.Field(0).(*array.Int64Builder).Append(int64(k))
		b.Field(1).(*array.StringBuilder).Append("value-" + strconv.Itoa(k))
	}
	return b.NewRecordBatch()
}

func ingestOn(ctx context.Context, cnxn adbc.Connection, table, mode string, b arrow.RecordBatch) error {
	defer b.Release()
	stmt, err := cnxn.NewStatement()
	if err != nil {
		return err
	}
	defer stmt.Close()
	for k, v := range map[string]string{adbc.OptionKeyIngestTargetTable: table, adbc.OptionKeyIngestMode: mode} {
		if err := stmt.SetOption(k, v); err != nil {
			return err
		}
	}
	if err := stmt.Bind(ctx, b); err != nil {
		return err
	}
	_, err = stmt.ExecuteUpdate(ctx)
	return err
}

// ingestStream creates table from every batch of rd in one ingest.
func ingestStream(ctx context.Context, cnxn adbc.Connection, table string, rd array.RecordReader) error {
	stmt, err := cnxn.NewStatement()
	if err != nil {
		return err
	}
	defer stmt.Close()
	for k, v := range map[string]string{adbc.OptionKeyIngestTargetTable: table, adbc.OptionKeyIngestMode: adbc.OptionValueIngestModeCreate} {
		if err := stmt.SetOption(k, v); err != nil {
			return err
		}
	}
	if err := stmt.BindStream(ctx, rd); err != nil {
		return err
	}
	_, err = stmt.ExecuteUpdate(ctx)
	return err
}

// aggregate runs the full-table aggregate once: its time and answer.
func aggregate(ctx context.Context, cnxn adbc.Connection, table string) (time.Duration, string, error) {
	t0 := time.Now()
	got, err := query(ctx, cnxn, "SELECT count(*), sum(k), max(v) FROM "+table)
	return time.Since(t0), got, err
}

func query(ctx context.Context, cnxn adbc.Connection, q string) (string, error) {
	stmt, err := cnxn.NewStatement()
	if err != nil {
		return "", err
	}
	defer stmt.Close()
	if err := stmt.SetSqlQuery(q); err != nil {
		return "", err
	}
	rd, _, err := stmt.ExecuteQuery(ctx)
	if err != nil {
		return "", err
	}
	defer rd.Release()
	if !rd.Next() || rd.RecordBatch().NumRows() != 1 {
		return "", fmt.Errorf("no row: %v", rd.Err())
	}
	rec := rd.RecordBatch()
	return fmt.Sprintf("%v %v %v", rec.Column(0).ValueStr(0), rec.Column(1).ValueStr(0), rec.Column(2).ValueStr(0)), nil
}

// metaStat is what a table's metadata directories hold.
type metaStat struct {
	bytes, files int64
	current      int64 // Iceberg: the newest metadata.json's size, which every load reads
}

func (m metaStat) String() string {
	out := fmt.Sprintf("metadata %6.1f MB in %4d files", float64(m.bytes)/1e6, m.files)
	if m.current > 0 {
		out += fmt.Sprintf(" (metadata.json %6.1f KB)", float64(m.current)/1e3)
	}
	return out
}

// metaOf sums the files under dirs.
func metaOf(dirs []string) (metaStat, error) {
	var m metaStat
	newest := ""
	for _, dir := range dirs {
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			info, err := d.Info()
			if err != nil {
				return err
			}
			m.bytes, m.files = m.bytes+info.Size(), m.files+1
			// The embedded lake names them <zero-padded version>-<uuid>.
			if name := d.Name(); strings.HasSuffix(name, ".metadata.json") && name > newest {
				newest, m.current = name, info.Size()
			}
			return nil
		})
		if err != nil {
			return m, err
		}
	}
	return m, nil
}

// create creates table from b with the table options opts: an ingest
// through the Flight SQL client, since ADBC sets no ingest options.
func create(ctx context.Context, fc *flightsql.Client, table string, opts map[string]string, b arrow.RecordBatch) error {
	defer b.Release()
	rd, err := array.NewRecordReader(schema, []arrow.RecordBatch{b})
	if err != nil {
		return err
	}
	defer rd.Release()
	_, err = fc.ExecuteIngest(ctx, rd, &flightsql.ExecuteIngestOpts{
		Table: table,
		TableDefinitionOptions: &flightsql.TableDefinitionOptions{
			IfNotExist: flightsql.TableDefinitionOptionsTableNotExistOptionCreate,
			IfExists:   flightsql.TableDefinitionOptionsTableExistsOptionFail,
		},
		Options: opts,
	})
	return err
}
