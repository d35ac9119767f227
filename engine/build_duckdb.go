//go:build duckdb_arrow

package engine

// Built reports whether this binary has the SQL engine; it is true in a
// build with BuildTag.
const Built = true
