package iceberg

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/flightgw/flightgw/catalogs"
)

func TestGuardRetriesThenOpens(t *testing.T) {
	r := catalogs.NewRemote("test", catalogs.RemotePolicy{Timeout: time.Second, Attempts: 3, BreakerFailures: 4, BreakerOpen: time.Hour}, isTransient)
	calls := 0
	down := func(context.Context) (int, error) {
		calls++
		return 0, catalogs.Errorf(catalogs.ErrUnavailable, "catalog down")
	}
	ctx := context.Background()
	if st := r.State(); st != catalogs.BreakerClosed {
		t.Fatalf("new breaker state %d, want closed", st)
	}
	if _, err := catalogs.Guard(ctx, r, true, down); !errors.Is(err, catalogs.ErrUnavailable) {
		t.Fatalf("guard = %v", err)
	}
	if calls != 3 {
		t.Fatalf("idempotent call made %d attempts, want 3", calls)
	}
	if _, err := catalogs.Guard(ctx, r, false, down); err == nil || calls != 4 {
		t.Fatalf("non-idempotent call: %v after %d calls, want one attempt", err, calls)
	}
	// Four consecutive failures opened the breaker: no more calls go out.
	if st := r.State(); st != catalogs.BreakerOpen {
		t.Errorf("breaker state %d after 4 failures, want open", st)
	}
	_, err := catalogs.Guard(ctx, r, true, down)
	if calls != 4 {
		t.Errorf("open breaker let %d calls through", calls-4)
	}
	if !errors.Is(err, catalogs.ErrUnavailable) && kindOf(err) != catalogs.ErrUnavailable {
		t.Errorf("open breaker error %v is not unavailable", err)
	}
}

func TestGuardDoesNotRetryAnswers(t *testing.T) {
	r := catalogs.NewRemote("test", catalogs.RemotePolicy{Timeout: time.Second, Attempts: 5, BreakerFailures: 1, BreakerOpen: time.Hour}, isTransient)
	calls := 0
	missing := func(context.Context) (int, error) {
		calls++
		return 0, catalogs.Errorf(catalogs.ErrNotFound, "no such table")
	}
	for range 3 {
		if _, err := catalogs.Guard(context.Background(), r, true, missing); !errors.Is(err, catalogs.ErrNotFound) {
			t.Fatalf("guard = %v, want ErrNotFound", err)
		}
	}
	if calls != 3 {
		t.Errorf("a not-found answer was retried or tripped the breaker: %d calls for 3 requests", calls)
	}
}

func TestGuardTimesOutEachAttempt(t *testing.T) {
	r := catalogs.NewRemote("test", catalogs.RemotePolicy{Timeout: time.Millisecond, Attempts: 2, BreakerFailures: 10, BreakerOpen: time.Hour}, isTransient)
	calls := 0
	_, err := catalogs.Guard(context.Background(), r, true, func(ctx context.Context) (int, error) {
		calls++
		<-ctx.Done() // a call that never answers
		return 0, ctx.Err()
	})
	if !errors.Is(err, context.DeadlineExceeded) || calls != 2 {
		t.Errorf("hanging call: %v after %d attempts, want deadline exceeded after 2", err, calls)
	}
}

// TestUniqueViolationKeepsBreakerClosed: the SQL catalog's refusal to
// insert a table row that a concurrent create inserted first (as SQLite
// and PostgreSQL spell it) is AlreadyExists, not a catalog failure: a
// race of staged creates must not open the catalog's breaker, whose open
// state then failed the losers' "whose table is it?" read with a raw
// constraint error instead of AlreadyExists (found by catalogtest
// StagedCreate on S3).
func TestUniqueViolationKeepsBreakerClosed(t *testing.T) {
	for _, msg := range []string{
		"failed to create table: constraint failed: UNIQUE constraint failed: iceberg_tables.catalog_name, iceberg_tables.table_namespace, iceberg_tables.table_name (1555)",
		`ERROR: duplicate key value violates unique constraint "iceberg_tables_pkey" (SQLSTATE 23505)`,
	} {
		err := errors.New(msg)
		if k := kindOf(err); k != catalogs.ErrAlreadyExists {
			t.Errorf("kindOf(%q) = %v, want AlreadyExists", msg, k)
		}
		r := catalogs.NewRemote("test", catalogs.RemotePolicy{Timeout: time.Second, Attempts: 1, BreakerFailures: 2, BreakerOpen: time.Hour}, isTransient)
		for range 3 {
			_, _ = catalogs.Guard(context.Background(), r, false, func(context.Context) (int, error) { return 0, err })
		}
		if st := r.State(); st != catalogs.BreakerClosed {
			t.Errorf("breaker state %d after 3 unique violations, want closed", st)
		}
	}
}
