// Package benchutil holds what the benchmark commands under
// integration/bench share, so that they measure the same way: a pool of
// generated batches and a source that streams from it without copying, a
// flightgw process started on a free loopback port, its peak RSS, and an
// ADBC bulk ingest timed without its connection set-up.
package benchutil
