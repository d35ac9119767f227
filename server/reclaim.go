package server

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/handlers"
	"github.com/flightgw/flightgw/internal/recovered"
)

// reclaimLoop runs the reclaimer of every catalog that has one
// (catalogs.Reclaimer) when the server starts serving and then every
// reclaim.interval. Shutdown stops it, cancelling a run under way, before
// the catalogs close.
type reclaimLoop struct {
	interval time.Duration
	opts     catalogs.ReclaimOptions
	catalogs []handlers.Catalog
	log      *slog.Logger

	mu      sync.Mutex
	stopped bool
	cancel  context.CancelFunc
	done    chan struct{}
}

func newReclaimLoop(cfg ReclaimConfig, txnIdle time.Duration, cats []handlers.Catalog, log *slog.Logger) *reclaimLoop {
	l := &reclaimLoop{log: log, opts: catalogs.ReclaimOptions{MinAge: cfg.MinAge.Duration}}
	if cfg.Interval != nil {
		l.interval = cfg.Interval.Duration
	}
	for _, c := range cats {
		if _, ok := c.Provider.(catalogs.Reclaimer); ok {
			l.catalogs = append(l.catalogs, c)
		}
	}
	if l.interval > 0 && len(l.catalogs) > 0 && l.opts.MinAge < txnIdle {
		log.Warn("reclaim.min_age is below timeouts.txn_idle: the staged files of a live transaction may be deleted",
			"min_age", l.opts.MinAge, "txn_idle", txnIdle)
	}
	if l.interval > 0 && len(l.catalogs) > 0 && l.opts.MinAge < 2*catalogs.CreateKeepEvery {
		log.Warn("reclaim.min_age is below twice the refresh of a staged create's marks: the files of a create in flight may be deleted",
			"min_age", l.opts.MinAge, "refresh", catalogs.CreateKeepEvery)
	}
	return l
}

// start begins the runs, unless the reclaimer is off or stop came first.
func (l *reclaimLoop) start() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stopped || l.done != nil || l.interval <= 0 || len(l.catalogs) == 0 {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	l.cancel, l.done = cancel, make(chan struct{})
	go func() {
		defer close(l.done)
		tick := time.NewTicker(l.interval)
		defer tick.Stop()
		for {
			// A panic in one run is logged (recovered.Catch) and the next
			// run comes: the reclaimer must not end the process.
			func() {
				var err error
				defer recovered.Catch(&err, "reclaimer")
				l.runOnce(ctx)
			}()
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
}

// stop cancels the runs and waits for the one under way.
func (l *reclaimLoop) stop() {
	l.mu.Lock()
	l.stopped = true
	cancel, done := l.cancel, l.done
	l.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

// runOnce reclaims every catalog's orphans and logs what each run did.
func (l *reclaimLoop) runOnce(ctx context.Context) {
	for _, c := range l.catalogs {
		if ctx.Err() != nil {
			return
		}
		start := time.Now()
		rep, err := c.Provider.(catalogs.Reclaimer).Reclaim(ctx, l.opts)
		attrs := []any{"catalog", c.Name, "tables", rep.Tables, "files", rep.Files(), "bytes", rep.Bytes,
			"data", rep.DataFiles, "manifests", rep.ManifestFiles, "metadata", rep.MetadataFiles,
			"young", rep.Young, "failed_tables", rep.TablesFailed, "took", time.Since(start).Round(time.Millisecond)}
		if ctx.Err() != nil {
			l.log.Info("reclaim stopped by shutdown", attrs...)
			return
		}
		if err != nil {
			l.log.Warn("reclaim finished with errors", append(attrs, "err", err)...)
			continue
		}
		l.log.Info("reclaim finished", attrs...)
	}
}
