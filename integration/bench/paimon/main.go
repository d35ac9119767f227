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
// auto-commit); its peak RSS is VmHWM after the last round. Each round
// also reports the CPU seconds each side used (the gateway's from
// /proc, pypaimon's from its rusage): on a shared machine they vary less
// than the times. With -base, a second gateway binary (say, the build
// before a change) runs in every round too, and the median of its time
// over the first one's is printed: a before/after comparison under the
// same load.
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
	base := flag.String("base", "", "a second gateway binary to compare with -bin in every round")
	flag.Parse()
	if err := run(*bin, *base, *python, *script, *total, *rounds, *batchRows); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(bin, baseBin, python, script string, total int64, rounds, batchRows int) error {
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
	gw, err := startGateway(bin, filepath.Join(tmp, "gw"))
	if err != nil {
		return err
	}
	defer gw.Stop()
	var base *benchutil.Gateway
	if baseBin != "" {
		if base, err = startGateway(baseBin, filepath.Join(tmp, "base")); err != nil {
			return err
		}
		defer base.Stop()
	}
	mb := float64(total*benchutil.BytesPerRow(pool[0])) / 1e6
	fmt.Printf("load average before: %s\n", loadavg())
	fmt.Printf("rows %d per round, Arrow %.0f MB, batches of %d rows, %d paired rounds\n", total, mb, batchRows, rounds)
	var ratios, baseRatios []float64
	for r := 1; r <= rounds; r++ {
		g, gcpu, err := ingest(gw, pool, total, fmt.Sprintf("bench_%d", r))
		if err != nil {
			return fmt.Errorf("round %d, gateway: %w", r, err)
		}
		p, pcpu, err := pypaimon(python, script, poolFile, total, filepath.Join(tmp, "py"), fmt.Sprintf("bench_%d", r))
		if err != nil {
			return fmt.Errorf("round %d, pypaimon: %w", r, err)
		}
		ratios = append(ratios, p.Seconds()/g.Seconds())
		fmt.Printf("round %d: gateway %.2fs (%.0f rows/s, %.1f MB/s, %.2f CPU-s), pypaimon %.2fs (%.0f rows/s, %.2f CPU-s), pypaimon/gateway time %.2f\n",
			r, g.Seconds(), float64(total)/g.Seconds(), mb/g.Seconds(), gcpu.Seconds(), p.Seconds(), float64(total)/p.Seconds(), pcpu.Seconds(), ratios[len(ratios)-1])
		if base != nil {
			b, bcpu, err := ingest(base, pool, total, fmt.Sprintf("bench_%d", r))
			if err != nil {
				return fmt.Errorf("round %d, base gateway: %w", r, err)
			}
			baseRatios = append(baseRatios, b.Seconds()/g.Seconds())
			fmt.Printf("round %d: base gateway %.2fs (%.2f CPU-s), base/gateway time %.2f\n", r, b.Seconds(), bcpu.Seconds(), baseRatios[len(baseRatios)-1])
		}
	}
	rss, err := gw.PeakRSS()
	if err != nil {
		return err
	}
	sort.Float64s(ratios)
	fmt.Printf("load average after: %s\n", loadavg())
	fmt.Printf("paimon ingest bench, %d rows: pypaimon/gateway time median %.2f (min %.2f, max %.2f; above 1: the gateway is faster); gateway peak RSS %.0f MB\n",
		total, ratios[len(ratios)/2], ratios[0], ratios[len(ratios)-1], float64(rss)/1e6)
	if base != nil {
		brss, err := base.PeakRSS()
		if err != nil {
			return err
		}
		sort.Float64s(baseRatios)
		fmt.Printf("base/gateway time median %.2f (min %.2f, max %.2f; above 1: -bin is faster than -base); base peak RSS %.0f MB\n",
			baseRatios[len(baseRatios)/2], baseRatios[0], baseRatios[len(baseRatios)-1], float64(brss)/1e6)
	}
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

// startGateway runs bin with one Paimon catalog "pm" on a local warehouse
// in dir.
func startGateway(bin, dir string) (*benchutil.Gateway, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	cfg := filepath.Join(dir, "flightgw.yaml")
	yaml := fmt.Sprintf("catalogs:\n  - name: pm\n    type: paimon\n    properties: {warehouse: %q, create-namespaces: default}\ndefault_catalog: pm\n",
		filepath.Join(dir, "wh"))
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		return nil, err
	}
	return benchutil.StartGateway(bin, nil, "--config", cfg, "--data-dir", filepath.Join(dir, "data"))
}

// ingest sends total rows to a new table through ADBC and times it,
// connection set-up excluded; it returns the gateway's CPU time over the
// ingest too.
func ingest(gw *benchutil.Gateway, pool []arrow.RecordBatch, total int64, table string) (time.Duration, time.Duration, error) {
	opts := map[string]string{adbc.OptionKeyIngestTargetTable: table, adbc.OptionKeyIngestMode: adbc.OptionValueIngestModeCreate,
		adbc.OptionValueIngestTargetCatalog: "pm", adbc.OptionValueIngestTargetDBSchema: "default"}
	cpu0, err := gw.CPU()
	if err != nil {
		return 0, 0, err
	}
	d, err := benchutil.Ingest(context.Background(), gw.Addr, opts, benchutil.NewSource(pool, total), total)
	if err != nil {
		return 0, 0, err
	}
	cpu1, err := gw.CPU()
	return d, cpu1 - cpu0, err
}

// pypaimon runs one pypaimon round and returns the time it measured and
// the CPU time of the whole process (its start and pool loading
// included, so an upper bound).
func pypaimon(python, script, poolFile string, total int64, warehouse, table string) (time.Duration, time.Duration, error) {
	cmd := exec.Command(python, script, poolFile, strconv.FormatInt(total, 10), warehouse, table)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return 0, 0, fmt.Errorf("%w: %s", err, out)
	}
	cpu := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	for _, line := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(line, "PYPAIMON_SECONDS "); ok {
			s, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return time.Duration(s * float64(time.Second)), cpu, err
		}
	}
	return 0, 0, fmt.Errorf("no PYPAIMON_SECONDS in: %s", out)
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Join(strings.Fields(string(b))[:3], " ")
}
