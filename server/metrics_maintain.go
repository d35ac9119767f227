package server

import (
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/flightgw/flightgw/catalogs"
)

// maintainMetrics count the table maintenance runs (txn.MaintainObserver),
// by catalog, backend type and task; no label names a table.
type maintainMetrics struct {
	runs      *prometheus.CounterVec
	files     *prometheus.CounterVec
	bytes     *prometheus.CounterVec
	snapshots *prometheus.CounterVec
	seconds   *prometheus.HistogramVec
}

func newMaintainMetrics(reg *prometheus.Registry) maintainMetrics {
	m := maintainMetrics{
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "flightgw_maintenance_runs_total",
			Help: "Table maintenance tasks run, by catalog, backend type, task and result (ok, dry_run, abandoned, error).",
		}, []string{"catalog", "backend", "task", "result"}),
		files: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "flightgw_maintenance_deleted_files_total", Help: "Files table maintenance deleted, by catalog, backend type and task.",
		}, []string{"catalog", "backend", "task"}),
		bytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "flightgw_maintenance_deleted_bytes_total", Help: "Bytes of the files in flightgw_maintenance_deleted_files_total.",
		}, []string{"catalog", "backend", "task"}),
		snapshots: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "flightgw_maintenance_expired_snapshots_total", Help: "Snapshots table maintenance expired, by catalog and backend type.",
		}, []string{"catalog", "backend"}),
		seconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "flightgw_maintenance_duration_seconds", Help: "Duration of table maintenance runs, by catalog and backend type.",
			Buckets: []float64{.01, .05, .1, .5, 1, 5, 10, 30, 60, 300, 900},
		}, []string{"catalog", "backend"}),
	}
	reg.MustRegister(m.runs, m.files, m.bytes, m.snapshots, m.seconds)
	return m
}

// Maintained counts one maintenance run (txn.MaintainObserver). A run that
// failed as a whole counts one error under the task "all".
func (m *metrics) Maintained(t catalogs.TableIdent, rep catalogs.MaintainReport, err error, took time.Duration) {
	c, b := m.catalog(t)
	m.maintain.seconds.WithLabelValues(c, b).Observe(took.Seconds())
	if err != nil {
		result := "error"
		if errors.Is(err, catalogs.ErrConflict) {
			result = "abandoned"
		}
		m.maintain.runs.WithLabelValues(c, b, "all", result).Inc()
		return
	}
	for _, tr := range rep.Tasks {
		result := "ok"
		switch {
		case tr.Abandoned != "":
			result = "abandoned"
		case rep.DryRun:
			result = "dry_run"
		}
		m.maintain.runs.WithLabelValues(c, b, tr.Task, result).Inc()
		if result != "ok" {
			continue
		}
		m.maintain.files.WithLabelValues(c, b, tr.Task).Add(float64(tr.Deleted()))
		m.maintain.bytes.WithLabelValues(c, b, tr.Task).Add(float64(tr.Bytes))
		m.maintain.snapshots.WithLabelValues(c, b).Add(float64(len(tr.ExpiredSnapshots)))
	}
}
