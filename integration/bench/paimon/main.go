// Command paimon benchmarks ingest into a Paimon append table through the
// gateway against pypaimon writing the same Arrow data in-process.
//
//	go run ./integration/bench/paimon -bin bin/flightgw -python .venv-paimon/bin/python [-rows 10000000] [-rounds 3]
//
// Rows are (int64, float64, a 16-byte string, a timestamp), cycled from a
// pool of distinct batches that both sides read: the pool is written once
// to an Arrow IPC file, which pypaimon_write.py loads before its clock
// starts. Rounds alternate (gateway, pypaimon, gateway, ...), each into a
// new table, so that both see the same machine load; each round's ratio
// is pypaimon's time over the gateway's (above 1: the gateway is faster),
// and the median ratio is printed. One gateway process serves every round
// (a Paimon catalog on a local warehouse, ADBC Go ingest, mode create,
// auto-commit); its peak RSS is VmHWM after the last round.
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-adbc/go/adbc"
	adbcflight "github.com/apache/arrow-adbc/go/adbc/driver/flightsql"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

var schema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "x", Type: arrow.PrimitiveTypes.Float64},
	{Name: "tag", Type: arrow.BinaryTypes.String},
	{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
}, nil)

const poolSize = 16

func main() {
	bin := flag.String("bin", "bin/flightgw", "gateway binary")
	python := flag.String("python", ".venv-paimon/bin/python", "python of the pypaimon venv")
	script := flag.String("script", "integration/bench/paimon/pypaimon_write.py", "pypaimon round")
	total := flag.Int64("rows", 10_000_000, "rows per round")
	rounds := flag.Int("rounds", 3, "pairs of rounds")
	batchRows := flag.Int("batch", 65536, "rows per Arrow batch")
	flag.Parse()
	if err := run(*bin, *python, *script, *total, *rounds, *batchRows); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(bin, python, script string, total int64, rounds, batchRows int) error {
	pool := makePool(batchRows)
	defer func() {
		for _, b := range pool {
			b.Release()
		}
	}()
	tmp, err := os.MkdirTemp("", "flightgw-paimon-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	poolFile := filepath.Join(tmp, "pool.arrow")
	if err := writePool(poolFile, pool); err != nil {
		return err
	}
	gw, err := startGateway(bin, tmp)
	if err != nil {
		return err
	}
	defer gw.stop()
	mb := float64(total*bytesPerRow(pool[0])) / 1e6
	fmt.Printf("load average before: %s\n", loadavg())
	fmt.Printf("rows %d per round, Arrow %.0f MB, batches of %d rows, %d paired rounds\n", total, mb, batchRows, rounds)
	var ratios []float64
	for r := 1; r <= rounds; r++ {
		g, err := gw.ingest(pool, total, fmt.Sprintf("bench_%d", r))
		if err != nil {
			return fmt.Errorf("round %d, gateway: %w", r, err)
		}
		p, err := pypaimon(python, script, poolFile, total, filepath.Join(tmp, "py"), fmt.Sprintf("bench_%d", r))
		if err != nil {
			return fmt.Errorf("round %d, pypaimon: %w", r, err)
		}
		ratios = append(ratios, p.Seconds()/g.Seconds())
		fmt.Printf("round %d: gateway %.2fs (%.0f rows/s, %.1f MB/s), pypaimon %.2fs (%.0f rows/s), pypaimon/gateway time %.2f\n",
			r, g.Seconds(), float64(total)/g.Seconds(), mb/g.Seconds(), p.Seconds(), float64(total)/p.Seconds(), ratios[len(ratios)-1])
	}
	rss, err := peakRSS(gw.cmd.Process.Pid)
	if err != nil {
		return err
	}
	sort.Float64s(ratios)
	fmt.Printf("load average after: %s\n", loadavg())
	fmt.Printf("paimon ingest bench, %d rows: pypaimon/gateway time median %.2f (min %.2f, max %.2f; above 1: the gateway is faster); gateway peak RSS %.0f MB\n",
		total, ratios[len(ratios)/2], ratios[0], ratios[len(ratios)-1], float64(rss)/1e6)
	return nil
}

func makePool(n int) []arrow.RecordBatch {
	rng := rand.New(rand.NewPCG(1, 2))
	out := make([]arrow.RecordBatch, poolSize)
	for p := range out {
		b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
		ids := b.Field(0).(*array.Int64Builder)
		xs := b.Field(1).(*array.Float64Builder)
		tags := b.Field(2).(*array.StringBuilder)
		tss := b.Field(3).(*array.TimestampBuilder)
		base := int64(1_700_000_000_000_000)
		for i := range n {
			ids.Append(int64(p*n + i))
			xs.Append(rng.NormFloat64() * 1000)
			tags.Append(fmt.Sprintf("tag-%011x", rng.Uint64()>>20)) // 16 bytes
			tss.Append(arrow.Timestamp(base + rng.Int64N(365*86400*1_000_000)))
		}
		out[p] = b.NewRecordBatch()
		b.Release()
	}
	return out
}

func writePool(path string, pool []arrow.RecordBatch) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	w, err := ipc.NewFileWriter(f, ipc.WithSchema(schema))
	if err != nil {
		return err
	}
	for _, b := range pool {
		if err := w.Write(b); err != nil {
			return err
		}
	}
	if err := w.Close(); err != nil {
		return err
	}
	return f.Close()
}

func bytesPerRow(b arrow.RecordBatch) int64 {
	var n int64
	for _, c := range b.Columns() {
		for _, buf := range c.Data().Buffers() {
			if buf != nil {
				n += int64(buf.Len())
			}
		}
	}
	return n / b.NumRows()
}

// source streams total rows from the pool without copying.
type source struct {
	pool      []arrow.RecordBatch
	remaining int64
	i         int
	cur       arrow.RecordBatch
}

func (s *source) Schema() *arrow.Schema          { return schema }
func (s *source) Retain()                        {}
func (s *source) Release()                       {}
func (s *source) RecordBatch() arrow.RecordBatch { return s.cur }
func (s *source) Record() arrow.RecordBatch      { return s.cur }
func (s *source) Err() error                     { return nil }
func (s *source) Next() bool {
	if s.remaining <= 0 {
		s.cur = nil
		return false
	}
	b := s.pool[s.i%len(s.pool)]
	s.i++
	if b.NumRows() > s.remaining {
		b = b.NewSlice(0, s.remaining) // the last batch; released with the process
	}
	s.remaining -= b.NumRows()
	s.cur = b
	return true
}

type gateway struct {
	cmd  *exec.Cmd
	addr string
}

// startGateway runs bin with one Paimon catalog "pm" on a local warehouse.
func startGateway(bin, tmp string) (*gateway, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := l.Addr().String()
	l.Close()
	cfg := filepath.Join(tmp, "flightgw.yaml")
	yaml := fmt.Sprintf("catalogs:\n  - name: pm\n    type: paimon\n    properties: {warehouse: %q, create-namespaces: default}\ndefault_catalog: pm\n",
		filepath.Join(tmp, "gw"))
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "serve", "--config", cfg, "--data-dir", filepath.Join(tmp, "data"), "--listen", addr)
	cmd.Env = append(os.Environ(), "FLIGHTGW_LOG_LEVEL=warn")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	g := &gateway{cmd: cmd, addr: addr}
	for i := 0; ; i++ {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			return g, nil
		}
		if i > 600 {
			g.stop()
			return nil, fmt.Errorf("gateway did not listen on %s", addr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (g *gateway) stop() {
	_ = g.cmd.Process.Signal(os.Interrupt)
	_ = g.cmd.Wait()
}

// ingest sends total rows to a new table through ADBC and times it,
// connection set-up excluded.
func (g *gateway) ingest(pool []arrow.RecordBatch, total int64, table string) (time.Duration, error) {
	ctx := context.Background()
	db, err := adbcflight.NewDriver(memory.DefaultAllocator).NewDatabase(map[string]string{adbc.OptionKeyURI: "grpc://" + g.addr})
	if err != nil {
		return 0, err
	}
	defer db.Close()
	cnxn, err := db.Open(ctx)
	if err != nil {
		return 0, err
	}
	defer cnxn.Close()
	stmt, err := cnxn.NewStatement()
	if err != nil {
		return 0, err
	}
	defer stmt.Close()
	for k, v := range map[string]string{adbc.OptionKeyIngestTargetTable: table, adbc.OptionKeyIngestMode: adbc.OptionValueIngestModeCreate,
		adbc.OptionValueIngestTargetCatalog: "pm", adbc.OptionValueIngestTargetDBSchema: "default"} {
		if err := stmt.SetOption(k, v); err != nil {
			return 0, err
		}
	}
	start := time.Now()
	if err := stmt.BindStream(ctx, &source{pool: pool, remaining: total}); err != nil {
		return 0, err
	}
	n, err := stmt.ExecuteUpdate(ctx)
	if err != nil {
		return 0, err
	}
	if n != total {
		return 0, fmt.Errorf("gateway ingested %d rows, want %d", n, total)
	}
	return time.Since(start), nil
}

// pypaimon runs one pypaimon round and returns the time it measured.
func pypaimon(python, script, poolFile string, total int64, warehouse, table string) (time.Duration, error) {
	out, err := exec.Command(python, script, poolFile, strconv.FormatInt(total, 10), warehouse, table).CombinedOutput()
	if err != nil {
		return 0, fmt.Errorf("%w: %s", err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(line, "PYPAIMON_SECONDS "); ok {
			s, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return time.Duration(s * float64(time.Second)), err
		}
	}
	return 0, fmt.Errorf("no PYPAIMON_SECONDS in: %s", out)
}

// peakRSS reads VmHWM (peak resident set) of pid.
func peakRSS(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb * 1024, err
		}
	}
	return 0, fmt.Errorf("no VmHWM for pid %d", pid)
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Join(strings.Fields(string(b))[:3], " ")
}
