// Package starrocks is the StarRocks backend (catalog type "starrocks").
//
// Writes go through Stream Load's transaction interface: one gateway unit
// of work (a Flight SQL transaction, or one auto-commit ingest) on one
// table is one Stream Load transaction, begun with a label derived from the
// unit's commit id (label.go), fed with /api/transaction/load for every
// batch (JSON, encode.go), and prepared and committed when the gateway
// commits (commit.go), or rolled back when it discards. What a client
// commits appears at once; what it rolls back never appears.
//
// Commits are recognised by their label: a commit whose reply was lost is
// resolved with get_load_state (COMMITTED or VISIBLE: it landed), Publish
// Timeout counts as committed and is never retried, and only calls that
// cannot apply twice are retried (client.go). Metadata (information_schema),
// DDL and scans go over the MySQL protocol (mysql.go, tables.go, scan.go).
//
// docs/starrocks.md describes the configuration, the label rule and the
// status handling.
package starrocks
