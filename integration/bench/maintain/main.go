// Command maintain benchmarks what table maintenance buys a table written
// by many small commits (issue 27):
//
//	go run ./integration/bench/maintain -bin bin/flightgw [-catalog iceberg|paimon] [-appends 1000] [-rows 1000]
//
// One gateway on a fresh embedded Iceberg lake (or, with -catalog paimon,
// a Paimon warehouse). Table "appends_off" gets
// -appends auto-commit appends of -rows rows (ADBC bulk ingest, mode
// append, one connection, one after the other); table "appends_on" the
// same, then one MaintainTable (Iceberg: rewrite_data_files,
// expire_snapshots, rewrite_manifests; Paimon: compact, the append
// table's small files, and expire_snapshots) with the table's defaults;
// table "one_commit" the same rows in one ingest. For each it
// times a full-table aggregate (SELECT count(*), sum(k), max(v), the
// median of 5 runs), and prints its live data files and metadata bytes;
// then the aggregate's ratio to "one_commit" with maintenance off and on.
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
	catalog := flag.String("catalog", "iceberg", "the lake: iceberg (embedded) or paimon")
	flag.Parse()
	if err := run(*bin, *catalog, *appends, *rows); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(bin, catalog string, appends, rows int) error {
	dir, err := os.MkdirTemp("", "flightgw-bench-maintain-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	// tableDir is a table's directory, meta its metadata directories.
	tableDir := func(name string) string { return filepath.Join(dir, "warehouse", "default.db", name) }
	meta := []string{"metadata"}
	tasks, lake := []string{"rewrite_data_files", "expire_snapshots", "rewrite_manifests"}, "Iceberg"
	var gw *benchutil.Gateway
	switch catalog {
	case "iceberg":
		gw, err = benchutil.StartGateway(bin, []string{"FLIGHTGW_DATA_DIR=" + dir})
	case "paimon":
		meta, tasks, lake = []string{"snapshot", "manifest"}, []string{"compact", "expire_snapshots"}, "Paimon"
		cfg := filepath.Join(dir, "flightgw.yaml")
		yaml := fmt.Sprintf("catalogs:\n  - name: pm\n    type: paimon\n    properties: {warehouse: %q, create-namespaces: default}\ndefault_catalog: pm\n",
			filepath.Join(dir, "warehouse"))
		if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
			return err
		}
		gw, err = benchutil.StartGateway(bin, nil, "--config", cfg, "--data-dir", filepath.Join(dir, "data"))
	default:
		return fmt.Errorf("-catalog %q: iceberg or paimon", catalog)
	}
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
	fmt.Printf("%d auto-commit appends x %d rows to one %s table, then a full-table aggregate, one gateway, ADBC over Flight SQL\n", appends, rows, lake)

	var want string
	report := func(name string, took time.Duration, files int) (time.Duration, error) {
		agg, got, err := aggregate(ctx, cnxn, name)
		if err != nil {
			return 0, fmt.Errorf("%s: aggregate: %w", name, err)
		}
		if want == "" {
			want = got
		} else if got != want {
			return 0, fmt.Errorf("%s: aggregate %s, want %s", name, got, want)
		}
		var mb int64
		for _, m := range meta {
			n, err := dirBytes(filepath.Join(tableDir(name), m))
			if err != nil {
				return 0, err
			}
			mb += n
		}
		fmt.Printf("%-34s writes %7.2fs  aggregate %7.1f ms  live data files %5d  metadata %6.1f MB\n",
			name+":", took.Seconds(), float64(agg.Microseconds())/1000, files, float64(mb)/1e6)
		return agg, nil
	}

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
	one, err := report("one_commit", time.Since(t0), 1)
	if err != nil {
		return err
	}
	var off time.Duration
	for _, name := range []string{"appends_off", "appends_on"} {
		t0 := time.Now()
		for i := range appends {
			mode := adbc.OptionValueIngestModeAppend
			if i == 0 {
				mode = adbc.OptionValueIngestModeCreate
			}
			if err := ingestOn(ctx, cnxn, name, mode, batch(i*rows, rows)); err != nil {
				return fmt.Errorf("%s: append %d: %w", name, i, err)
			}
		}
		took, files := time.Since(t0), appends
		if name == "appends_on" {
			m0 := time.Now()
			res, err := client.MaintainTable(ctx, fc, actions.MaintainRequest{TableRef: actions.TableRef{Table: name}, Tasks: tasks})
			if err != nil {
				return fmt.Errorf("MaintainTable: %w", err)
			}
			rw := res.Tasks[0] // the rewrite: rewrite_data_files, or compact
			if !rw.Committed {
				return errors.New("the rewrite did not commit: " + rw.Abandoned)
			}
			files = appends - rw.RewrittenFiles + rw.AddedFiles
			expired := 0
			for _, tr := range res.Tasks {
				expired += len(tr.ExpiredSnapshots)
			}
			fmt.Printf("%-34s rewrote %d files into %d", "MaintainTable appends_on:", rw.RewrittenFiles, rw.AddedFiles)
			if len(res.Tasks) > 2 {
				fmt.Printf(", %d manifests into %d", res.Tasks[2].RewrittenFiles, res.Tasks[2].AddedFiles)
			}
			fmt.Printf(", in %.2fs; expired %d snapshots\n", time.Since(m0).Seconds(), expired)
		}
		agg, err := report(name, took, files)
		if err != nil {
			return err
		}
		if name == "appends_off" {
			off = agg
		} else {
			fmt.Printf("aggregate vs one commit: maintenance off %.2fx, on %.2fx\n", off.Seconds()/one.Seconds(), agg.Seconds()/one.Seconds())
		}
	}
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

// aggregate runs the full-table aggregate five times and returns the
// median time and the answer.
func aggregate(ctx context.Context, cnxn adbc.Connection, table string) (time.Duration, string, error) {
	var times []time.Duration
	var answer string
	for range 5 {
		t0 := time.Now()
		got, err := query(ctx, cnxn, "SELECT count(*), sum(k), max(v) FROM "+table)
		if err != nil {
			return 0, "", err
		}
		times = append(times, time.Since(t0))
		answer = got
	}
	slices.Sort(times)
	return times[len(times)/2], answer, nil
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

// dirBytes is the size of the files under dir.
func dirBytes(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err == nil {
			n += info.Size()
		}
		return err
	})
	return n, err
}
