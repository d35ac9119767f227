package paimon

import "sync"

// seqAlloc hands out the sequence numbers of primary-key rows, per table
// directory, partition and bucket, above every number this process has
// handed out before. A stream starts a bucket one past the committed
// files' highest number (seqFor), which alone lets two writes of one
// transaction (two streams, committed together) number their rows from
// the same point: then the first write of a key can carry the higher
// number and win the merge over the second. Reserving each spill's range
// here orders the writes of one process as they were made, as Paimon
// Java's single writer per bucket does.
//
// What it remembers only matters until the rows are committed (then the
// committed maximum covers them), so it is bounded by clearing it: at
// worst, a transaction writing the same keys twice at the moment of a
// clear may lose that order.
type seqAlloc struct {
	mu   sync.Mutex
	next map[string]int64
}

// maxSeqKeys bounds the buckets a seqAlloc remembers.
const maxSeqKeys = 1 << 16

// reserve returns the first of n sequence numbers for key, at least
// floor and above every number reserved for key before.
func (a *seqAlloc) reserve(key string, floor, n int64) int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.next == nil || len(a.next) >= maxSeqKeys {
		a.next = map[string]int64{}
	}
	start := max(floor, a.next[key])
	a.next[key] = start + n
	return start
}
