// Package catalogtest is the conformance suite every catalogs backend
// passes, in the manner of testing/fstest.TestFS: a backend's own test
// builds a Harness (a fresh provider, a way to list the files under its
// storage) and calls Run.
//
// The suite checks that GetTableSpec is idempotent under concurrency, that
// written data is invisible before Commit and visible after, that
// concurrent committers all land exactly once (with conflicts counted in
// Retried), that Discard and an aborted stream leave no staged file, that
// CommitOnce is idempotent by commit id, and that bad input fails with the
// right error kind naming the table or column. Checks for an optional
// capability the backend lacks are skipped.
package catalogtest
