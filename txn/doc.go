// Package txn holds Flight SQL transactions: the receipts that writes
// staged, per table, until EndTransaction commits or rolls them back.
//
// A transaction is owned by the principal that began it and, optionally,
// bound to the client session that began it, so that a client which does
// not send the transaction id with a bulk ingest (ADBC's Flight SQL driver
// with autocommit off) still writes inside it. Abandoned transactions are
// rolled back after an idle timeout, their staged files discarded.
//
// Atomicity: each table's writes commit in one snapshot of that table. A
// transaction over several tables commits them one after the other, in the
// order they were first written; if one fails, the tables before it stay
// committed, the rest are discarded, and the error names both lists. Table
// formats have no cross-table commit to offer.
package txn
