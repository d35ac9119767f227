package server

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

// acquireAsync starts acquiring a slot for owner; the channel yields the
// release func, or nil after an error (kept in *errp).
func acquireAsync(a *admission, ctx context.Context, owner string, gs *guardedStream, errp *error) <-chan func() {
	out := make(chan func(), 1)
	go func() {
		release, err := a.acquire(ctx, owner, gs)
		*errp = err
		out <- release
	}()
	return out
}

func granted(t *testing.T, ch <-chan func(), what string) func() {
	t.Helper()
	select {
	case r := <-ch:
		if r == nil {
			t.Fatalf("%s: refused", what)
		}
		return r
	case <-time.After(5 * time.Second):
		t.Fatalf("%s: not granted", what)
		return nil
	}
}

func waiting(t *testing.T, ch <-chan func(), what string) {
	t.Helper()
	select {
	case <-ch:
		t.Fatalf("%s: did not wait", what)
	case <-time.After(50 * time.Millisecond):
	}
}

// TestAdmissionWaitsInsteadOfRefusing: a stream beyond its principal's
// share waits for a slot of it (it was refused at once), another
// principal's goes through meanwhile, and the waiting one runs when its
// principal's stream ends; one that waits past limits.queue_wait is
// ResourceExhausted naming the keys, and one past the queue's bound is
// refused at once.
func TestAdmissionWaitsInsteadOfRefusing(t *testing.T) {
	a := newAdmission("DoPut", admissionLimits{capacity: 2, share: 1, capKey: "max_concurrent_writes", shareKey: "per_principal_writes",
		waitKey: "queue_wait", maxQueue: 2, wait: time.Second, minRate: 0})
	ctx := context.Background()
	var e1, e2, e3, e4 error
	a1 := granted(t, acquireAsync(a, ctx, "alice", nil, &e1), "alice's first")
	a2 := acquireAsync(a, ctx, "alice", nil, &e2)
	waiting(t, a2, "alice's second")
	b1 := granted(t, acquireAsync(a, ctx, "bob", nil, &e3), "bob's first")
	a1()
	a2r := granted(t, a2, "alice's second, once her first ended")
	short := newAdmission("DoPut", admissionLimits{capacity: 1, share: 1, capKey: "max_concurrent_writes", shareKey: "per_principal_writes",
		waitKey: "queue_wait", maxQueue: 1, wait: 100 * time.Millisecond, minRate: 0})
	s1 := granted(t, acquireAsync(short, ctx, "alice", nil, &e4), "first")
	if _, err := short.acquire(ctx, "alice", nil); status.Code(err) != codes.ResourceExhausted ||
		!containsAll(err.Error(), "limits.queue_wait", "max_concurrent_writes", "per_principal_writes") {
		t.Fatalf("past queue_wait: %v", err)
	}
	var wg sync.WaitGroup
	wg.Go(func() { _, _ = short.acquire(ctx, "bob", nil) }) // fills the queue
	time.Sleep(20 * time.Millisecond)
	if _, err := short.acquire(ctx, "carol", nil); status.Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), "limits.max_queued_streams") {
		t.Fatalf("past the queue's bound: %v", err)
	}
	wg.Wait()
	s1()
	a2r()
	b1()
	if a.total != 0 || len(a.running) != 0 {
		t.Fatalf("slots left held: %d %v", a.total, a.running)
	}
}

// TestAdmissionTurns: a freed slot goes to the waiting principal holding
// the fewest slots, before an earlier waiter of one holding more.
func TestAdmissionTurns(t *testing.T) {
	a := newAdmission("DoGet", admissionLimits{capacity: 2, share: 2, capKey: "max_concurrent_queries", shareKey: "per_principal_queries",
		waitKey: "queue_wait", maxQueue: 8, wait: 5 * time.Second, minRate: 0})
	ctx := context.Background()
	var err error
	r1 := granted(t, acquireAsync(a, ctx, "alice", nil, &err), "alice 1")
	r2 := granted(t, acquireAsync(a, ctx, "alice", nil, &err), "alice 2")
	a3 := acquireAsync(a, ctx, "alice", nil, &err)
	waiting(t, a3, "alice 3")
	b1 := acquireAsync(a, ctx, "bob", nil, &err)
	waiting(t, b1, "bob 1")
	r1()
	rb := granted(t, b1, "bob, who holds none")
	waiting(t, a3, "alice 3, after bob's turn")
	r2()
	granted(t, a3, "alice 3")()
	rb()
}

// TestAdmissionYield: while a principal waits, a running stream of
// another principal below limits.min_stream_rate over the window, waiting
// for its client, is cut ResourceExhausted naming the key and its slot
// goes to the waiter; one that moves enough, or is younger than the
// window, keeps its slot.
func TestAdmissionYield(t *testing.T) {
	var mu sync.Mutex
	clock := time.Unix(1000, 0)
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	advance := func(d time.Duration) { mu.Lock(); clock = clock.Add(d); mu.Unlock() }
	a := newAdmission("DoPut", admissionLimits{capacity: 2, share: 2, capKey: "max_concurrent_writes", shareKey: "per_principal_writes",
		waitKey: "queue_wait", maxQueue: 8, wait: 10 * time.Second, minRate: 1000})
	a.now = now
	stream := func() *guardedStream {
		gs := &guardedStream{method: "DoPut"}
		gs.ctx, gs.cancel = context.WithCancelCause(context.Background())
		return gs
	}
	ctx := context.Background()
	var err error
	slow, fast := stream(), stream()
	rs := granted(t, acquireAsync(a, ctx, "hog", slow, &err), "slow")
	rf := granted(t, acquireAsync(a, ctx, "hog", fast, &err), "fast")
	slow.progress.setBlocked(true)
	fast.progress.setBlocked(true)
	bob := acquireAsync(a, ctx, "bob", nil, &err)
	// Younger than the window: both keep their slots.
	waiting(t, bob, "bob, while the hog's streams are young")
	time.Sleep(2 * preemptEvery)
	if slow.cutErr() != nil || fast.cutErr() != nil {
		t.Fatal("a stream younger than the window yielded")
	}
	fast.progress.moved(now().Add(progressWindow), 10*1000*int64(progressWindow/time.Second))
	advance(progressWindow)
	for deadline := time.Now().Add(5 * time.Second); slow.cutErr() == nil; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the slow stream did not yield")
		}
	}
	if err := slow.cutErr(); status.Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), "limits.min_stream_rate") {
		t.Fatalf("yield: %v", err)
	}
	if context.Cause(slow.ctx) == nil {
		t.Fatal("the yielded stream's context is not cancelled")
	}
	if fast.cutErr() != nil {
		t.Fatalf("the fast stream yielded: %v", fast.cutErr())
	}
	rs() // the slow stream's handler returns
	rb := granted(t, bob, "bob, after the slow stream yielded")
	rb()
	rf()
}
