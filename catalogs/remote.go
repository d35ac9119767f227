package catalogs

import (
	"context"
	"errors"
	"io/fs"
	"math/rand/v2"
	"time"

	"github.com/sony/gobreaker/v2"
)

// RemotePolicy bounds the calls a backend makes to a service outside the
// process (object storage, a catalog service).
type RemotePolicy struct {
	// Timeout bounds one attempt.
	Timeout time.Duration
	// Attempts bounds the attempts of an idempotent call (at least 1).
	Attempts int
	// BreakerFailures consecutive transient failures open the breaker.
	BreakerFailures uint32
	// BreakerOpen is how long the open breaker refuses calls.
	BreakerOpen time.Duration
}

// Remote guards calls to one service: a circuit breaker that opens after
// consecutive transient failures, a timeout per attempt and, for
// idempotent calls, a bounded retry with exponential backoff and jitter.
// Transient tells an outage (retried, counted by the breaker) from an
// answer such as "not found" or "precondition failed" (neither); a
// ClientFault is always an answer.
type Remote struct {
	policy    RemotePolicy
	transient func(error) bool
	cb        *gobreaker.CircuitBreaker[any]
}

// NewRemote builds a Remote named name (the breaker's name in metrics).
func NewRemote(name string, p RemotePolicy, transient func(error) bool) *Remote {
	r := &Remote{policy: p}
	r.transient = func(err error) bool {
		if err == nil || errors.Is(err, context.Canceled) ||
			errors.Is(err, gobreaker.ErrOpenState) || errors.Is(err, gobreaker.ErrTooManyRequests) || ClientFault(err) {
			return false
		}
		return transient(err)
	}
	r.cb = gobreaker.NewCircuitBreaker[any](gobreaker.Settings{
		Name:         name,
		MaxRequests:  1,
		Timeout:      p.BreakerOpen,
		ReadyToTrip:  func(c gobreaker.Counts) bool { return c.ConsecutiveFailures >= max(1, p.BreakerFailures) },
		IsSuccessful: func(err error) bool { return !r.transient(err) },
	})
	return r
}

// ClientFault reports whether err is an answer about what a client asked
// for, not an outage of the service: a missing, existing or forbidden
// object (a file a receipt names that was aborted, reclaimed or never
// written) or an error of any kind but ErrUnavailable. Such an answer is
// never retried and never counted by a breaker, whatever a backend's
// transient function says: otherwise any client could open a catalog's
// breaker, and fail every write of every principal, by naming a missing
// file a few times.
func ClientFault(err error) bool {
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrExist) || errors.Is(err, fs.ErrPermission) {
		return true
	}
	k := Kind(err)
	return k != nil && k != ErrUnavailable
}

// ErrBreakerOpen reports whether err is the breaker refusing a call
// (an outage of the service: ErrUnavailable).
func ErrBreakerOpen(err error) bool {
	return errors.Is(err, gobreaker.ErrOpenState) || errors.Is(err, gobreaker.ErrTooManyRequests)
}

// Guard runs fn through r. Only idempotent calls are retried: a call
// whose reply was lost must not be sent twice unless sending it twice is
// harmless.
func Guard[T any](ctx context.Context, r *Remote, idempotent bool, fn func(context.Context) (T, error)) (T, error) {
	attempts := 1
	if idempotent {
		attempts = max(1, r.policy.Attempts)
	}
	var (
		res T
		err error
	)
	for i := range attempts {
		if i > 0 {
			if werr := Sleep(ctx, Backoff(i-1, 50*time.Millisecond, 2*time.Second)); werr != nil {
				return res, err
			}
		}
		var v any
		v, err = r.cb.Execute(func() (any, error) {
			actx, cancel := context.WithTimeout(ctx, r.policy.Timeout)
			defer cancel()
			return fn(actx)
		})
		if err == nil {
			return v.(T), nil
		}
		if !r.transient(err) || ctx.Err() != nil {
			return res, err
		}
	}
	return res, err
}

// Record counts the outcome of work done outside Guard in the breaker.
func (r *Remote) Record(err error) {
	_, _ = r.cb.Execute(func() (any, error) { return nil, err })
}

// State is the breaker's state.
func (r *Remote) State() BreakerState {
	switch r.cb.State() {
	case gobreaker.StateOpen:
		return BreakerOpen
	case gobreaker.StateHalfOpen:
		return BreakerHalfOpen
	}
	return BreakerClosed
}

// Backoff is min·2^attempt capped at max, with full jitter in [min, cap].
func Backoff(attempt int, minWait, maxWait time.Duration) time.Duration {
	ceiling := maxWait
	if attempt < 30 && minWait<<attempt < maxWait {
		ceiling = minWait << attempt
	}
	if ceiling <= minWait {
		return minWait
	}
	return minWait + rand.N(ceiling-minWait+1)
}

// Sleep waits for d or until ctx ends.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-t.C:
		return nil
	}
}
