package catalogs

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"testing"
	"time"
)

var errOutage = errors.New("outage")

func testRemote() *Remote {
	return NewRemote("t", RemotePolicy{Timeout: time.Second, Attempts: 3, BreakerFailures: 4, BreakerOpen: time.Minute},
		func(err error) bool { return errors.Is(err, errOutage) })
}

func TestGuardRetries(t *testing.T) {
	for _, tc := range []struct {
		name       string
		idempotent bool
		err        error
		calls      int
	}{
		{"idempotent outage is retried", true, errOutage, 3},
		{"non-idempotent outage is not", false, errOutage, 1},
		{"an answer is not retried", true, errors.New("not found"), 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := testRemote()
			calls := 0
			_, err := Guard(context.Background(), r, tc.idempotent, func(context.Context) (int, error) {
				calls++
				return 0, tc.err
			})
			if !errors.Is(err, tc.err) || calls != tc.calls {
				t.Errorf("err %v after %d calls, want %v after %d", err, calls, tc.err, tc.calls)
			}
		})
	}
}

func TestGuardBreakerOpens(t *testing.T) {
	r := testRemote()
	for range 2 {
		_, _ = Guard(context.Background(), r, true, func(context.Context) (int, error) { return 0, errOutage })
	}
	if r.State() != BreakerOpen {
		t.Fatalf("state %v after 6 consecutive outages, want open", r.State())
	}
	called := false
	_, err := Guard(context.Background(), r, true, func(context.Context) (int, error) { called = true; return 1, nil })
	if called || !ErrBreakerOpen(err) {
		t.Errorf("open breaker: called %v, err %v", called, err)
	}
}

func TestGuardTimeout(t *testing.T) {
	r := NewRemote("t", RemotePolicy{Timeout: 10 * time.Millisecond, Attempts: 1, BreakerFailures: 5, BreakerOpen: time.Minute},
		func(err error) bool { return errors.Is(err, context.DeadlineExceeded) })
	_, err := Guard(context.Background(), r, true, func(ctx context.Context) (int, error) {
		<-ctx.Done()
		return 0, ctx.Err()
	})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err %v, want the attempt's deadline", err)
	}
}

// TestGuardClientFaults: a client's fault (a missing or existing file,
// an error of a kind other than ErrUnavailable) is neither retried nor
// counted by the breaker, even for a backend whose transient function
// calls every error an outage: a client naming a missing file again and
// again leaves the breaker closed for everyone else.
func TestGuardClientFaults(t *testing.T) {
	for _, fault := range []error{
		fmt.Errorf("open s3://b/t/data/x.parquet: %w", fs.ErrNotExist),
		&fs.PathError{Op: "link", Path: "/w/t/snapshot/snapshot-3", Err: fs.ErrExist},
		fmt.Errorf("get s3://b/x: %w", fs.ErrPermission),
		Errorf(ErrInvalidArgument, "receipt 0: file x is not in the table"),
		Errorf(ErrFailedPrecondition, "file x is referenced"),
		Errorf(ErrNotFound, "no such table"),
	} {
		r := NewRemote("t", RemotePolicy{Timeout: time.Second, Attempts: 3, BreakerFailures: 2, BreakerOpen: time.Minute},
			func(error) bool { return true })
		calls := 0
		for range 5 {
			_, err := Guard(context.Background(), r, true, func(context.Context) (int, error) { calls++; return 0, fault })
			if !errors.Is(err, fault) {
				t.Fatalf("%v: Guard = %v", fault, err)
			}
		}
		if calls != 5 || r.State() != BreakerClosed {
			t.Errorf("%v: %d calls for 5 requests, breaker %v; want 5, closed", fault, calls, r.State())
		}
	}
	// An outage still opens it.
	r := NewRemote("t", RemotePolicy{Timeout: time.Second, Attempts: 1, BreakerFailures: 2, BreakerOpen: time.Minute},
		func(error) bool { return true })
	for range 2 {
		_, _ = Guard(context.Background(), r, true, func(context.Context) (int, error) { return 0, Errorf(ErrUnavailable, "503") })
	}
	if r.State() != BreakerOpen {
		t.Errorf("breaker %v after 2 outages, want open", r.State())
	}
}
