package server

import (
	"context"
	"net"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/flightgw/flightgw/auth"
)

// Fair admission of DoPut and DoGet streams (docs/configuration.md,
// "Admission"). Each method has a number of slots (max_concurrent_writes,
// max_concurrent_queries) and a principal may hold at most its share of
// them (per_principal_writes, per_principal_queries). A stream that finds
// no slot it may take waits in a bounded queue, at most limits.queue_wait
// or its client's deadline, instead of being refused. A freed slot goes to
// the waiting stream whose principal holds the fewest slots, the earliest
// among equals: each waiting principal gets a turn before one already
// holding slots gets another. And while streams wait, a running stream of
// a principal holding more slots than a waiting one, that makes less than
// the minimum progress (below limits.min_stream_rate over the last
// progressWindow while it waits for its client: a DoPut for its next
// message, a DoGet for its client to take one), gives its slot up: it is
// cut with ResourceExhausted, as an idle one is by timeouts.stream_idle,
// and what it staged is discarded.

// progressWindow is the span over which a stream's rate is measured; a
// stream that has held its slot for less is never made to yield.
const progressWindow = 3 * time.Second

// preemptEvery is how often waiting streams look for one that should
// yield its slot.
const preemptEvery = 250 * time.Millisecond

// admission admits the streams of one method.
type admission struct {
	method           string
	capacity, share  int
	capKey, shareKey string
	waitKey          string
	maxQueue         int
	wait             time.Duration
	minRate          int64 // bytes per second
	now              func() time.Time

	mu      sync.Mutex
	running map[string][]*slot // by owner
	total   int                // slots held
	queue   []*waiter
	seq     uint64
}

// slot is a running stream's hold on one slot.
type slot struct {
	owner    string
	gs       *guardedStream // nil: not guarded, never made to yield
	yielding bool
}

// waiter is a stream waiting for a slot.
type waiter struct {
	owner   string
	seq     uint64
	gs      *guardedStream
	granted chan struct{} // closed once it holds s
	s       *slot
}

// admissionLimits are an admission's bounds, each with its key.
type admissionLimits struct {
	capacity, share           int
	capKey, shareKey, waitKey string
	maxQueue                  int
	wait                      time.Duration
	minRate                   int64
}

func newAdmission(method string, l admissionLimits) *admission {
	return &admission{method: method, capacity: l.capacity, share: l.share, capKey: l.capKey, shareKey: l.shareKey, waitKey: l.waitKey,
		maxQueue: l.maxQueue, wait: l.wait, minRate: l.minRate, now: time.Now, running: map[string][]*slot{}}
}

// acquire waits for a slot for a stream of owner; the returned func gives
// it back.
func (a *admission) acquire(ctx context.Context, owner string, gs *guardedStream) (func(), error) {
	a.mu.Lock()
	if len(a.queue) >= a.maxQueue {
		a.mu.Unlock()
		return nil, status.Errorf(codes.ResourceExhausted, "too many %s streams waiting for a slot (%d, limits.max_queued_streams): retry later", a.method, a.maxQueue)
	}
	a.seq++
	w := &waiter{owner: owner, seq: a.seq, gs: gs, granted: make(chan struct{})}
	a.queue = append(a.queue, w)
	a.dispatch()
	a.mu.Unlock()

	timer := time.NewTimer(a.wait)
	defer timer.Stop()
	tick := time.NewTicker(preemptEvery)
	defer tick.Stop()
	for {
		select {
		case <-w.granted:
			return a.releaser(w.s), nil
		case <-tick.C:
			a.mu.Lock()
			a.preempt()
			a.mu.Unlock()
			continue
		case <-timer.C:
		case <-ctx.Done():
		}
		a.mu.Lock()
		if w.s != nil { // granted meanwhile
			a.mu.Unlock()
			return a.releaser(w.s), nil
		}
		a.remove(w)
		held := len(a.running[owner])
		a.mu.Unlock()
		if ctx.Err() != nil {
			return nil, status.Errorf(status.FromContextError(ctx.Err()).Code(), "the call ended while its %s stream waited for a slot (limits.%s = %d, limits.%s = %d): %v",
				a.method, a.capKey, a.capacity, a.shareKey, a.share, ctx.Err())
		}
		return nil, status.Errorf(codes.ResourceExhausted, "no %s slot within %s (limits.%s): limits.%s = %d are all held, %d of them by %s (limits.%s = %d): retry later",
			a.method, a.wait, a.waitKey, a.capKey, a.capacity, held, owner, a.shareKey, a.share)
	}
}

func (a *admission) releaser(s *slot) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			a.mu.Lock()
			defer a.mu.Unlock()
			held := a.running[s.owner]
			for i, x := range held {
				if x == s {
					held = append(held[:i], held[i+1:]...)
					break
				}
			}
			if len(held) == 0 {
				delete(a.running, s.owner)
			} else {
				a.running[s.owner] = held
			}
			a.total--
			a.dispatch()
		})
	}
}

// next is the waiter a free slot goes to: of the principals under their
// share, the one holding the fewest slots, the earliest among equals; nil
// for none. a.mu must be held.
func (a *admission) next() *waiter {
	var best *waiter
	for _, w := range a.queue {
		n := len(a.running[w.owner])
		if n >= a.share {
			continue
		}
		if best == nil || n < len(a.running[best.owner]) || (n == len(a.running[best.owner]) && w.seq < best.seq) {
			best = w
		}
	}
	return best
}

// dispatch hands free slots to waiters. a.mu must be held.
func (a *admission) dispatch() {
	for a.total < a.capacity {
		w := a.next()
		if w == nil {
			return
		}
		a.remove(w)
		w.s = &slot{owner: w.owner, gs: w.gs}
		a.running[w.owner] = append(a.running[w.owner], w.s)
		a.total++
		if w.gs != nil {
			// Its rate is measured from now: time spent waiting is not
			// its client's.
			w.gs.progress.reset(a.now())
		}
		close(w.granted)
	}
}

func (a *admission) remove(w *waiter) {
	for i, x := range a.queue {
		if x == w {
			a.queue = append(a.queue[:i], a.queue[i+1:]...)
			return
		}
	}
}

// preempt makes streams below the minimum progress yield their slots to
// the waiters that could take them: for each principal waiting under its
// share, one stream of a principal holding more slots than it. a.mu must
// be held.
func (a *admission) preempt() {
	if a.minRate <= 0 || a.total < a.capacity {
		return
	}
	yielding := 0
	for _, held := range a.running {
		for _, s := range held {
			if s.yielding {
				yielding++
			}
		}
	}
	now := a.now()
	seen := map[string]bool{}
	for _, w := range a.queue {
		if seen[w.owner] || len(a.running[w.owner]) >= a.share {
			continue
		}
		seen[w.owner] = true
		if yielding > 0 { // a slot is on its way to this one
			yielding--
			continue
		}
		if v := a.victim(w.owner, now); v != nil {
			v.yielding = true
			rate := v.gs.progress.rate(now)
			v.gs.yield(status.Errorf(codes.ResourceExhausted,
				"%s stream gave its slot up to waiting callers: it moved %d bytes/s over the last %s while waiting for its client, below limits.min_stream_rate = %d",
				a.method, rate, progressWindow, a.minRate))
		}
	}
}

// victim is a stream that should yield to a waiter of owner: of the
// principal holding the most slots, more than owner does, one below the
// minimum progress. a.mu must be held.
func (a *admission) victim(owner string, now time.Time) *slot {
	var best *slot
	bestHeld := len(a.running[owner]) + 1
	for o, held := range a.running {
		if o == owner || len(held) < bestHeld {
			continue
		}
		for _, s := range held {
			if s.yielding || s.gs == nil || !s.gs.progress.below(now, a.minRate) {
				continue
			}
			if best == nil || len(held) > len(a.running[best.owner]) {
				best = s
			}
			break
		}
	}
	return best
}

// stream is the interceptor: it admits streams of a.method.
func (a *admission) stream() grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		if methodName(info.FullMethod) != a.method {
			return handler(srv, ss)
		}
		gs, _ := ss.Context().Value(guardedKey{}).(*guardedStream)
		release, err := a.acquire(ss.Context(), streamOwner(ss.Context()), gs)
		if err != nil {
			return err
		}
		defer release()
		return handler(srv, ss)
	}
}

// streamOwner names whose share a stream counts against: its principal,
// or the client address of an anonymous caller.
func streamOwner(ctx context.Context) string {
	p, _ := auth.FromContext(ctx)
	if !p.Anonymous && p.Name != "" {
		return "principal " + p.Name
	}
	if pr, ok := peer.FromContext(ctx); ok && pr.Addr != nil {
		host := pr.Addr.String()
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
		return "client " + host
	}
	return "anonymous"
}

// progress is a stream's traffic, for the minimum-progress rule: the
// bytes it moved, measured over windows of progressWindow, and whether it
// is waiting for its client now.
type progress struct {
	mu        sync.Mutex
	bytes     int64
	winStart  time.Time
	winBytes  int64
	prevRate  int64 // bytes/s over the last whole window; -1 for none yet
	blocked   bool
	measuring bool
}

// reset starts measuring at now.
func (p *progress) reset(now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.winStart, p.winBytes, p.prevRate, p.measuring = now, p.bytes, -1, true
}

// moved counts n bytes moved at now.
func (p *progress) moved(now time.Time, n int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.bytes += n
	if !p.measuring {
		return
	}
	if d := now.Sub(p.winStart); d >= progressWindow {
		p.prevRate = int64(float64(p.bytes-p.winBytes) / d.Seconds())
		p.winStart, p.winBytes = now, p.bytes
	}
}

func (p *progress) setBlocked(b bool) {
	p.mu.Lock()
	p.blocked = b
	p.mu.Unlock()
}

// rate is the stream's rate over the current window when it is whole, or
// else over the last one; -1 when it has not been measured a window long.
func (p *progress) rate(now time.Time) int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.rateLocked(now)
}

func (p *progress) rateLocked(now time.Time) int64 {
	if !p.measuring {
		return -1
	}
	if d := now.Sub(p.winStart); d >= progressWindow {
		return int64(float64(p.bytes-p.winBytes) / d.Seconds())
	}
	return p.prevRate
}

// below tells a stream under the minimum progress: waiting for its client
// now, after moving less than minRate over a window.
func (p *progress) below(now time.Time, minRate int64) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	r := p.rateLocked(now)
	return p.blocked && r >= 0 && r < minRate
}
