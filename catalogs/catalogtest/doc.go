// Package catalogtest is the conformance suite every catalogs backend
// passes, in the manner of testing/fstest.TestFS and iceberg-go's
// catalog/catalogtest: a backend's own test builds a Harness (a fresh
// provider, a way to list the files under its storage, the backend's
// clock) and calls Run with a Config that declares what the backend
// promises beyond the Provider contract.
//
// The suite checks exactly what is declared, so a correct backend that is
// not shaped like Iceberg passes: staged files are counted (none left
// after Discard or an aborted stream) only when Config.StagesFiles;
// concurrent committers must report retried conflicts only when
// Config.CompareAndSwap (and none otherwise); field ids and snapshot ids
// are checked only with Config.FieldIDs and Config.Snapshots; a stream's
// file count only with LayoutOneFilePerBucket; that an aborted stream
// dooms its unit of work only with Config.TransactionScoped.
//
// For every backend it checks that GetTableSpec is idempotent under
// concurrency, that written data is invisible before Commit and visible
// after, that concurrent committers all land exactly once, that bad input
// fails with the right error kind naming the table or column, and that
// GetSecurityContext never prints its token (fmt, JSON, slog) and never
// returns an expired credential (an expiring one is replaced once the
// harness moves the backend's clock past it). The checks of an optional
// interface (catalogs.Contract in catalogs/contract.go names them, row by
// row, so that this comment does not repeat the list) run when the
// backend implements it and are skipped, naming it, otherwise. Receipts
// and payloads come back
// from other processes: another table's, damaged or foreign ones must be
// refused with ErrInvalidArgument and never panic, a committed receipt
// must be reported referenced (after an overwrite too), and a payload
// decoded for another table must not pass.
//
// The package's own tests run the suite on an in-memory test double that
// stages no files and commits under a mutex, show that flawed variants
// fail it, and drive the real gateway against the double end to end.
package catalogtest
