//go:build duckdb_arrow

// Command query benchmarks SQL through the gateway against DuckDB reading
// the same Parquet files in-process, in the same run.
//
//	go run -tags duckdb_arrow ./integration/bench/query -bin bin/flightgw [-rows 10000000]
//
// It starts a flightgw process on loopback with the embedded Iceberg
// default in a fresh data dir, bulk-ingests the rows through the ADBC Go
// driver (id int64, x float64, g int64 = id % 100, tag string), then times,
// after one untimed run of each (the first query opens the gateway's
// DuckDB for the warehouse, and warms both sides' page cache and
// allocators alike), -runs rounds that run the gateway and the reference
// back to back, in alternating order; the ratio printed is the median of
// the rounds' ratios, beside each side's median:
//
//  1. aggregate: SELECT g, count(*), sum(x), avg(id) FROM t GROUP BY g,
//     through ADBC, and by DuckDB in-process over the table's Parquet files
//     (read_parquet); ratio = in-process latency / gateway latency;
//  2. full stream: SELECT * FROM t read to the end through ADBC, and the
//     same query in-process through DuckDB's Arrow interface; ratio =
//     gateway rows/s / in-process rows/s.
//
// It samples the gateway's RSS (VmRSS from /proc) during the full stream
// and prints its peak, beside the targets (0.9, 0.9, 300 MB: issue 25), with the RSS
// before the stream (mostly what the ingest left in the heap). Then it
// restarts the gateway on the same data and prints the peak RSS of the
// same stream from the fresh process.
package main

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-adbc/go/adbc"
	adbcflight "github.com/apache/arrow-adbc/go/adbc/driver/flightsql"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/duckdb/duckdb-go/v2"
)

// settle is the pause before each timed run.
const settle = 200 * time.Millisecond

const aggQuery = "SELECT g, count(*), sum(x), avg(id) FROM %s GROUP BY g"

func main() {
	bin := flag.String("bin", "bin/flightgw", "gateway binary")
	rows := flag.Int64("rows", 10_000_000, "rows in the table")
	runs := flag.Int("runs", 9, "timed rounds of each query (gateway and reference back to back)")
	flag.Parse()
	if err := run(*bin, *rows, *runs); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(bin string, rows int64, runs int) error {
	ctx := context.Background()
	tmp, err := os.MkdirTemp("", "flightgw-query-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	gw, err := startGateway(bin, filepath.Join(tmp, "data"))
	if err != nil {
		return err
	}
	defer gw.stop()

	db, err := adbcflight.NewDriver(memory.DefaultAllocator).NewDatabase(map[string]string{adbc.OptionKeyURI: "grpc://" + gw.addr})
	if err != nil {
		return err
	}
	defer db.Close()
	cnxn, err := db.Open(ctx)
	if err != nil {
		return err
	}
	defer cnxn.Close()
	start := time.Now()
	if err := ingest(ctx, cnxn, rows); err != nil {
		return fmt.Errorf("ingest: %w", err)
	}
	fmt.Printf("ingested %d rows in %s; gateway RSS %d MB\n", rows, time.Since(start).Round(time.Millisecond), rss(gw.cmd.Process.Pid)>>20)
	files, err := parquetFiles(filepath.Join(tmp, "data", "warehouse"))
	if err != nil {
		return err
	}

	ref, err := sql.Open("duckdb", "")
	if err != nil {
		return err
	}
	defer ref.Close()
	quoted := make([]string, len(files))
	for i, f := range files {
		quoted[i] = "'" + f + "'"
	}
	refTable := "read_parquet([" + strings.Join(quoted, ",") + "])"

	// 1. Aggregate latency.
	agg, err := paired(runs,
		func() (int64, error) { return adbcQuery(ctx, cnxn, fmt.Sprintf(aggQuery, "t")) },
		func() (int64, error) { return arrowQuery(ctx, ref, fmt.Sprintf(aggQuery, refTable)) })
	if err != nil {
		return fmt.Errorf("aggregate: %w", err)
	}

	// 2. Full-table stream, with the gateway's RSS sampled (and printed
	// before it, to tell what the stream adds from what ingest left).
	before := rss(gw.cmd.Process.Pid)
	peak := gw.watchRSS()
	full, err := paired(runs,
		func() (int64, error) { return adbcQuery(ctx, cnxn, "SELECT * FROM t") },
		func() (int64, error) { return arrowQuery(ctx, ref, "SELECT * FROM "+refTable) })
	peakRSS := peak()
	if err != nil {
		return fmt.Errorf("stream: %w", err)
	}

	fmt.Printf("table: %d rows in %d Parquet file(s); %d paired runs\n", rows, len(files), runs)
	fmt.Printf("aggregate  gateway %8s  in-process %8s  ratio %.2f (target >= 0.9; rounds %.2f-%.2f)\n",
		agg.gw.Round(time.Millisecond), agg.ref.Round(time.Millisecond), agg.ratio, agg.lowest, agg.highest)
	fmt.Printf("stream     gateway %8.0f rows/s  in-process %8.0f rows/s  ratio %.2f (target >= 0.9; rounds %.2f-%.2f)\n",
		float64(rows)/full.gw.Seconds(), float64(rows)/full.ref.Seconds(), full.ratio, full.lowest, full.highest)
	fmt.Printf("gateway peak RSS during the stream: %d MB (target <= 300 MB); %d MB before it\n", peakRSS>>20, before>>20)

	// 3. The same stream from a gateway restarted on the same data: its
	// RSS owes nothing to what the ingest left in the first one's heap.
	cnxn.Close()
	gw.stop()
	fresh, err := startGateway(bin, filepath.Join(tmp, "data"))
	if err != nil {
		return err
	}
	defer fresh.stop()
	return freshStream(ctx, fresh, runs)
}

// freshStream streams the table runs times through a new connection to gw
// and prints gw's peak RSS.
func freshStream(ctx context.Context, gw *gateway, runs int) error {
	db, err := adbcflight.NewDriver(memory.DefaultAllocator).NewDatabase(map[string]string{adbc.OptionKeyURI: "grpc://" + gw.addr})
	if err != nil {
		return err
	}
	defer db.Close()
	cnxn, err := db.Open(ctx)
	if err != nil {
		return err
	}
	defer cnxn.Close()
	before := rss(gw.cmd.Process.Pid)
	peak := gw.watchRSS()
	var rows int64
	took, err := median(runs, func() (int64, error) {
		n, err := adbcQuery(ctx, cnxn, "SELECT * FROM t")
		rows = n
		return n, err
	})
	peakRSS := peak()
	if err != nil {
		return fmt.Errorf("fresh gateway stream: %w", err)
	}
	fmt.Printf("fresh gateway (restarted after the ingest): stream %.0f rows/s, peak RSS %d MB; %d MB before it\n",
		float64(rows)/took.Seconds(), peakRSS>>20, before>>20)
	return nil
}

// median runs f once untimed, then n times, and returns the median
// duration; f returns the row count, which must be the same every time.
func median(n int, f func() (int64, error)) (time.Duration, error) {
	var ds []time.Duration
	rows, err := f()
	if err != nil {
		return 0, err
	}
	for range n {
		d, err := timed(f, rows)
		if err != nil {
			return 0, err
		}
		ds = append(ds, d)
	}
	return medianOf(ds), nil
}

// pair is the outcome of paired runs: each side's median duration, and
// the median of the runs' ratios (reference time / gateway time).
type pair struct {
	gw, ref         time.Duration
	ratio           float64
	lowest, highest float64 // the rounds' extreme ratios
}

// paired runs gw and ref once each untimed, then n rounds of both, back
// to back, in alternating order. Each round gives a ratio measured over
// the same second of the machine, so a drift in its speed (other tenants,
// frequency) moves both sides alike; the median of those ratios is the
// figure reported.
func paired(n int, gw, ref func() (int64, error)) (pair, error) {
	rows, err := gw()
	if err != nil {
		return pair{}, fmt.Errorf("gateway: %w", err)
	}
	if got, err := ref(); err != nil || got != rows {
		return pair{}, fmt.Errorf("in-process: %d rows (gateway %d), %v", got, rows, err)
	}
	var gws, refs []time.Duration
	var ratios []float64
	for i := range n {
		var g, r time.Duration
		var err error
		if i%2 == 0 {
			if g, err = timed(gw, rows); err == nil {
				r, err = timed(ref, rows)
			}
		} else {
			if r, err = timed(ref, rows); err == nil {
				g, err = timed(gw, rows)
			}
		}
		if err != nil {
			return pair{}, err
		}
		gws, refs = append(gws, g), append(refs, r)
		ratios = append(ratios, r.Seconds()/g.Seconds())
	}
	slices.Sort(ratios)
	return pair{gw: medianOf(gws), ref: medianOf(refs), ratio: ratios[len(ratios)/2],
		lowest: ratios[0], highest: ratios[len(ratios)-1]}, nil
}

// timed runs f once and returns its duration; f must return rows rows.
// It first lets the machine settle: this process collects the previous
// run's garbage, and a pause lets the gateway finish its own, so neither
// side is timed doing work left by the other.
func timed(f func() (int64, error), rows int64) (time.Duration, error) {
	runtime.GC()
	time.Sleep(settle)
	start := time.Now()
	got, err := f()
	d := time.Since(start)
	if err != nil {
		return 0, err
	}
	if got != rows {
		return 0, fmt.Errorf("row count changed from %d to %d", rows, got)
	}
	return d, nil
}

func medianOf(ds []time.Duration) time.Duration {
	slices.Sort(ds)
	return ds[len(ds)/2]
}

// adbcQuery runs a query through the gateway and reads it to the end.
func adbcQuery(ctx context.Context, cnxn adbc.Connection, q string) (int64, error) {
	stmt, err := cnxn.NewStatement()
	if err != nil {
		return 0, err
	}
	defer stmt.Close()
	if err := stmt.SetSqlQuery(q); err != nil {
		return 0, err
	}
	rdr, _, err := stmt.ExecuteQuery(ctx)
	if err != nil {
		return 0, err
	}
	defer rdr.Release()
	var n int64
	for rdr.Next() {
		n += rdr.RecordBatch().NumRows()
	}
	return n, rdr.Err()
}

// arrowQuery runs a query in-process through DuckDB's Arrow interface and
// reads it to the end.
func arrowQuery(ctx context.Context, db *sql.DB, q string) (int64, error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	var n int64
	err = conn.Raw(func(dc any) error {
		ar, err := duckdb.NewArrowFromConn(dc.(driver.Conn))
		if err != nil {
			return err
		}
		rdr, err := ar.QueryContext(ctx, q)
		if err != nil {
			return err
		}
		defer rdr.Release()
		for rdr.Next() {
			n += rdr.RecordBatch().NumRows()
		}
		return rdr.Err()
	})
	return n, err
}

// ingest writes the table through ADBC bulk ingest, 256Ki rows a batch.
func ingest(ctx context.Context, cnxn adbc.Connection, rows int64) error {
	stmt, err := cnxn.NewStatement()
	if err != nil {
		return err
	}
	defer stmt.Close()
	if err := stmt.SetOption(adbc.OptionKeyIngestTargetTable, "t"); err != nil {
		return err
	}
	if err := stmt.SetOption(adbc.OptionKeyIngestMode, adbc.OptionValueIngestModeCreate); err != nil {
		return err
	}
	if err := stmt.BindStream(ctx, &source{total: rows}); err != nil {
		return err
	}
	_, err = stmt.ExecuteUpdate(ctx)
	return err
}

var schema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "x", Type: arrow.PrimitiveTypes.Float64},
	{Name: "g", Type: arrow.PrimitiveTypes.Int64},
	{Name: "tag", Type: arrow.BinaryTypes.String},
}, nil)

// source generates the rows batch by batch.
type source struct {
	total, next int64
	cur         arrow.RecordBatch
}

func (s *source) Schema() *arrow.Schema          { return schema }
func (s *source) Retain()                        {}
func (s *source) Release()                       { s.release() }
func (s *source) RecordBatch() arrow.RecordBatch { return s.cur }
func (s *source) Record() arrow.RecordBatch      { return s.cur }
func (s *source) Err() error                     { return nil }

func (s *source) release() {
	if s.cur != nil {
		s.cur.Release()
		s.cur = nil
	}
}

func (s *source) Next() bool {
	s.release()
	if s.next >= s.total {
		return false
	}
	n := min(int64(1<<18), s.total-s.next)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	ids, xs, gs, tags := b.Field(0).(*array.Int64Builder), b.Field(1).(*array.Float64Builder),
		b.Field(2).(*array.Int64Builder), b.Field(3).(*array.StringBuilder)
	for i := s.next; i < s.next+n; i++ {
		ids.Append(i)
		xs.Append(float64(i%9973) / 7)
		gs.Append(i % 100)
		tags.Append("tag-" + strconv.FormatInt(i%4096, 16))
	}
	s.next += n
	s.cur = b.NewRecordBatch()
	return true
}

func parquetFiles(dir string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".parquet") {
			out = append(out, p)
		}
		return err
	})
	if err == nil && len(out) == 0 {
		err = errors.New("no Parquet files in the warehouse")
	}
	return out, err
}

type gateway struct {
	cmd  *exec.Cmd
	addr string
}

func startGateway(bin, dataDir string) (*gateway, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := l.Addr().String()
	l.Close()
	cmd := exec.Command(bin, "serve", "--data-dir", dataDir, "--listen", addr)
	cmd.Env = append(os.Environ(), "FLIGHTGW_LOG_LEVEL=warn")
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return &gateway{cmd: cmd, addr: addr}, nil
		}
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	return nil, fmt.Errorf("gateway did not listen on %s", addr)
}

func (g *gateway) stop() {
	_ = g.cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { _ = g.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = g.cmd.Process.Kill()
		<-done
	}
}

// watchRSS samples the gateway's RSS until the returned function is
// called, which returns the peak.
func (g *gateway) watchRSS() func() int64 {
	var peak atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			if r := rss(g.cmd.Process.Pid); r > peak.Load() {
				peak.Store(r)
			}
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	return func() int64 {
		close(stop)
		wg.Wait()
		return peak.Load()
	}
}

func rss(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}
