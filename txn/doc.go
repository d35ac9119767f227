// Package txn is the gateway's unit of work: the one write path every
// write takes, and the Flight SQL transactions that hold staged writes.
//
// Manager.Write is the only way data reaches a backend. Bulk ingest,
// INSERT, prepared INSERT and (through Commit) EndTransaction all go
// through it: it plans the write (create, append, replace), streams the
// batches into the backend (checking that strings are UTF-8), and then
// either joins the receipts to a transaction or commits them at once.
// Every commit goes through commitStaged, which records a commit id and,
// when the backend's reply is an error, looks the id up before anything
// is deleted: staged files are discarded only when their commit certainly
// did not land. A table a write creates becomes visible with its first
// commit on a backend that stages creates (catalogs.StagedCreator: the
// commit publishes table and rows at once; in a transaction, at COMMIT);
// elsewhere it is created first and, when the write fails before its
// commit lands, dropped again only if no one has committed to it since
// (catalogs.Uncreator).
//
// A transaction is owned by the principal that began it and, optionally,
// bound to the client session that began it, so that a client which does
// not send the transaction id with a bulk ingest (ADBC's Flight SQL driver
// with autocommit off) still writes inside it. Abandoned transactions are
// rolled back after an idle timeout, their staged files discarded.
//
// Messages is the write policy of the distributed-commit actions
// (docs/commit-messages.md): it seals a prepared transaction's receipts,
// opens and checks the payloads a coordinator sends back (signature, table,
// age, files), and commits them once per table under the coordinator's
// commit id, or deletes their files when they were never committed; the
// handlers only decode the actions and resolve the tables.
//
// Atomicity: each table's writes commit in one snapshot of that table.
// Tables of one catalog that offers an atomic multi-table commit
// (catalogs.MultiTableCommitter: Iceberg on a REST catalog) commit
// together, all or none. Elsewhere the tables commit one after the other
// in the order they were first written; if one fails, the tables before
// it stay committed and the transaction stays open, so that COMMIT can be
// retried (what landed is recognised by its commit id) or the rest rolled
// back.
package txn
