package paimon

import "time"

// SetS3PartSize sets the multipart part size and returns the undo, so
// that a test reaches a multipart upload with a few MiB.
func SetS3PartSize(n int) func() {
	old := s3PartSize
	s3PartSize = n
	return func() { s3PartSize = old }
}

// SetBeforeAttempt makes fn run in every commit attempt of p after the
// table is loaded and before the attempt writes.
func SetBeforeAttempt(p *Provider, fn func()) { p.beforeAttempt = fn }

// SetNow replaces p's clock (snapshot times, expiry's ages): a test ages
// the snapshots it made by moving the clock on. Set it before p is used
// concurrently.
func SetNow(p *Provider, now func() time.Time) { p.now = now }

// UnwrittenMark is what a drop of a table whose create failed puts in
// snapshot-1's place while it removes the table.
var UnwrittenMark = unwrittenMark
