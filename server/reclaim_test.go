package server

import (
	"context"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/handlers"
	"github.com/flightgw/flightgw/internal/duration"
)

// TestReclaimConfig: reclaim.interval defaults to 1h and 0 turns it off
// (unset and 0 differ); reclaim.min_age defaults to 24h; both come from
// the environment too, and bad values name the key.
func TestReclaimConfig(t *testing.T) {
	cfg, err := LoadConfig("")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Reclaim.Interval == nil || cfg.Reclaim.Interval.Duration != time.Hour || cfg.Reclaim.MinAge.Duration != 24*time.Hour {
		t.Fatalf("defaults: %+v", cfg.Reclaim)
	}
	cfg, err = LoadConfig(writeConfig(t, "reclaim: {interval: 0s, min_age: 90m}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Reclaim.Interval == nil || cfg.Reclaim.Interval.Duration != 0 || cfg.Reclaim.MinAge.Duration != 90*time.Minute {
		t.Fatalf("from the file: interval %v, min_age %v", cfg.Reclaim.Interval, cfg.Reclaim.MinAge)
	}
	for body, want := range map[string]string{
		"reclaim: {interval: hourly}\n": "reclaim.interval",
		"reclaim: {min_age: -1h}\n":     "reclaim.min_age",
	} {
		if _, err := LoadConfig(writeConfig(t, body)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: err = %v, want mention of %s", body, err, want)
		}
	}
	t.Setenv("FLIGHTGW_RECLAIM_INTERVAL", "5m")
	t.Setenv("FLIGHTGW_RECLAIM_MIN_AGE", "48h")
	cfg, err = LoadConfig(writeConfig(t, "reclaim: {interval: 0s, min_age: 90m}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Reclaim.Interval.Duration != 5*time.Minute || cfg.Reclaim.MinAge.Duration != 48*time.Hour {
		t.Fatalf("from the environment: interval %v, min_age %v", cfg.Reclaim.Interval, cfg.Reclaim.MinAge)
	}
}

// fakeReclaimer counts runs; each run waits until its context ends when
// block is set.
type fakeReclaimer struct {
	catalogs.Provider
	runs  atomic.Int32
	block bool
	opts  atomic.Pointer[catalogs.ReclaimOptions]
}

func (f *fakeReclaimer) Reclaim(ctx context.Context, opts catalogs.ReclaimOptions) (catalogs.ReclaimReport, error) {
	f.runs.Add(1)
	f.opts.Store(&opts)
	if f.block {
		<-ctx.Done()
		return catalogs.ReclaimReport{}, ctx.Err()
	}
	return catalogs.ReclaimReport{Tables: 1}, nil
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestReclaimLoop: the reclaimer runs at start with the configured min
// age and then every interval; stop cancels a run under way and waits for
// it; interval 0 never runs; a loop stopped before it starts never runs.
func TestReclaimLoop(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	cfg := func(iv time.Duration) ReclaimConfig {
		d := duration.Of(iv)
		return ReclaimConfig{Interval: &d, MinAge: duration.Of(time.Hour)}
	}
	f := &fakeReclaimer{}
	l := newReclaimLoop(cfg(5*time.Millisecond), time.Minute, []handlers.Catalog{{Name: "lake", Provider: f}}, log)
	l.start()
	waitFor(t, "three runs", func() bool { return f.runs.Load() >= 3 })
	l.stop()
	if got := f.opts.Load().MinAge; got != time.Hour {
		t.Errorf("min age %v, want 1h", got)
	}
	n := f.runs.Load()
	time.Sleep(20 * time.Millisecond)
	if f.runs.Load() != n {
		t.Error("runs after stop")
	}

	blocked := &fakeReclaimer{block: true}
	l = newReclaimLoop(cfg(time.Hour), time.Minute, []handlers.Catalog{{Name: "lake", Provider: blocked}}, log)
	l.start()
	waitFor(t, "the start-up run", func() bool { return blocked.runs.Load() == 1 })
	l.stop() // returns only once the run saw its context cancelled

	off := &fakeReclaimer{}
	l = newReclaimLoop(cfg(0), time.Minute, []handlers.Catalog{{Name: "lake", Provider: off}}, log)
	l.start()
	l.stop()
	early := &fakeReclaimer{}
	l = newReclaimLoop(cfg(time.Hour), time.Minute, []handlers.Catalog{{Name: "lake", Provider: early}}, log)
	l.stop()
	l.start()
	time.Sleep(20 * time.Millisecond)
	if off.runs.Load() != 0 || early.runs.Load() != 0 {
		t.Errorf("runs with interval 0: %d; after stop: %d", off.runs.Load(), early.runs.Load())
	}
}
