package integration

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-adbc/go/adbc"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/flightgw/flightgw/engine"
	"github.com/flightgw/flightgw/server"
)

// runGateway runs the gateway as `flightgw serve` does (server.Run, with
// its side listeners) with health.listen on a free port, and returns the
// gateway and the health listener's address, read from the log lines
// that name them.
func runGateway(t *testing.T) (*gateway, string) {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("FLIGHTGW_DATA_DIR", dir)
	t.Setenv("FLIGHTGW_LISTEN", "127.0.0.1:0")
	t.Setenv("FLIGHTGW_HEALTH_LISTEN", "127.0.0.1:0")
	cfg, err := server.LoadConfig("")
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- server.Run(ctx, cfg, log) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
	})
	addr := func(msg string) string {
		re := regexp.MustCompile(`msg="` + msg + `" addr=(\S+)`)
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if m := re.FindStringSubmatch(logs.String()); m != nil {
				return m[1]
			}
			select {
			case err := <-done:
				t.Fatalf("gateway stopped: %v\n%s", err, logs.String())
			default:
			}
		}
		t.Fatalf("no %q line in the log:\n%s", msg, logs.String())
		return ""
	}
	health := addr("health HTTP serving")
	return &gateway{addr: addr("flightgw serving"), dataDir: dir, logs: logs, shutdown: cancel}, health
}

// scrape reads /metrics and parses it as Prometheus' text format.
func scrape(t *testing.T, health string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get("http://" + health + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %s", resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	return fams
}

// value is the value of the sample of family name whose labels include
// labels ("k=v" pairs); found is false when there is none.
func value(fams map[string]*dto.MetricFamily, name string, labels ...string) (v float64, found bool) {
	f := fams[name]
	if f == nil {
		return 0, false
	}
next:
	for _, m := range f.GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		for _, kv := range labels {
			k, want, _ := strings.Cut(kv, "=")
			if have[k] != want {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount()), true
		}
	}
	return 0, false
}

// TestMetricsScrape: /metrics on health.listen counts what a client did
// through ADBC: the rows ingested (as many as were sent), the DoPut calls
// that succeeded, the commits, the open transaction while it is open, and
// reports the breakers, query slots and engine memory.
func TestMetricsScrape(t *testing.T) {
	g, health := runGateway(t)
	cnxn := g.adbcConn(t, nil)
	sent := 0
	for _, n := range []int{10, 25} {
		if _, err := ingest(t, cnxn, "m", adbc.OptionValueIngestModeCreateAppend, people(t, sent, n)); err != nil {
			t.Fatal(err)
		}
		sent += n
	}
	if engine.Built {
		if got := joined(t, cnxn, `SELECT count(*) FROM m`); got != fmt.Sprint(sent) {
			t.Fatalf("count = %s, want %d", got, sent)
		}
	}
	fams := scrape(t, health)
	want := func(name string, w float64, labels ...string) {
		t.Helper()
		if v, ok := value(fams, name, labels...); !ok || v != w {
			t.Errorf("%s%v = %v (found %v), want %v", name, labels, v, ok, w)
		}
	}
	want("flightgw_ingested_rows_total", float64(sent), "catalog=lake")
	if v, _ := value(fams, "flightgw_ingested_bytes_total", "catalog=lake"); v < float64(sent*8) {
		t.Errorf("flightgw_ingested_bytes_total = %v for %d rows", v, sent)
	}
	want("flightgw_rpcs_total", 2, "method=DoPut", "code=OK")
	want("flightgw_rpc_duration_seconds", 2, "method=DoPut")
	want("flightgw_commits_total", 2, "catalog=lake", "backend=iceberg", "result=ok")
	want("flightgw_commit_conflicts_total", 0, "catalog=lake", "backend=iceberg")
	want("flightgw_breaker_state", 0, "catalog=lake", "breaker=catalog")
	want("flightgw_open_transactions", 0)
	want("flightgw_query_slots_running", 0)
	if _, ok := value(fams, "flightgw_query_slots_limit"); !ok {
		t.Error("no flightgw_query_slots_limit")
	}
	if _, ok := value(fams, "process_resident_memory_bytes"); !ok {
		t.Error("no process_resident_memory_bytes")
	}
	if _, ok := value(fams, "flightgw_engine_memory_bytes"); ok != engine.Built {
		t.Errorf("flightgw_engine_memory_bytes present: %v, engine built: %v", ok, engine.Built)
	}
	if v, _ := value(fams, "flightgw_rpcs_total", "method=DoGet", "code=OK"); engine.Built && v < 1 {
		t.Errorf("flightgw_rpcs_total{method=DoGet,code=OK} = %v after a query", v)
	}
	for name, f := range fams {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "table" {
					t.Errorf("%s has a table label", name)
				}
			}
		}
	}

	// A transaction (ADBC with autocommit off) is open until it commits.
	if err := cnxn.(adbc.PostInitOptions).SetOption(adbc.OptionKeyAutoCommit, adbc.OptionValueDisabled); err != nil {
		t.Fatal(err)
	}
	if _, err := ingest(t, cnxn, "m", adbc.OptionValueIngestModeAppend, people(t, sent, 5)); err != nil {
		t.Fatal(err)
	}
	fams = scrape(t, health)
	want("flightgw_open_transactions", 1)
	want("flightgw_commits_total", 2, "catalog=lake", "backend=iceberg", "result=ok")
	if err := cnxn.(adbc.PostInitOptions).SetOption(adbc.OptionKeyAutoCommit, adbc.OptionValueEnabled); err != nil {
		t.Fatal(err)
	}
	fams = scrape(t, health)
	want("flightgw_open_transactions", 0)
	want("flightgw_commits_total", 3, "catalog=lake", "backend=iceberg", "result=ok")
	want("flightgw_ingested_rows_total", float64(sent+5), "catalog=lake")
}
