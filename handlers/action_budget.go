package handlers

import (
	"context"
	"net"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/flightgw/flightgw/auth"
)

// Defaults of Options.MaxActionBytes and Options.ActionMemory.
const (
	// DefaultMaxActionBytes is the largest body of a distributed-commit
	// action: 64 MiB of JSON carry the commit messages of some hundred
	// thousand data files.
	DefaultMaxActionBytes = 64 << 20
	// DefaultActionMemory lets four actions of the largest body decode at
	// once.
	DefaultActionMemory = ActionDecodeFactor * DefaultMaxActionBytes * 4
)

// ActionDecodeFactor is what a distributed-commit action may hold at its
// peak, per byte of its body: the body itself, the JSON decoder's copy of
// it (grown by doubling while it reads), the payloads decoded from base64
// and the receipts decoded from them. Measured on a 16 MiB CommitMessages:
// 1.55 times the body live once decoded, 7 times allocated in all (with
// the decoder's garbage), about 3 to 4 times at the peak.
const ActionDecodeFactor = 4

// actionBudget is the memory the DoAction bodies of the gateway may hold
// at once (Options.ActionMemory), in all and per principal (half of it,
// or the need of one action of the largest body when more). Two kinds of
// holding count against it:
//   - a body being received holds limits.max_action_bytes, its size
//     unknown until it arrived (ReserveActionBody); one that does not fit
//     waits, since nothing of it is buffered yet;
//   - a distributed-commit action holds ActionDecodeFactor times its
//     body's size while it decodes and runs (admitAction); one that does
//     not fit is refused at once with ResourceExhausted rather than
//     queued, because a queued request would hold its body, unaccounted,
//     while it waits.
type actionBudget struct {
	mu     sync.Mutex
	used   int64
	owners map[string]int64 // principal ID: what its actions hold
	freed  chan struct{}    // closed, and replaced, when memory is given back
}

// maxActionBytes and actionMemory are the configured bounds or their
// defaults.
func (h *Handler) maxActionBytes() int64 {
	if h.opts.MaxActionBytes > 0 {
		return h.opts.MaxActionBytes
	}
	return DefaultMaxActionBytes
}

func (h *Handler) actionMemory() int64 {
	if h.opts.ActionMemory > 0 {
		return h.opts.ActionMemory
	}
	return DefaultActionMemory
}

// principalActionMemory is one principal's share of limits.action_memory.
func (h *Handler) principalActionMemory() int64 {
	return min(h.actionMemory(), max(h.actionMemory()/2, ActionDecodeFactor*h.maxActionBytes()))
}

// take adds n to owner's holding if both bounds allow it, and reports
// whether they did; b.mu must be held.
func (b *actionBudget) take(owner string, n, budget, share int64) bool {
	if b.used+n > budget || b.owners[owner]+n > share {
		return false
	}
	if b.owners == nil {
		b.owners = map[string]int64{}
	}
	b.used += n
	b.owners[owner] += n
	return true
}

// giver returns the func that gives n of owner's holding back, once.
func (b *actionBudget) giver(owner string, n int64) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			b.mu.Lock()
			defer b.mu.Unlock()
			b.used -= n
			if b.owners[owner] -= n; b.owners[owner] <= 0 {
				delete(b.owners, owner)
			}
			if b.freed != nil {
				close(b.freed)
				b.freed = nil
			}
		})
	}
}

// actionOwner is whose share an action counts against: its principal,
// or the client address of an anonymous caller (as for the stream
// shares, server/limits.go).
func actionOwner(ctx context.Context) string {
	p, _ := auth.FromContext(ctx)
	if p.Anonymous {
		if pr, ok := peer.FromContext(ctx); ok && pr.Addr != nil {
			host := pr.Addr.String()
			if h, _, err := net.SplitHostPort(host); err == nil {
				host = h
			}
			return "client " + host
		}
	}
	return p.ID()
}

// ReserveActionBody reserves limits.max_action_bytes of the action budget
// for a DoAction body about to be received, waiting at most wait (and
// the call's deadline) when the gateway's or the principal's share is
// held by others; the returned func gives it back, once the body arrived.
func (h *Handler) ReserveActionBody(ctx context.Context, wait time.Duration) (func(), error) {
	n, budget, share := h.maxActionBytes(), h.actionMemory(), h.principalActionMemory()
	owner := actionOwner(ctx)
	timer := time.NewTimer(wait)
	defer timer.Stop()
	b := &h.actionMem
	for {
		b.mu.Lock()
		if b.take(owner, n, budget, share) {
			b.mu.Unlock()
			return b.giver(owner, n), nil
		}
		if b.freed == nil {
			b.freed = make(chan struct{})
		}
		freed, inUse, mine := b.freed, b.used, b.owners[owner]
		b.mu.Unlock()
		select {
		case <-freed:
		case <-timer.C:
			return nil, status.Errorf(codes.ResourceExhausted,
				"DoAction: no room to receive a body of up to limits.max_action_bytes = %d within %s: limits.action_memory = %d has %d in use, %d of them by %s (its share is %d): retry later",
				n, wait, budget, inUse, mine, owner, share)
		case <-ctx.Done():
			return nil, status.FromContextError(ctx.Err()).Err()
		}
	}
}

// admitAction checks an action body against limits.max_action_bytes and
// takes its share of limits.action_memory; the returned func gives it
// back.
func (h *Handler) admitAction(ctx context.Context, action string, body []byte) (func(), error) {
	n, limit := int64(len(body)), h.maxActionBytes()
	if n > limit {
		return nil, status.Errorf(codes.ResourceExhausted,
			"%s: request body of %d bytes is over limits.max_action_bytes = %d (split the tables over several requests)", action, n, limit)
	}
	need, budget, share := max(n, 1024)*ActionDecodeFactor, h.actionMemory(), h.principalActionMemory()
	owner := actionOwner(ctx)
	b := &h.actionMem
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.take(owner, need, budget, share) {
		return nil, status.Errorf(codes.ResourceExhausted,
			"%s: request body of %d bytes needs %d bytes to decode, and limits.action_memory = %d has %d free, %s's share %d (other actions are running): retry later",
			action, n, need, budget, budget-b.used, owner, share-b.owners[owner])
	}
	return b.giver(owner, need), nil
}

// ActionMemoryInUse is the memory the running distributed-commit actions
// hold, for metrics and tests.
func (h *Handler) ActionMemoryInUse() int64 {
	h.actionMem.mu.Lock()
	defer h.actionMem.mu.Unlock()
	return h.actionMem.used
}
