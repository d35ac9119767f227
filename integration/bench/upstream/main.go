// Command upstream benchmarks a flightsql catalog (docs/upstream.md): the
// same queries sent to an upstream flightgw directly and through a second
// flightgw that federates it, in the same run.
//
//	go run ./integration/bench/upstream -bin bin/flightgw [-rows 10000000] [-runs 9]
//	    [-small-runs 41] [-small-before=false] [-fed-bin other/flightgw]
//	    [-ab-bin other/flightgw] [-ab-env K=V,...] [-pprof 127.0.0.1:6060]
//
// It starts the upstream (the embedded Iceberg default in a fresh data
// dir), bulk-ingests -rows rows (benchutil.Schema: int64, float64, a
// string, a timestamp) into lake.default.t through the ADBC Go driver,
// then starts the federating gateway, whose only catalog "up" is of type
// flightsql over the upstream. After one untimed run of each side, -runs
// rounds run the direct query and the federated one back to back, in
// alternating order (so that a drift of the shared machine moves both
// alike), each side with its own ADBC connection open throughout:
//
//  1. stream: SELECT * FROM t read to the end; the ratio printed is the
//     median of the rounds' direct time / federated time, that is the
//     federated rate over the direct one (target >= 0.9);
//  2. aggregate: SELECT count(*), sum(x), max(id) FROM t, pushed whole to
//     the upstream; printed: the median of the rounds' federated time
//     minus direct time (target <= 5 ms);
//  3. the same aggregate over a table of 1000 rows (small, ingested too),
//     in -small-runs rounds: what the federating gateway adds to a call,
//     without the second of DuckDB's work on 10M rows whose jitter on a
//     shared machine hides a few ms.
//
// With -small-before (the default) the small aggregate's rounds run
// before the stream as well, and the federating gateway's CPU time is
// read over 5 s with no call before the stream and after the aggregate:
// the same process's cost of a small call before and after it relayed
// the streams, and its background work.
//
// The load average (/proc/loadavg) is printed before and after: the
// machine is shared, and the figures mean little on a loaded one. So is
// the CPU time (/proc/pid/stat) each gateway spent per call of the small
// aggregate, which the load inflates less: the federating gateway's is
// the work it adds to a call, beside the hop; and the CPU time each spent
// over the stream's rounds.
//
// -fed-bin runs the federating gateway from another binary than the
// upstream (a change to the relay measured against the same upstream);
// -pprof serves the federating gateway's profiler (debug.pprof_listen) for
// a CPU profile taken while the stream's rounds run. -ab-bin starts a
// second federating gateway from another binary and then runs the
// stream in rounds of three (direct, one federating gateway, the other,
// the order rotating), then the small aggregate through each in turn
// (-small-runs calls): two builds compared under the same load; -ab-env
// adds to the second one's environment.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/apache/arrow-adbc/go/adbc"

	"github.com/flightgw/flightgw/integration/bench/benchutil"
)

// settle is the pause before each timed run.
const settle = 200 * time.Millisecond

const aggQuery = "SELECT count(*), sum(x), max(id) FROM %s"

func main() {
	bin := flag.String("bin", "bin/flightgw", "gateway binary")
	rows := flag.Int64("rows", 10_000_000, "rows in the table")
	runs := flag.Int("runs", 9, "timed rounds of each query")
	smallRuns := flag.Int("small-runs", 41, "timed rounds of the aggregate over the small table")
	fedBin := flag.String("fed-bin", "", "the federating gateway's binary (default: -bin)")
	pprof := flag.String("pprof", "", "serve the federating gateway's profiler on this loopback address")
	abBin := flag.String("ab-bin", "", "a second federating gateway's binary, compared with the first on the stream")
	abEnv := flag.String("ab-env", "", "comma-separated KEY=VALUE settings of the second federating gateway's environment")
	smallBefore := flag.Bool("small-before", true, "run the small aggregate (and read the idle CPU) before the stream too")
	flag.Parse()
	if *fedBin == "" {
		*fedBin = *bin
	}
	if err := run(*bin, *fedBin, *pprof, *abBin, *abEnv, *rows, *runs, *smallRuns, *smallBefore); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(bin, fedBin, pprof, abBin, abEnv string, rows int64, runs, smallRuns int, smallBefore bool) error {
	ctx := context.Background()
	tmp, err := os.MkdirTemp("", "flightgw-upstream-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	up, err := benchutil.StartGateway(bin, nil, "--data-dir", filepath.Join(tmp, "up"))
	if err != nil {
		return err
	}
	defer up.Stop()
	pool := benchutil.Pool(1 << 16)
	took, err := benchutil.Ingest(ctx, up.Addr, map[string]string{adbc.OptionKeyIngestTargetTable: "t",
		adbc.OptionKeyIngestMode: adbc.OptionValueIngestModeCreate}, benchutil.NewSource(pool, rows), rows)
	if err == nil {
		_, err = benchutil.Ingest(ctx, up.Addr, map[string]string{adbc.OptionKeyIngestTargetTable: "small",
			adbc.OptionKeyIngestMode: adbc.OptionValueIngestModeCreate}, benchutil.NewSource(pool, 1000), 1000)
	}
	benchutil.Release(pool)
	if err != nil {
		return fmt.Errorf("ingest: %w", err)
	}
	fmt.Printf("ingested %d rows into the upstream in %s\n", rows, took.Round(time.Millisecond))

	cfg := filepath.Join(tmp, "federating.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`catalogs:
  - name: up
    type: flightsql
    properties: {uri: "grpc://%s", upstream_catalog: lake}
debug: {pprof_listen: %q}
`, up.Addr, pprof)), 0o600); err != nil {
		return err
	}
	fed, err := benchutil.StartGateway(fedBin, nil, "--data-dir", filepath.Join(tmp, "fed"), "--config", cfg)
	if err != nil {
		return err
	}
	defer fed.Stop()

	direct, closeDirect, err := connect(ctx, up.Addr)
	if err != nil {
		return err
	}
	defer closeDirect()
	through, closeThrough, err := connect(ctx, fed.Addr)
	if err != nil {
		return err
	}
	defer closeThrough()

	if abBin != "" {
		return compare(ctx, abBin, abEnv, tmp, cfg, rows, runs, smallRuns, direct, through, up, fed)
	}
	// The small aggregate and the idle gateway once before the stream too:
	// the same process's cost of a call before and after it has relayed
	// the 10M-row streams.
	var before smallRun
	var idleBefore time.Duration
	if smallBefore {
		if before, err = smallAggregate(ctx, smallRuns, direct, through, up, fed); err != nil {
			return err
		}
		if idleBefore, err = idleCPU(fed); err != nil {
			return err
		}
	}
	load := loadavg()
	upStream0, err1 := up.CPU()
	fedStream0, err2 := fed.CPU()
	stream, err := paired(runs,
		func() (int64, error) { return query(ctx, direct, "SELECT * FROM t") },
		func() (int64, error) { return query(ctx, through, `SELECT * FROM up."default".t`) })
	if err != nil {
		return fmt.Errorf("stream: %w", err)
	}
	upStream1, err3 := up.CPU()
	fedStream1, err4 := fed.CPU()
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		return err
	}
	agg, err := paired(runs,
		func() (int64, error) { return query(ctx, direct, fmt.Sprintf(aggQuery, "t")) },
		func() (int64, error) { return query(ctx, through, fmt.Sprintf(aggQuery, `up."default".t`)) })
	if err != nil {
		return fmt.Errorf("aggregate: %w", err)
	}
	idleAfter, err := idleCPU(fed)
	if err != nil {
		return err
	}
	small, err := smallAggregate(ctx, smallRuns, direct, through, up, fed)
	if err != nil {
		return err
	}
	fmt.Printf("table: %d rows; %d paired rounds; load average %s before, %s after\n", rows, runs, load, loadavg())
	fmt.Printf("stream     direct %8.0f rows/s  federated %8.0f rows/s  ratio %.2f (target >= 0.9; rounds %.2f-%.2f)\n",
		float64(rows)/stream.direct.Seconds(), float64(rows)/stream.fed.Seconds(), stream.ratio, stream.lowest, stream.highest)
	// runs+1 calls of each side: the upstream served both.
	streams := time.Duration(runs + 1)
	fmt.Printf("stream CPU per call: upstream %s (direct and federated calls alike), federating gateway %s (of each federated call)\n",
		((upStream1 - upStream0) / (2 * streams)).Round(time.Millisecond), ((fedStream1 - fedStream0) / streams).Round(time.Millisecond))
	fmt.Printf("aggregate  direct %8s  federated %8s  added %s (target <= 5ms; rounds %s to %s)\n",
		agg.direct.Round(10*time.Microsecond), agg.fed.Round(10*time.Microsecond), agg.added.Round(10*time.Microsecond),
		agg.addedLow.Round(10*time.Microsecond), agg.addedHigh.Round(10*time.Microsecond))
	if smallBefore {
		before.print("before the stream")
		fmt.Printf("federating gateway idle for %s: CPU %s before the stream, %s after it\n", idleSpan, idleBefore, idleAfter)
	}
	small.print("after the stream")
	return nil
}

// smallRun is the outcome of the small aggregate's rounds: the paired
// times and each gateway's CPU per call.
type smallRun struct {
	pair
	n             int
	upCPU, fedCPU time.Duration
}

// smallAggregate runs the aggregate over the small table in n paired
// rounds and reads each gateway's CPU time (/proc/pid/stat) around them.
func smallAggregate(ctx context.Context, n int, direct, through adbc.Connection, up, fed *benchutil.Gateway) (smallRun, error) {
	upCPU0, err1 := up.CPU()
	fedCPU0, err2 := fed.CPU()
	p, err := paired(n,
		func() (int64, error) { return query(ctx, direct, fmt.Sprintf(aggQuery, "small")) },
		func() (int64, error) { return query(ctx, through, fmt.Sprintf(aggQuery, `up."default".small`)) })
	if err != nil {
		return smallRun{}, fmt.Errorf("small aggregate: %w", err)
	}
	upCPU1, err3 := up.CPU()
	fedCPU1, err4 := fed.CPU()
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		return smallRun{}, err
	}
	// Each side ran n+1 times (one untimed); the upstream served both,
	// the federating gateway only its side.
	calls := time.Duration(n + 1)
	return smallRun{pair: p, n: n, upCPU: (upCPU1 - upCPU0) / (2 * calls), fedCPU: (fedCPU1 - fedCPU0) / calls}, nil
}

func (r smallRun) print(when string) {
	fmt.Printf("aggregate of 1000 rows, %d rounds, %s: direct %s  federated %s  added %s (target <= 5ms; rounds %s to %s)\n", r.n, when,
		r.direct.Round(10*time.Microsecond), r.fed.Round(10*time.Microsecond), r.added.Round(10*time.Microsecond),
		r.addedLow.Round(10*time.Microsecond), r.addedHigh.Round(10*time.Microsecond))
	fmt.Printf("aggregate of 1000 rows, CPU per call, %s: upstream %s (direct and federated calls alike), federating gateway %s (of each federated call)\n",
		when, r.upCPU.Round(10*time.Microsecond), r.fedCPU.Round(10*time.Microsecond))
}

// idleSpan is how long the federating gateway's idle CPU is read.
const idleSpan = 5 * time.Second

// idleCPU is the CPU time the federating gateway spends in idleSpan with
// no call: its background work (the runtime's, timers), which the CPU
// per call of the small aggregate counts too.
func idleCPU(fed *benchutil.Gateway) (time.Duration, error) {
	c0, err := fed.CPU()
	if err != nil {
		return 0, err
	}
	time.Sleep(idleSpan)
	c1, err := fed.CPU()
	return c1 - c0, err
}

func connect(ctx context.Context, addr string) (adbc.Connection, func(), error) {
	db, err := benchutil.Database(addr)
	if err != nil {
		return nil, nil, err
	}
	cnxn, err := db.Open(ctx)
	if err != nil {
		db.Close()
		return nil, nil, err
	}
	return cnxn, func() { cnxn.Close(); db.Close() }, nil
}

// pair is the outcome of paired rounds: each side's median, the median of
// the rounds' ratios (direct time / federated time) and of their
// differences (federated time - direct time), with their extremes.
type pair struct {
	direct, fed                time.Duration
	ratio, lowest, highest     float64
	added, addedLow, addedHigh time.Duration
}

// paired runs both sides once untimed, then n rounds of both back to
// back in alternating order; both must return the same row count.
func paired(n int, direct, fed func() (int64, error)) (pair, error) {
	rows, err := direct()
	if err != nil {
		return pair{}, fmt.Errorf("direct: %w", err)
	}
	if got, err := fed(); err != nil || got != rows {
		return pair{}, fmt.Errorf("federated: %d rows (direct %d), %v", got, rows, err)
	}
	var ds, fs, diffs []time.Duration
	var ratios []float64
	for i := range n {
		first, second := direct, fed
		if i%2 == 1 {
			first, second = fed, direct
		}
		a, err := timed(first, rows)
		if err != nil {
			return pair{}, err
		}
		b, err := timed(second, rows)
		if err != nil {
			return pair{}, err
		}
		d, f := a, b
		if i%2 == 1 {
			d, f = b, a
		}
		ds, fs, diffs = append(ds, d), append(fs, f), append(diffs, f-d)
		ratios = append(ratios, d.Seconds()/f.Seconds())
	}
	slices.Sort(ratios)
	slices.Sort(diffs)
	return pair{direct: median(ds), fed: median(fs), ratio: ratios[len(ratios)/2], lowest: ratios[0], highest: ratios[len(ratios)-1],
		added: diffs[len(diffs)/2], addedLow: diffs[0], addedHigh: diffs[len(diffs)-1]}, nil
}

// timed runs f once after letting the machine settle (this process
// collects the previous run's garbage, the gateways finish theirs) and
// returns its duration; f must return rows rows.
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

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// query runs q and reads it to the end; the rows counted are the
// result's (for an aggregate, its one row).
func query(ctx context.Context, cnxn adbc.Connection, q string) (int64, error) {
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

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// compare starts a second federating gateway from abBin and runs the
// stream in rounds of three, printing each federating gateway's ratio to
// the direct rate and its CPU per call; then the small aggregate,
// small calls of each alternately, with each one's median and CPU per
// call.
func compare(ctx context.Context, abBin, abEnv, tmp, cfg string, rows int64, runs, small int, direct, through adbc.Connection, up, fed *benchutil.Gateway) error {
	var env []string
	if abEnv != "" {
		env = strings.Split(abEnv, ",")
	}
	fedB, err := benchutil.StartGateway(abBin, env, "--data-dir", filepath.Join(tmp, "fedb"), "--config", cfg)
	if err != nil {
		return err
	}
	defer fedB.Stop()
	throughB, closeB, err := connect(ctx, fedB.Addr)
	if err != nil {
		return err
	}
	defer closeB()
	sides := []func() (int64, error){
		func() (int64, error) { return query(ctx, direct, "SELECT * FROM t") },
		func() (int64, error) { return query(ctx, through, `SELECT * FROM up."default".t`) },
		func() (int64, error) { return query(ctx, throughB, `SELECT * FROM up."default".t`) },
	}
	for _, f := range sides {
		if n, err := f(); err != nil || n != rows {
			return fmt.Errorf("untimed run: %d rows, %v", n, err)
		}
	}
	load := loadavg()
	a0, err1 := fed.CPU()
	b0, err2 := fedB.CPU()
	var ratioA, ratioB []float64
	for i := range runs {
		var d [3]time.Duration
		for j := range 3 {
			k := (i + j) % 3
			if d[k], err = timed(sides[k], rows); err != nil {
				return err
			}
		}
		ratioA = append(ratioA, d[0].Seconds()/d[1].Seconds())
		ratioB = append(ratioB, d[0].Seconds()/d[2].Seconds())
	}
	a1, err3 := fed.CPU()
	b1, err4 := fedB.CPU()
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		return err
	}
	slices.Sort(ratioA)
	slices.Sort(ratioB)
	calls := time.Duration(runs)
	fmt.Printf("A/B stream, %d rounds of three; load average %s before, %s after\n", runs, load, loadavg())
	fmt.Printf("A (-fed-bin) ratio %.2f (rounds %.2f-%.2f), CPU per call %s\n", ratioA[runs/2], ratioA[0], ratioA[runs-1], ((a1 - a0) / calls).Round(time.Millisecond))
	fmt.Printf("B (-ab-bin)  ratio %.2f (rounds %.2f-%.2f), CPU per call %s\n", ratioB[runs/2], ratioB[0], ratioB[runs-1], ((b1 - b0) / calls).Round(time.Millisecond))

	// The small aggregate, A and B alternately: the CPU each adds to a call.
	var added [2][]time.Duration
	a0, err1 = fed.CPU()
	b0, err2 = fedB.CPU()
	for i := range small {
		for j, cnxn := range []adbc.Connection{through, throughB} {
			if i%2 == 1 {
				cnxn = []adbc.Connection{throughB, through}[j]
				j = 1 - j
			}
			d, err := timed(func() (int64, error) { return query(ctx, cnxn, fmt.Sprintf(aggQuery, `up."default".small`)) }, 1)
			if err != nil {
				return err
			}
			added[j] = append(added[j], d)
		}
	}
	a1, err3 = fed.CPU()
	b1, err4 = fedB.CPU()
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		return err
	}
	fmt.Printf("small aggregate, %d calls each: A median %s, CPU per call %s; B median %s, CPU per call %s\n", small,
		median(added[0]).Round(10*time.Microsecond), ((a1 - a0) / time.Duration(small)).Round(10*time.Microsecond),
		median(added[1]).Round(10*time.Microsecond), ((b1 - b0) / time.Duration(small)).Round(10*time.Microsecond))
	return nil
}
