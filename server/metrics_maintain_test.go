package server

import (
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/handlers"
	"github.com/flightgw/flightgw/txn"
)

// TestMaintainMetrics: the metrics are the txn.MaintainObserver, and count
// each task's result, what a committed run deleted and expired, and
// nothing of a dry run's or abandoned run's would-be deletions.
func TestMaintainMetrics(t *testing.T) {
	m := newMetrics([]handlers.Catalog{{Name: "lake", Type: "iceberg"}})
	var _ txn.MaintainObserver = m
	tbl := catalogs.TableIdent{Catalog: "lake", Namespace: []string{"db"}, Name: "t"}
	task := func(committed bool, abandoned string) catalogs.TaskReport {
		return catalogs.TaskReport{Task: catalogs.TaskExpireSnapshots, Committed: committed, Abandoned: abandoned,
			ExpiredSnapshots: []int64{1, 2}, DataFiles: 3, ManifestFiles: 2, Bytes: 100}
	}
	m.Maintained(tbl, catalogs.MaintainReport{Tasks: []catalogs.TaskReport{task(true, "")}}, nil, time.Second)
	m.Maintained(tbl, catalogs.MaintainReport{DryRun: true, Tasks: []catalogs.TaskReport{task(false, "")}}, nil, time.Second)
	m.Maintained(tbl, catalogs.MaintainReport{Tasks: []catalogs.TaskReport{task(false, "lost to a writer")}}, nil, time.Second)
	m.Maintained(tbl, catalogs.MaintainReport{}, errors.New("boom"), time.Second)
	for _, c := range []struct {
		got  float64
		want float64
		what string
	}{
		{value(t, m.maintain.runs.WithLabelValues("lake", "iceberg", "expire_snapshots", "ok")), 1, "ok runs"},
		{value(t, m.maintain.runs.WithLabelValues("lake", "iceberg", "expire_snapshots", "dry_run")), 1, "dry runs"},
		{value(t, m.maintain.runs.WithLabelValues("lake", "iceberg", "expire_snapshots", "abandoned")), 1, "abandoned runs"},
		{value(t, m.maintain.runs.WithLabelValues("lake", "iceberg", "all", "error")), 1, "failed runs"},
		{value(t, m.maintain.files.WithLabelValues("lake", "iceberg", "expire_snapshots")), 5, "deleted files"},
		{value(t, m.maintain.bytes.WithLabelValues("lake", "iceberg", "expire_snapshots")), 100, "deleted bytes"},
		{value(t, m.maintain.snapshots.WithLabelValues("lake", "iceberg")), 2, "expired snapshots"},
	} {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.what, c.got, c.want)
		}
	}
}

// value reads a counter.
func value(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var d dto.Metric
	if err := c.Write(&d); err != nil {
		t.Fatal(err)
	}
	return d.GetCounter().GetValue()
}
