// Package engine runs SQL over catalog tables with an embedded DuckDB.
//
// A query is parsed by DuckDB itself (json_serialize_sql); every table it
// names is resolved by the caller (which enforces realms), scanned through
// the backend's catalogs.Scanner with the projection and the simple filters
// the query implies, and handed to DuckDB as an Arrow C stream registered
// under a private name on a connection that lives for that query alone.
// The rewritten query runs as a streaming DuckDB result, converted to Arrow
// one chunk at a time, so no result is ever held whole.
//
// When every table of a query has a plain file plan (catalogs.FilePlanner),
// the private names are instead views over DuckDB's read_parquet of exactly
// the planned files, and the query runs in a second DuckDB whose optimizer
// is whole and whose only readable directories are those tables' warehouse
// roots (native.go). User SQL can name no file on either path: table
// functions outside a small allowlist are refused in the parse tree.
//
// DuckDB is locked down when it opens: no external access (no files but
// the native DuckDB's warehouse roots, no ATTACH, no COPY TO, no extension
// installs or autoloading) and a locked configuration. Only SELECT statements reach DuckDB at all; every other
// statement kind is refused by name before it is executed, as are several
// statements at once, SHOW/DESCRIBE/SUMMARIZE, DuckDB's catalog views and
// functions (policy.go). No object a query creates outlives it or is seen
// by another query (cstream.go), and functions whose result size their
// arguments set are bounded by the memory limit (policy.go).
//
// The package needs the duckdb_arrow build tag (set by mk/query.mk for
// every make target); without it Built is false, New returns ErrNoEngine
// and the gateway answers SQL with Unimplemented (build.go).
package engine
