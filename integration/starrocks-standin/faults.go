package main

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
)

// The injectable faults. Each applies to one operation (begin, load,
// prepare, commit, rollback, stream_load, get_load_state) and fires a
// number of times (0: until cleared).
const (
	// faultFail answers the call with the operation's failure body
	// ("Status": "FAILED" on the transaction interface, "Fail" on
	// _stream_load); a failed load or prepare aborts its transaction, as
	// StarRocks does.
	faultFail = "fail"
	// faultPublishTimeout (commit, stream_load) commits the transaction
	// but answers that publishing timed out: the rows become visible
	// after -publish-delay.
	faultPublishTimeout = "publish_timeout"
	// faultDrop (load, stream_load) reads part of the body and closes the
	// connection without an answer; the transaction is aborted.
	faultDrop = "drop"
	// faultLostReply performs the operation and closes the connection
	// instead of answering.
	faultLostReply = "lost_reply"
)

var knownOps = map[string]bool{"begin": true, "load": true, "prepare": true, "commit": true, "rollback": true,
	"stream_load": true, "get_load_state": true}

// fault is one armed fault.
type fault struct {
	Kind  string `json:"kind"`
	Times int    `json:"times"` // 0: every call until cleared
}

// faults are the armed faults by operation.
type faults struct {
	mu sync.Mutex
	m  map[string]*fault
}

// parseFaults reads "op=kind[:times],...".
func parseFaults(s string) (*faults, error) {
	f := &faults{m: map[string]*fault{}}
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		op, spec, ok := strings.Cut(part, "=")
		if !ok {
			return nil, fmt.Errorf("%q: want op=kind[:times]", part)
		}
		kind, times, _ := strings.Cut(spec, ":")
		n := 0
		if times != "" {
			var err error
			if n, err = strconv.Atoi(times); err != nil {
				return nil, fmt.Errorf("%q: times: %w", part, err)
			}
		}
		if err := f.set(op, fault{Kind: kind, Times: n}); err != nil {
			return nil, err
		}
	}
	return f, nil
}

func (f *faults) set(op string, x fault) error {
	if !knownOps[op] {
		return fmt.Errorf("unknown operation %q", op)
	}
	switch x.Kind {
	case faultFail, faultPublishTimeout, faultDrop, faultLostReply:
	case "", "none":
		f.mu.Lock()
		delete(f.m, op)
		f.mu.Unlock()
		return nil
	default:
		return fmt.Errorf("unknown fault %q", x.Kind)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.m[op] = &x
	return nil
}

// take returns the fault armed for op, consuming one firing.
func (f *faults) take(op string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	x, ok := f.m[op]
	if !ok {
		return ""
	}
	if x.Times > 0 {
		x.Times--
		if x.Times == 0 {
			delete(f.m, op)
		}
	}
	return x.Kind
}

func (f *faults) clear() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.m = map[string]*fault{}
}
