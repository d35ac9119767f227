package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/handlers"
	"github.com/flightgw/flightgw/internal/duration"
	"github.com/flightgw/flightgw/internal/recovered"
	"github.com/flightgw/flightgw/txn"
)

// MaintenanceConfig runs table maintenance (docs/maintenance.md) by
// itself, beside the MaintainTable action: off by default.
type MaintenanceConfig struct {
	// Interval, when above 0, runs maintenance on every table of every
	// catalog whose backend maintains tables, this often (the first run
	// one interval after the start).
	Interval duration.Duration `yaml:"interval"`
	// AfterCommits, when above 0, runs maintenance on a table after every
	// this many commits that landed on it through this gateway, in the
	// background: the commit that reaches the count does not wait.
	AfterCommits int `yaml:"after_commits"`
	// Tasks names the tasks those runs do; empty: every task of the
	// backend.
	Tasks []string `yaml:"tasks"`
}

// maintenanceTasks are the task names the configuration may give.
var maintenanceTasks = []string{catalogs.TaskExpireSnapshots, catalogs.TaskRewriteDataFiles, catalogs.TaskRewriteManifests,
	catalogs.TaskCompact, catalogs.TaskFullCompact,
	catalogs.TaskOptimize, catalogs.TaskCheckpoint, catalogs.TaskVacuum}

func (c MaintenanceConfig) check() []error {
	var errs []error
	if err := c.Interval.Check("maintenance.interval"); err != nil {
		errs = append(errs, err)
	}
	if c.AfterCommits < 0 {
		errs = append(errs, fmt.Errorf("maintenance.after_commits: %d is negative", c.AfterCommits))
	}
	for _, t := range c.Tasks {
		if !slices.Contains(maintenanceTasks, t) {
			errs = append(errs, fmt.Errorf("maintenance.tasks: %q is not a task (%v)", t, maintenanceTasks))
		}
	}
	return errs
}

// maintainLoop runs the configured maintenance: every Interval over every
// table, and on a table after every AfterCommits commits (it is then the
// txn.Observer, after the metrics). Each run is one txn.Maintain, which
// logs and counts it; a run on a table already being maintained is
// skipped. Shutdown stops it, cancelling the runs under way, before the
// catalogs close.
type maintainLoop struct {
	*metrics
	cfg      MaintenanceConfig
	ttl      time.Duration
	catalogs map[string]handlers.Catalog // those whose backend maintains tables
	log      *slog.Logger
	txns     *txn.Manager // set before start

	mu      sync.Mutex
	stopped bool
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	commits map[string]int // table key: commits since its last run
	// running holds the tables with a run after commits under way, and
	// whether enough commits landed meanwhile for one more (false: no):
	// that run follows the one under way instead of being refused as
	// already running (txn.Maintain), which would lose those commits.
	running map[string]bool
}

func newMaintainLoop(cfg MaintenanceConfig, ttl time.Duration, m *metrics, cats []handlers.Catalog, log *slog.Logger) *maintainLoop {
	l := &maintainLoop{metrics: m, cfg: cfg, ttl: ttl, catalogs: map[string]handlers.Catalog{}, log: log, commits: map[string]int{}, running: map[string]bool{}}
	for _, c := range cats {
		if _, ok := c.Provider.(catalogs.Maintainer); ok {
			l.catalogs[c.Name] = c
		}
	}
	l.ctx, l.cancel = context.WithCancel(context.Background())
	return l
}

// Committed counts a table's commit for the metrics, then for
// after_commits (txn.Observer).
func (l *maintainLoop) Committed(t catalogs.TableIdent, out catalogs.CommitOutcome, err error) {
	l.metrics.Committed(t, out, err)
	if err != nil || l.cfg.AfterCommits <= 0 {
		return
	}
	c, ok := l.catalogs[t.Catalog]
	if !ok {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	key := t.Key()
	if l.commits[key]++; l.commits[key] < l.cfg.AfterCommits || l.stopped || l.txns == nil {
		return
	}
	delete(l.commits, key)
	if _, busy := l.running[key]; busy {
		l.running[key] = true
		return
	}
	l.running[key] = false
	l.wg.Go(func() {
		for {
			l.run(l.ctx, c, t)
			l.mu.Lock()
			again := l.running[key] && !l.stopped
			if !again {
				delete(l.running, key)
			} else {
				l.running[key] = false
			}
			l.mu.Unlock()
			if !again {
				return
			}
		}
	})
}

// start begins the periodic runs, unless they are off or stop came first.
func (l *maintainLoop) start(txns *txn.Manager) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.txns = txns
	if l.stopped || l.cfg.Interval.Duration <= 0 || len(l.catalogs) == 0 {
		return
	}
	l.wg.Go(func() {
		tick := time.NewTicker(l.cfg.Interval.Duration)
		defer tick.Stop()
		for {
			select {
			case <-l.ctx.Done():
				return
			case <-tick.C:
			}
			l.runAll(l.ctx)
		}
	})
}

// stop cancels the runs and waits for those under way.
func (l *maintainLoop) stop() {
	l.mu.Lock()
	l.stopped = true
	l.mu.Unlock()
	l.cancel()
	l.wg.Wait()
}

// runAll maintains every table of every maintained catalog that lists
// its tables.
func (l *maintainLoop) runAll(ctx context.Context) {
	names := make([]string, 0, len(l.catalogs))
	for n := range l.catalogs {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		c := l.catalogs[n]
		lister, ok := c.Provider.(catalogs.Lister)
		if !ok {
			continue
		}
		tables, err := catalogs.AllTables(ctx, lister)
		if err != nil {
			l.log.Warn("maintenance: cannot list the tables", "catalog", n, "err", err)
			continue
		}
		for _, t := range tables {
			if ctx.Err() != nil {
				return
			}
			l.run(ctx, c, t)
		}
	}
}

// run maintains one table; a panic is logged and the loop goes on.
func (l *maintainLoop) run(ctx context.Context, c handlers.Catalog, t catalogs.TableIdent) {
	tasks := l.tasksOf(c)
	if len(tasks) == 0 {
		return // none of the configured tasks is the backend's
	}
	var err error
	defer recovered.Catch(&err, "table maintenance")
	_, err = l.txns.Maintain(ctx, txn.MaintainJob{Table: t, Provider: c.Provider,
		Request: catalogs.MaintainRequest{Tasks: tasks}, MessageTTL: l.ttl})
	if errors.Is(err, catalogs.ErrFailedPrecondition) {
		l.log.Debug("maintenance skipped", "table", t.String(), "err", err)
	}
}

// tasksOf is the configured tasks the catalog's backend runs (every task
// of it when none is configured).
func (l *maintainLoop) tasksOf(c handlers.Catalog) []string {
	own := c.Provider.(catalogs.Maintainer).MaintainTasks()
	if len(l.cfg.Tasks) == 0 {
		return own
	}
	var out []string
	for _, t := range l.cfg.Tasks {
		// full_compact is run only when named, so no backend lists it
		// among its default tasks: a backend that compacts runs it.
		if slices.Contains(own, t) || (t == catalogs.TaskFullCompact && slices.Contains(own, catalogs.TaskCompact)) {
			out = append(out, t)
		}
	}
	return out
}
