package server

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/handlers"
	"github.com/flightgw/flightgw/internal/duration"
	"github.com/flightgw/flightgw/txn"
)

// maintained is a Maintainer and Lister that records the runs it gets.
type maintained struct {
	mu   sync.Mutex
	runs map[string][]catalogs.MaintainRequest
	hold chan struct{} // when set, each run waits for a value from it
}

func (m *maintained) GetTableSpec(context.Context, catalogs.TableIdent) (catalogs.TableSpec, error) {
	return catalogs.TableSpec{}, nil
}
func (m *maintained) WriteBatch(context.Context, catalogs.TableIdent, arrow.RecordBatch) (catalogs.WriteReceipt, error) {
	return catalogs.WriteReceipt{}, nil
}
func (m *maintained) Commit(context.Context, catalogs.TableIdent, []catalogs.WriteReceipt) (catalogs.CommitOutcome, error) {
	return catalogs.CommitOutcome{}, nil
}
func (m *maintained) GetSecurityContext(context.Context, catalogs.TableIdent) (catalogs.SecurityContext, error) {
	return catalogs.SecurityContext{}, nil
}
func (m *maintained) ListNamespaces(context.Context) ([][]string, error) {
	return [][]string{{"db"}}, nil
}
func (m *maintained) ListTables(context.Context, []string) ([]catalogs.TableIdent, error) {
	return []catalogs.TableIdent{{Catalog: "lake", Namespace: []string{"db"}, Name: "a"}, {Catalog: "lake", Namespace: []string{"db"}, Name: "b"}}, nil
}
func (m *maintained) MaintainTasks() []string { return []string{catalogs.TaskExpireSnapshots} }
func (m *maintained) Maintain(_ context.Context, t catalogs.TableIdent, req catalogs.MaintainRequest) (catalogs.MaintainReport, error) {
	m.mu.Lock()
	m.runs[t.Name] = append(m.runs[t.Name], req)
	hold := m.hold
	m.mu.Unlock()
	if hold != nil {
		<-hold
	}
	return catalogs.MaintainReport{Tasks: []catalogs.TaskReport{{Task: catalogs.TaskExpireSnapshots, Committed: true}}}, nil
}

func (m *maintained) count(name string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.runs[name])
}

// TestMaintainAfterCommitsDuringARun: the commits that land while the
// run they triggered is under way trigger the next run once it is over,
// rather than one refused as already running (and their count lost).
func TestMaintainAfterCommitsDuringARun(t *testing.T) {
	f := &maintained{runs: map[string][]catalogs.MaintainRequest{}, hold: make(chan struct{})}
	cats := []handlers.Catalog{{Name: "lake", Type: "iceberg", Provider: f}}
	l := newMaintainLoop(MaintenanceConfig{AfterCommits: 2}, time.Hour, newMetrics(cats), cats, slog.Default())
	txns := txn.NewManager(time.Minute, nil, txn.WithObserver(l))
	defer txns.Close()
	l.start(txns)
	defer l.stop()
	a := catalogs.TableIdent{Catalog: "lake", Namespace: []string{"db"}, Name: "a"}
	for range 2 {
		l.Committed(a, catalogs.CommitOutcome{}, nil)
	}
	waitFor(t, "the first run", func() bool { return f.count("a") == 1 })
	for range 4 { // enough for two more runs: they are one, after the first
		l.Committed(a, catalogs.CommitOutcome{}, nil)
	}
	f.hold <- struct{}{}
	waitFor(t, "the run after the commits made during the first", func() bool { return f.count("a") == 2 })
	f.hold <- struct{}{}
	time.Sleep(20 * time.Millisecond)
	if n := f.count("a"); n != 2 {
		t.Errorf("%d runs, want 2", n)
	}
}

// TestMaintainAfterCommits: with maintenance.after_commits 3 a table is
// maintained in the background after its third and sixth landed commits,
// not after failed ones, with the configured tasks, the live
// transactions' files held and the commit messages' TTL as its floor;
// the commits are still counted in the metrics; after stop nothing runs.
func TestMaintainAfterCommits(t *testing.T) {
	f := &maintained{runs: map[string][]catalogs.MaintainRequest{}}
	cats := []handlers.Catalog{{Name: "lake", Type: "iceberg", Provider: f}}
	m := newMetrics(cats)
	l := newMaintainLoop(MaintenanceConfig{AfterCommits: 3, Tasks: []string{catalogs.TaskExpireSnapshots}}, time.Hour, m, cats, slog.Default())
	txns := txn.NewManager(time.Minute, nil, txn.WithObserver(l))
	defer txns.Close()
	l.start(txns)
	a := catalogs.TableIdent{Catalog: "lake", Namespace: []string{"db"}, Name: "a"}
	for range 2 {
		l.Committed(a, catalogs.CommitOutcome{}, nil)
	}
	l.Committed(a, catalogs.CommitOutcome{}, catalogs.ErrConflict)
	time.Sleep(20 * time.Millisecond)
	if n := f.count("a"); n != 0 {
		t.Fatalf("maintained after 2 landed commits: %d runs", n)
	}
	l.Committed(a, catalogs.CommitOutcome{}, nil)
	waitFor(t, "the run after 3 commits", func() bool { return f.count("a") == 1 })
	for range 3 {
		l.Committed(a, catalogs.CommitOutcome{}, nil)
	}
	// The metric is counted after Maintain returns, so the wait is on it
	// as well as on the run itself.
	runs := func() float64 {
		return value(t, m.maintain.runs.WithLabelValues("lake", "iceberg", catalogs.TaskExpireSnapshots, "ok"))
	}
	waitFor(t, "the run after 6 commits", func() bool { return f.count("a") == 2 && runs() >= 2 })
	req := f.runs["a"][0]
	if len(req.Tasks) != 1 || req.Tasks[0] != catalogs.TaskExpireSnapshots || req.Held == nil || req.ReplayWindow < time.Hour {
		t.Errorf("request = %+v: want the configured task, Held and a replay window of at least the TTL", req)
	}
	if got := value(t, m.commits.WithLabelValues("lake", "iceberg", "ok")); got != 6 {
		t.Errorf("commits counted = %v, want 6", got)
	}
	if got := runs(); got != 2 {
		t.Errorf("maintenance runs counted = %v, want 2", got)
	}
	l.stop()
	for range 3 {
		l.Committed(a, catalogs.CommitOutcome{}, nil)
	}
	time.Sleep(20 * time.Millisecond)
	if n := f.count("a"); n != 2 {
		t.Errorf("runs after stop: %d, want 2", n)
	}
}

// TestMaintainInterval: with maintenance.interval every listed table is
// maintained periodically, and stop ends the loop.
func TestMaintainInterval(t *testing.T) {
	f := &maintained{runs: map[string][]catalogs.MaintainRequest{}}
	cats := []handlers.Catalog{{Name: "lake", Type: "iceberg", Provider: f}}
	l := newMaintainLoop(MaintenanceConfig{Interval: duration.Of(10 * time.Millisecond)}, time.Hour, newMetrics(cats), cats, slog.Default())
	txns := txn.NewManager(time.Minute, nil, txn.WithObserver(l))
	defer txns.Close()
	l.start(txns)
	waitFor(t, "two runs over both tables", func() bool { return f.count("a") >= 2 && f.count("b") >= 2 })
	l.stop()
	n := f.count("a")
	time.Sleep(40 * time.Millisecond)
	if f.count("a") != n {
		t.Error("the loop ran after stop")
	}
}

// TestMaintenanceConfig: off by default; bad values name their key.
func TestMaintenanceConfig(t *testing.T) {
	cfg, err := LoadConfig("")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Maintenance.Interval.Duration != 0 || cfg.Maintenance.AfterCommits != 0 {
		t.Errorf("defaults: %+v, want off", cfg.Maintenance)
	}
	for body, want := range map[string]string{
		"maintenance: {after_commits: -1}\n":         "maintenance.after_commits",
		"maintenance: {interval: -1h}\n":             "maintenance.interval",
		"maintenance: {tasks: [vacuum_all]}\n":       "vacuum_all",
		"maintenance: {tasks: [expire_snapshots]}\n": "",
	} {
		_, err := LoadConfig(writeConfig(t, body))
		if want == "" {
			if err != nil {
				t.Errorf("%q: %v", body, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: err = %v, want mention of %s", body, err, want)
		}
	}
	t.Setenv("FLIGHTGW_MAINTENANCE_AFTER_COMMITS", "50")
	t.Setenv("FLIGHTGW_MAINTENANCE_INTERVAL", "30m")
	if cfg, err = LoadConfig(""); err != nil || cfg.Maintenance.AfterCommits != 50 || cfg.Maintenance.Interval.Duration != 30*time.Minute {
		t.Errorf("from the environment: %+v, %v", cfg.Maintenance, err)
	}
}
