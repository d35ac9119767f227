package lake

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/flightgw/flightgw/catalogs"
)

// Group commit: commits to one table from one process are queued, and one
// round at a time takes the pending appends and commits them as one
// snapshot (one log version). Without it, N writers of one table race N
// compare-and-swaps of which one wins per round trip, so most attempts
// lose and retry, and every commit leaves a snapshot. Between processes
// the compare-and-swap loop (Run) stays: a round that loses reloads and
// retries like one commit. Groups is the queue; a backend supplies the
// round (its format's commit of several members) and the bounds of one.

// Queued is the queue's part of a member: a backend's member type embeds
// it (NewQueued) and so satisfies Member.
type Queued struct {
	// Ctx is the caller's: a member whose caller has gone before its
	// round starts is dropped, never committed.
	Ctx context.Context
	// Overwrite members are committed alone, after the appends queued
	// before them.
	Overwrite bool
	state     queuedState // guarded by Groups.mu while queued
	done      chan struct{}
}

type queuedState int

const (
	stateQueued queuedState = iota
	stateRunning
	stateDone
)

// NewQueued is the queue's part of a member of the caller whose context
// is ctx.
func NewQueued(ctx context.Context, overwrite bool) Queued {
	return Queued{Ctx: ctx, Overwrite: overwrite, done: make(chan struct{})}
}

// Q returns q (the method that makes an embedding type a Member).
func (q *Queued) Q() *Queued { return q }

// Answered records that the member's outcome is set: Submit returns. A
// round calls it once per member, after setting the member's outcome.
func (q *Queued) Answered() { close(q.done) }

// Member is a backend's member: a type embedding Queued.
type Member interface{ Q() *Queued }

// Round is how a backend commits one round of members M.
type Round[M Member] struct {
	// Run commits ms (appends, or one overwrite) and answers every one.
	Run func(ctx context.Context, ms []M)
	// Budget starts a round's bounds: the function it returns adds a
	// member and reports whether the round still holds it (it is not
	// called for a round's first member, which is always taken).
	Budget func() func(m M) bool
	// Drop answers a member whose caller left while it was queued with
	// err, the caller's context error (the member is never committed).
	Drop func(m M, err error)
}

// Groups holds the commit queue of every table with a commit pending.
// The zero value is ready.
type Groups[M Member] struct {
	mu     sync.Mutex
	queues map[string]*groupQueue[M]
	wg     sync.WaitGroup // the drain goroutines
	// OnRound, when set (by tests, before any Submit), runs before each
	// queued round.
	OnRound func(batch []M)
}

// groupQueue is one table's pending commits, in arrival order, and
// whether a drain goroutine is running them.
type groupQueue[M Member] struct {
	pending []M
	running bool
}

// Submit commits m through the queue of the table named key and waits
// until m is answered. A caller whose ctx ends while m is queued has m
// dropped (r.Drop) and it is never committed; once m's round has started
// the caller waits for the round's outcome, which may be a landed commit.
// The rounds run on a goroutine of the queue's that outlives any caller
// (Wait waits for it).
func (g *Groups[M]) Submit(ctx context.Context, key string, m M, r Round[M]) {
	q0 := m.Q()
	g.mu.Lock()
	if g.queues == nil {
		g.queues = map[string]*groupQueue[M]{}
	}
	q := g.queues[key]
	if q == nil {
		q = &groupQueue[M]{}
		g.queues[key] = q
	}
	q.pending = append(q.pending, m)
	if !q.running {
		q.running = true
		g.wg.Add(1)
		go g.drain(context.WithoutCancel(ctx), key, q, r)
	}
	g.mu.Unlock()
	select {
	case <-q0.done:
	case <-ctx.Done():
		g.mu.Lock()
		if q0.state == stateQueued {
			q.pending = slices.DeleteFunc(q.pending, func(x M) bool { return x.Q() == q0 })
			q0.state = stateDone
			g.mu.Unlock()
			r.Drop(m, ctx.Err())
			return
		}
		g.mu.Unlock()
		<-q0.done // the round has started: its outcome is m's
	}
}

// Pending is the number of members queued for key behind its running
// round.
func (g *Groups[M]) Pending(key string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	if q := g.queues[key]; q != nil {
		return len(q.pending)
	}
	return 0
}

// Dropped is the error of a member dropped from the queue (Round.Drop):
// its caller left, with err, before its round started; what names the
// table ("table db.t").
func Dropped(what, commitID string, err error) error {
	return catalogs.Wrap(catalogs.ErrUnavailable, err,
		fmt.Sprintf("%s: commit %s cancelled while queued; nothing was committed", what, commitID))
}

// Wait waits for the rounds under way.
func (g *Groups[M]) Wait() { g.wg.Wait() }

// drain runs the table's rounds until its queue is empty.
func (g *Groups[M]) drain(ctx context.Context, key string, q *groupQueue[M], r Round[M]) {
	defer g.wg.Done()
	for {
		batch := g.take(key, q, r)
		if batch == nil {
			return
		}
		if g.OnRound != nil {
			g.OnRound(batch)
		}
		r.Run(ctx, batch)
	}
}

// take removes the next round from the queue: an overwrite alone, or the
// appends at the head of the queue up to the first overwrite (which must
// land after them), within the round's budget. Members whose caller has
// gone are dropped. It returns nil, and retires the queue, when nothing is
// pending.
func (g *Groups[M]) take(key string, q *groupQueue[M], r Round[M]) []M {
	g.mu.Lock()
	defer g.mu.Unlock()
	var batch []M
	fits := r.Budget()
	i := 0
	for ; i < len(q.pending); i++ {
		m := q.pending[i]
		qm := m.Q()
		if err := qm.Ctx.Err(); err != nil {
			qm.state = stateDone
			r.Drop(m, err)
			continue
		}
		if qm.Overwrite {
			if len(batch) == 0 {
				batch = append(batch, m)
				i++
			}
			break
		}
		if len(batch) == 0 {
			fits(m)
		} else if !fits(m) {
			break
		}
		batch = append(batch, m)
	}
	q.pending = q.pending[i:]
	for _, m := range batch {
		m.Q().state = stateRunning
	}
	if len(batch) == 0 {
		q.running = false
		delete(g.queues, key)
		return nil
	}
	return batch
}
