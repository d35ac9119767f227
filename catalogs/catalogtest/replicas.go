package catalogtest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/flightgw/flightgw/catalogs"
)

// testReplicas: two providers sharing the storage (two replicas) commit
// the same receipts under two commit ids at the same instant, a few times
// over, each as CommitMessages does: the replay check
// (catalogs.ReceiptChecker, when the backend has it), then CommitOnce.
// Each time exactly one lands and the other is refused with
// ErrFailedPrecondition, by its replay check or by its commit, and every
// row is in the table once: a data file lands once per table, across
// processes, not only within one.
func (s suite) testReplicas(t *testing.T) {
	in, id := s.setup(t, "replicas")
	a, ok := in.Provider.(catalogs.IdempotentCommitter)
	skipUnless(t, ok, "catalogs.IdempotentCommitter")
	if in.Replica == nil {
		t.Skip("the harness opens no replica (Instance.Replica)")
	}
	b, ok := in.Replica(t).(catalogs.IdempotentCommitter)
	if !ok {
		t.Fatal("the replica is no catalogs.IdempotentCommitter")
	}
	ctx := context.Background()
	const trials, n = 3, 10
	for trial := range trials {
		rs := []catalogs.WriteReceipt{write(t, in, id, int64(trial)*n, n)}
		errs := make([]error, 2)
		var start, done sync.WaitGroup
		start.Add(1)
		for i, c := range []catalogs.IdempotentCommitter{a, b} {
			done.Add(1)
			go func() {
				defer done.Done()
				start.Wait()
				if rc, ok := c.(catalogs.ReceiptChecker); ok {
					if errs[i] = rc.CheckUnreferenced(ctx, id, rs); errs[i] != nil {
						return
					}
				}
				_, errs[i] = c.CommitOnce(ctx, id, fmt.Sprintf("replica-%d-%d", trial, i), rs)
			}()
		}
		start.Done()
		done.Wait()
		landed := 0
		for i, err := range errs {
			switch {
			case err == nil:
				landed++
			case !errors.Is(err, catalogs.ErrFailedPrecondition):
				t.Errorf("trial %d: replica %d: %v; want nil or ErrFailedPrecondition", trial, i, err)
			}
		}
		if landed != 1 {
			t.Errorf("trial %d: %d of the two commits landed, want exactly one", trial, landed)
		}
		if got := rows(t, in, id); got != int64(trial+1)*n {
			t.Errorf("trial %d: %d rows, want %d (each row once)", trial, got, (trial+1)*n)
		}
	}
}
