package server

import (
	"context"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/handlers"
)

// metrics are the gateway's Prometheus metrics (docs/configuration.md,
// "Metrics"), in a registry the Server owns: nothing is registered in the
// client library's global registry, so that two servers in one process
// (the tests) count apart. Labels are bounded: RPC metrics name the method
// only, the others the configured catalog and its backend type; no metric
// names a table.
type metrics struct {
	reg *prometheus.Registry
	// types maps a configured catalog to its backend type.
	types map[string]string

	rpcs        *prometheus.CounterVec
	rpcSeconds  *prometheus.HistogramVec
	rows, bytes *prometheus.CounterVec
	commits     *prometheus.CounterVec
	conflicts   *prometheus.CounterVec
	maintain    maintainMetrics
}

// otherCatalog labels a table whose catalog is not configured (never
// expected: writes resolve their catalog first).
const otherCatalog = "other"

// gauges are what the metrics read at each scrape.
type gauges struct {
	openTxns   func() int
	querySlots func() (running, waiting, limit int)
	engineMem  func() (int64, error) // nil without the engine
	catalogs   []handlers.Catalog
}

func newMetrics(cats []handlers.Catalog) *metrics {
	m := &metrics{reg: prometheus.NewRegistry(), types: map[string]string{}}
	for _, c := range cats {
		m.types[c.Name] = c.Type
	}
	m.rpcs = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "flightgw_rpcs_total", Help: "gRPC calls finished, by method and status code.",
	}, []string{"method", "code"})
	m.rpcSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "flightgw_rpc_duration_seconds", Help: "Duration of gRPC calls (of the whole stream for streaming calls), by method.",
		Buckets: []float64{.001, .005, .01, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300},
	}, []string{"method"})
	m.rows = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "flightgw_ingested_rows_total", Help: "Rows written by writes that succeeded (committed, or joined to a transaction), by catalog.",
	}, []string{"catalog"})
	m.bytes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "flightgw_ingested_bytes_total", Help: "Arrow buffer bytes of the rows in flightgw_ingested_rows_total, by catalog.",
	}, []string{"catalog"})
	m.commits = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "flightgw_commits_total", Help: "Table commits attempted, by catalog, backend type and result (ok, conflict, unknown, error).",
	}, []string{"catalog", "backend", "result"})
	m.conflicts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "flightgw_commit_conflicts_total", Help: "Commit conflicts retried by commits that landed (CommitOutcome.Retried), by catalog and backend type.",
	}, []string{"catalog", "backend"})
	m.reg.MustRegister(m.rpcs, m.rpcSeconds, m.rows, m.bytes, m.commits, m.conflicts,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.maintain = newMaintainMetrics(m.reg)
	return m
}

// watch registers the gauges read at scrape time.
func (m *metrics) watch(g gauges) {
	m.reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "flightgw_open_transactions", Help: "Transactions open (begun and not yet committed, rolled back, prepared or expired).",
		}, func() float64 { return float64(g.openTxns()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "flightgw_query_slots_running", Help: "Queries running (holding a slot of limits.max_concurrent_queries).",
		}, func() float64 { r, _, _ := g.querySlots(); return float64(r) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "flightgw_query_slots_waiting", Help: "Queries waiting for a slot of limits.max_concurrent_queries.",
		}, func() float64 { _, w, _ := g.querySlots(); return float64(w) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "flightgw_query_slots_limit", Help: "limits.max_concurrent_queries (0: no limit).",
		}, func() float64 { _, _, l := g.querySlots(); return float64(l) }),
		breakerCollector{cats: g.catalogs},
	)
	if g.engineMem != nil {
		m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "flightgw_engine_memory_bytes", Help: "Memory held by the SQL engine's buffer manager (DuckDB's duckdb_memory()).",
		}, func() float64 {
			n, err := g.engineMem()
			if err != nil {
				return -1
			}
			return float64(n)
		}))
	}
}

// catalog is the catalog label of a table, and its backend type.
func (m *metrics) catalog(t catalogs.TableIdent) (name, backend string) {
	if typ, ok := m.types[t.Catalog]; ok {
		return t.Catalog, typ
	}
	return otherCatalog, otherCatalog
}

// Wrote counts an ingest (txn.Observer).
func (m *metrics) Wrote(t catalogs.TableIdent, rows, bytes int64) {
	c, _ := m.catalog(t)
	m.rows.WithLabelValues(c).Add(float64(rows))
	m.bytes.WithLabelValues(c).Add(float64(bytes))
}

// Committed counts a table's commit (txn.Observer).
func (m *metrics) Committed(t catalogs.TableIdent, out catalogs.CommitOutcome, err error) {
	c, b := m.catalog(t)
	result := "ok"
	switch {
	case err == nil:
		m.conflicts.WithLabelValues(c, b).Add(float64(out.Retried))
	case errors.Is(err, catalogs.ErrConflict):
		result = "conflict"
	case errors.Is(err, catalogs.ErrUnavailable):
		result = "unknown"
	default:
		result = "error"
	}
	m.commits.WithLabelValues(c, b, result).Inc()
}

// observe counts one finished call.
func (m *metrics) observe(fullMethod string, start time.Time, err error) {
	method := methodName(fullMethod)
	m.rpcs.WithLabelValues(method, status.Code(err).String()).Inc()
	m.rpcSeconds.WithLabelValues(method).Observe(time.Since(start).Seconds())
}

// unary and stream are the interceptors that count calls. gRPC calls an
// interceptor only for a method it serves, so the method label is bounded.
func (m *metrics) unary() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		start := time.Now()
		resp, err := handler(ctx, req)
		m.observe(info.FullMethod, start, err)
		return resp, err
	}
}

func (m *metrics) stream() grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		start := time.Now()
		err := handler(srv, ss)
		m.observe(info.FullMethod, start, err)
		return err
	}
}

// breakerCollector reports the circuit breakers of the catalogs that have
// them (catalogs.BreakerReporter) as flightgw_breaker_state.
type breakerCollector struct {
	cats []handlers.Catalog
}

var breakerDesc = prometheus.NewDesc("flightgw_breaker_state",
	"State of a catalog's circuit breaker: 0 closed, 1 half-open, 2 open.", []string{"catalog", "breaker"}, nil)

func (b breakerCollector) Describe(ch chan<- *prometheus.Desc) { ch <- breakerDesc }

func (b breakerCollector) Collect(ch chan<- prometheus.Metric) {
	for _, c := range b.cats {
		br, ok := c.Provider.(catalogs.BreakerReporter)
		if !ok {
			continue
		}
		for _, x := range br.Breakers() {
			ch <- prometheus.MustNewConstMetric(breakerDesc, prometheus.GaugeValue, float64(x.State), c.Name, x.Name)
		}
	}
}
