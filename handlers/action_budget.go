package handlers

import (
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
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

// actionBudget is the memory the distributed-commit actions of the
// gateway may hold at once (Options.ActionMemory). An action takes
// ActionDecodeFactor times its body's size before decoding it and gives
// it back when it returns; one that does not fit is refused at once with
// ResourceExhausted rather than queued, because a queued request would
// hold its body, unaccounted, while it waits.
type actionBudget struct {
	mu   sync.Mutex
	used int64
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

// admitAction checks an action body against limits.max_action_bytes and
// takes its share of limits.action_memory; the returned func gives it
// back.
func (h *Handler) admitAction(action string, body []byte) (func(), error) {
	n, limit := int64(len(body)), h.maxActionBytes()
	if n > limit {
		return nil, status.Errorf(codes.ResourceExhausted,
			"%s: request body of %d bytes is over limits.max_action_bytes = %d (split the tables over several requests)", action, n, limit)
	}
	need, budget := max(n, 1024)*ActionDecodeFactor, h.actionMemory()
	b := &h.actionMem
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used+need > budget {
		return nil, status.Errorf(codes.ResourceExhausted,
			"%s: request body of %d bytes needs %d bytes to decode, and limits.action_memory = %d has %d free (other actions are running): retry later",
			action, n, need, budget, budget-b.used)
	}
	b.used += need
	var once sync.Once
	return func() {
		once.Do(func() {
			b.mu.Lock()
			b.used -= need
			b.mu.Unlock()
		})
	}, nil
}

// ActionMemoryInUse is the memory the running distributed-commit actions
// hold, for metrics and tests.
func (h *Handler) ActionMemoryInUse() int64 {
	h.actionMem.mu.Lock()
	defer h.actionMem.mu.Unlock()
	return h.actionMem.used
}
