package iceberg

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/sony/gobreaker/v2"

	"github.com/flightgw/flightgw/catalogs"
)

// remote guards calls to a service outside the process (the REST catalog,
// Postgres, object storage): a circuit breaker that opens after
// consecutive failures, a timeout per attempt and, for idempotent calls, a
// bounded retry with exponential backoff and jitter.
type remote struct {
	policy remotePolicy
	cb     *gobreaker.CircuitBreaker[any]
}

func newRemote(name string, p remotePolicy) *remote {
	return &remote{policy: p, cb: gobreaker.NewCircuitBreaker[any](gobreaker.Settings{
		Name:        name,
		MaxRequests: 1,
		Timeout:     p.breakerOpen,
		ReadyToTrip: func(c gobreaker.Counts) bool { return c.ConsecutiveFailures >= p.breakerFailures },
		// A missing table or a rejected commit is an answer, not an outage.
		IsSuccessful: func(err error) bool { return err == nil || !isTransient(err) },
	})}
}

// guard runs fn through r. Only idempotent calls are retried: a commit whose
// reply was lost must not be sent twice.
func guard[T any](ctx context.Context, r *remote, idempotent bool, fn func(context.Context) (T, error)) (T, error) {
	attempts := 1
	if idempotent {
		attempts = max(1, r.policy.attempts)
	}
	var (
		res T
		err error
	)
	for i := range attempts {
		if i > 0 {
			if werr := sleep(ctx, backoff(i-1, 50*time.Millisecond, 2*time.Second)); werr != nil {
				return res, err
			}
		}
		var v any
		v, err = r.cb.Execute(func() (any, error) {
			actx, cancel := context.WithTimeout(ctx, r.policy.timeout)
			defer cancel()
			return fn(actx)
		})
		if err == nil {
			return v.(T), nil
		}
		if !isTransient(err) || ctx.Err() != nil {
			return res, err
		}
	}
	return res, err
}

// record counts the outcome of work done outside guard (a stream's
// writes) in the breaker.
func (r *remote) record(err error) {
	_, _ = r.cb.Execute(func() (any, error) { return nil, err })
}

// backoff is min·2^attempt capped at max, with full jitter in [min, cap].
func backoff(attempt int, minWait, maxWait time.Duration) time.Duration {
	ceiling := maxWait
	if attempt < 30 && minWait<<attempt < maxWait {
		ceiling = minWait << attempt
	}
	if ceiling <= minWait {
		return minWait
	}
	return minWait + rand.N(ceiling-minWait+1)
}

// sleep waits for d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-t.C:
		return nil
	}
}

// Breakers reports the state of the breakers of the catalog service and
// of object storage (catalogs.BreakerReporter).
func (p *Provider) Breakers() []catalogs.Breaker {
	return []catalogs.Breaker{{Name: "catalog", State: p.remote.state()}, {Name: "storage", State: p.storage.state()}}
}

// state is the breaker's state.
func (r *remote) state() catalogs.BreakerState {
	return breakerState(r.cb.State())
}

func breakerState(s gobreaker.State) catalogs.BreakerState {
	switch s {
	case gobreaker.StateOpen:
		return catalogs.BreakerOpen
	case gobreaker.StateHalfOpen:
		return catalogs.BreakerHalfOpen
	}
	return catalogs.BreakerClosed
}
