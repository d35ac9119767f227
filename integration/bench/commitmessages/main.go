// Command commitmessages benchmarks the distributed commit: the files of
// many workers committed by one CommitMessages against the same number of
// files committed worker by worker, one commit each, in the same run.
//
//	go run ./integration/bench/commitmessages -bin bin/flightgw [-workers 100] [-files 100]
//	    [-catalog iceberg|paimon] [-prior 0]
//
// It starts one flightgw process on loopback with an Iceberg catalog on
// SQLite (or, with -catalog paimon, a Paimon filesystem catalog) and
// local files in a fresh directory. For each variant, on a
// table of its own, the files are prepared the same way, through the
// gateway and untimed: each of -workers workers begins a transaction,
// makes -files ingests of -rows rows into the table in it (one data file
// each: the data files on disk are counted, -workers × -files) and ends it
// with PrepareCommit. Then it times:
//
//  1. one CommitMessages carrying every worker's payload (one snapshot);
//  2. -workers CommitMessages one after the other, each carrying one
//     worker's payload (one snapshot each), as workers committing their
//     own writes in turn would. With -prior N, N plain ingests (one
//     snapshot each, untimed) land on that table first: each
//     CommitMessages checks that its files are not already committed
//     (docs/commit-messages.md), which must not cost the table's history.
//
// It prints both times, their ratio (sequential / one), the sequential
// commits per second and the mean time of the first and the last tenth
// of them, and checks each table's snapshot and row counts.
package main

import (
	"context"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

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
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "tag", Type: arrow.BinaryTypes.String},
}, nil)

func main() {
	bin := flag.String("bin", "bin/flightgw", "gateway binary")
	workers := flag.Int("workers", 100, "workers, one prepared transaction each")
	files := flag.Int("files", 100, "data files per worker (one ingest each)")
	rows := flag.Int("rows", 200, "rows per data file")
	parallel := flag.Int("parallel", 4, "workers preparing at once (untimed)")
	catalog := flag.String("catalog", "iceberg", "catalog type: iceberg or paimon")
	prior := flag.Int("prior", 0, "plain ingests (one snapshot each) committed to the sequential table first (untimed)")
	flag.Parse()
	if *catalog != "iceberg" && *catalog != "paimon" {
		fmt.Fprintln(os.Stderr, "bench: -catalog must be iceberg or paimon")
		os.Exit(2)
	}
	if err := run(*bin, *catalog, *workers, *files, *rows, *parallel, *prior); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(bin, catalog string, workers, files, rows, parallel, prior int) error {
	dir, err := os.MkdirTemp("", "flightgw-bench-commit-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	gw, err := startGateway(bin, catalog, dir)
	if err != nil {
		return err
	}
	defer gw.Stop()
	c, err := flightsql.NewClient(gw.Addr, nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer c.Close()
	ctx := context.Background()
	fmt.Printf("%s: %d workers × %d files of %d rows, prepared through the gateway (PrepareCommit), then committed:\n", catalog, workers, files, rows)

	var times [2]time.Duration
	var each []time.Duration
	for v, name := range []string{"one", "each"} {
		table := "bench_" + name
		start := time.Now()
		prepared, err := prepare(ctx, c, table, workers, files, rows, parallel)
		if err != nil {
			return fmt.Errorf("prepare %s: %w", table, err)
		}
		tableDir := filepath.Join(dir, "warehouse", "default.db", table)
		if catalog == "iceberg" {
			tableDir = filepath.Join(tableDir, "data")
		}
		if n := countFiles(tableDir); n != workers*files {
			return fmt.Errorf("table %s: %d data files staged, want %d", table, n, workers*files)
		}
		fmt.Printf("  %-40s %8.2fs (untimed)\n", "prepare "+table+":", time.Since(start).Seconds())
		if v == 1 && prior > 0 {
			start = time.Now()
			if err := ingestPrior(ctx, c, table, prior, workers*files*rows); err != nil {
				return err
			}
			fmt.Printf("  %-40s %8.2fs (untimed)\n", fmt.Sprintf("%d prior commits to %s:", prior, table), time.Since(start).Seconds())
		}
		start = time.Now()
		if v == 0 {
			res, err := client.CommitMessages(ctx, c, "bench-one", client.Merge(prepared...))
			if err != nil {
				return err
			}
			times[0] = time.Since(start)
			if got := res.Tables[0].Rows; got != uint64(workers*files*rows) {
				return fmt.Errorf("one CommitMessages committed %d rows, want %d", got, workers*files*rows)
			}
		} else {
			for i, p := range prepared {
				t0 := time.Now()
				if _, err := client.CommitMessages(ctx, c, fmt.Sprintf("bench-each-%d", i), p); err != nil {
					return err
				}
				each = append(each, time.Since(t0))
			}
			times[1] = time.Since(start)
		}
		want := workers * files * rows
		if v == 1 {
			want += prior
		}
		if err := check(ctx, c, table, map[int]int{0: 1, 1: workers}[v], want); err != nil {
			return err
		}
	}
	fmt.Printf("  %-40s %8.3fs\n", "one CommitMessages (1 snapshot):", times[0].Seconds())
	fmt.Printf("  %-40s %8.3fs\n", fmt.Sprintf("%d sequential commits (%d snapshots):", workers, workers), times[1].Seconds())
	fmt.Printf("  ratio sequential / one: %.1f\n", times[1].Seconds()/times[0].Seconds())
	tenth := max(1, len(each)/10)
	fmt.Printf("  sequential: %.1f commits/s; mean of the first %d %.1fms, of the last %d %.1fms (after %d prior commits)\n",
		float64(len(each))/times[1].Seconds(), tenth, mean(each[:tenth]), tenth, mean(each[len(each)-tenth:]), prior)
	return nil
}

func mean(ds []time.Duration) float64 {
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	return sum.Seconds() * 1000 / float64(len(ds))
}

// ingestPrior lands n plain ingests of one row each on table (one
// snapshot each), ids from first on.
func ingestPrior(ctx context.Context, c *flightsql.Client, table string, n, first int) error {
	opts := &flightsql.ExecuteIngestOpts{TableDefinitionOptions: &flightsql.TableDefinitionOptions{
		IfNotExist: flightsql.TableDefinitionOptionsTableNotExistOptionFail, IfExists: flightsql.TableDefinitionOptionsTableExistsOptionAppend},
		Table: table}
	for i := range n {
		b := batch(int64(first+i), 1)
		rdr, err := array.NewRecordReader(schema, []arrow.RecordBatch{b})
		b.Release()
		if err != nil {
			return err
		}
		_, err = c.ExecuteIngest(ctx, rdr, opts)
		rdr.Release()
		if err != nil {
			return fmt.Errorf("prior ingest %d: %w", i, err)
		}
	}
	return nil
}

// prepare has each worker ingest files batches into table inside a
// transaction and prepare it; it returns each worker's payloads.
func prepare(ctx context.Context, c *flightsql.Client, table string, workers, files, rows, parallel int) ([][]client.TablePayloads, error) {
	// The table is created first, outside the workers' transactions.
	create := &flightsql.ExecuteIngestOpts{TableDefinitionOptions: &flightsql.TableDefinitionOptions{
		IfNotExist: flightsql.TableDefinitionOptionsTableNotExistOptionCreate, IfExists: flightsql.TableDefinitionOptionsTableExistsOptionFail}, Table: table}
	none := batch(0, 0)
	defer none.Release()
	empty, err := array.NewRecordReader(schema, []arrow.RecordBatch{none})
	if err != nil {
		return nil, err
	}
	if _, err := c.ExecuteIngest(ctx, empty, create); err != nil {
		return nil, fmt.Errorf("create: %w", err)
	}
	out := make([][]client.TablePayloads, workers)
	errs := make([]error, workers)
	next := make(chan int)
	var wg sync.WaitGroup
	for range parallel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for w := range next {
				out[w], errs[w] = prepareOne(ctx, c, table, w, files, rows)
			}
		}()
	}
	for w := range workers {
		next <- w
	}
	close(next)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

func prepareOne(ctx context.Context, c *flightsql.Client, table string, w, files, rows int) ([]client.TablePayloads, error) {
	tx, err := c.BeginTransaction(ctx)
	if err != nil {
		return nil, err
	}
	opts := &flightsql.ExecuteIngestOpts{TableDefinitionOptions: &flightsql.TableDefinitionOptions{
		IfNotExist: flightsql.TableDefinitionOptionsTableNotExistOptionFail, IfExists: flightsql.TableDefinitionOptionsTableExistsOptionAppend},
		Table: table, TransactionId: tx.ID()}
	for f := range files {
		b := batch(int64((w*files+f)*rows), rows)
		rdr, err := array.NewRecordReader(schema, []arrow.RecordBatch{b})
		b.Release()
		if err != nil {
			return nil, err
		}
		_, err = c.ExecuteIngest(ctx, rdr, opts)
		rdr.Release()
		if err != nil {
			return nil, fmt.Errorf("worker %d: ingest %d: %w", w, f, err)
		}
	}
	return client.PrepareCommit(ctx, c, string(tx.ID()))
}

func batch(from int64, n int) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for i := range int64(n) {
		b.Field(0).(*array.Int64Builder).Append(from + i)
		b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("tag-%012d", from+i))
	}
	return b.NewRecordBatch()
}

// check compares a table's snapshots (from GetCommitStatus, per commit)
// and rows (counted through SQL) with what was committed.
func check(ctx context.Context, c *flightsql.Client, table string, commits, rows int) error {
	ids := map[int64]bool{}
	for i := range commits {
		id := "bench-one"
		if !strings.HasSuffix(table, "one") {
			id = fmt.Sprintf("bench-each-%d", i)
		}
		st, err := client.GetCommitStatus(ctx, c, id, actions.TableRef{Table: table})
		if err != nil || !st.Landed {
			return fmt.Errorf("table %s: commit %s: %+v, %v", table, id, st, err)
		}
		ids[st.SnapshotID] = true
	}
	if len(ids) != commits {
		return fmt.Errorf("table %s: %d snapshots for %d commits", table, len(ids), commits)
	}
	info, err := c.Execute(ctx, "SELECT count(*) FROM "+table)
	if err != nil {
		return err
	}
	rdr, err := c.DoGet(ctx, info.Endpoint[0].Ticket)
	if err != nil {
		return err
	}
	defer rdr.Release()
	if !rdr.Next() {
		return fmt.Errorf("table %s: count(*) returned nothing: %v", table, rdr.Err())
	}
	got := rdr.RecordBatch().Column(0).(*array.Int64).Value(0)
	for rdr.Next() { // read to the end, so that the call ends OK
	}
	if got != int64(rows) {
		return fmt.Errorf("table %s: %d rows, want %d", table, got, rows)
	}
	return rdr.Err()
}

func countFiles(dir string) int {
	n := 0
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".parquet") {
			n++
		}
		return nil
	})
	return n
}

// startGateway runs bin on a free loopback port with the catalog in dir.
func startGateway(bin, catalog, dir string) (*benchutil.Gateway, error) {
	conf := filepath.Join(dir, "flightgw.yaml")
	yaml := fmt.Sprintf(`tickets: {signing_key: bench-key}
reclaim: {interval: 0}
catalogs:
  - name: lake
    type: iceberg
    properties:
      catalog-type: sql
      uri: sqlite://%[1]s/catalog.db
      warehouse: file://%[1]s/warehouse
      create-namespaces: default
`, dir)
	if catalog == "paimon" {
		yaml = fmt.Sprintf(`tickets: {signing_key: bench-key}
reclaim: {interval: 0}
catalogs:
  - name: lake
    type: paimon
    properties: {warehouse: "%s/warehouse", create-namespaces: default}
`, dir)
	}
	if err := os.WriteFile(conf, []byte(yaml), 0o600); err != nil {
		return nil, err
	}
	return benchutil.StartGateway(bin, nil, "--config", conf, "--data-dir", dir)
}
