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
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-adbc/go/adbc"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"

	"github.com/flightgw/flightgw/integration/bench/benchutil"
)

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
	pool := benchutil.Pool(batchRows)
	defer benchutil.Release(pool)
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
	defer gw.Stop()
	mb := float64(total*benchutil.BytesPerRow(pool[0])) / 1e6
	fmt.Printf("load average before: %s\n", loadavg())
	fmt.Printf("rows %d per round, Arrow %.0f MB, batches of %d rows, %d paired rounds\n", total, mb, batchRows, rounds)
	var ratios []float64
	for r := 1; r <= rounds; r++ {
		g, err := ingest(gw, pool, total, fmt.Sprintf("bench_%d", r))
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
	rss, err := gw.PeakRSS()
	if err != nil {
		return err
	}
	sort.Float64s(ratios)
	fmt.Printf("load average after: %s\n", loadavg())
	fmt.Printf("paimon ingest bench, %d rows: pypaimon/gateway time median %.2f (min %.2f, max %.2f; above 1: the gateway is faster); gateway peak RSS %.0f MB\n",
		total, ratios[len(ratios)/2], ratios[0], ratios[len(ratios)-1], float64(rss)/1e6)
	return nil
}

func writePool(path string, pool []arrow.RecordBatch) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	w, err := ipc.NewFileWriter(f, ipc.WithSchema(benchutil.Schema))
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

// startGateway runs bin with one Paimon catalog "pm" on a local warehouse.
func startGateway(bin, tmp string) (*benchutil.Gateway, error) {
	cfg := filepath.Join(tmp, "flightgw.yaml")
	yaml := fmt.Sprintf("catalogs:\n  - name: pm\n    type: paimon\n    properties: {warehouse: %q, create-namespaces: default}\ndefault_catalog: pm\n",
		filepath.Join(tmp, "gw"))
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		return nil, err
	}
	return benchutil.StartGateway(bin, nil, "--config", cfg, "--data-dir", filepath.Join(tmp, "data"))
}

// ingest sends total rows to a new table through ADBC and times it,
// connection set-up excluded.
func ingest(gw *benchutil.Gateway, pool []arrow.RecordBatch, total int64, table string) (time.Duration, error) {
	opts := map[string]string{adbc.OptionKeyIngestTargetTable: table, adbc.OptionKeyIngestMode: adbc.OptionValueIngestModeCreate,
		adbc.OptionValueIngestTargetCatalog: "pm", adbc.OptionValueIngestTargetDBSchema: "default"}
	return benchutil.Ingest(context.Background(), gw.Addr, opts, benchutil.NewSource(pool, total), total)
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

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Join(strings.Fields(string(b))[:3], " ")
}
