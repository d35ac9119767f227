package engine

import (
	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightgw/flightgw/catalogs"
)

// The types below are shared by the DuckDB build (duckdb_arrow tag) and
// the build without it (notag.go), so the two cannot drift apart.

// Options configure an Engine.
type Options struct {
	// MemoryLimit is DuckDB's memory_limit ("2GB", "80%"); empty keeps
	// DuckDB's default (80% of RAM).
	MemoryLimit string
	// TempDir is where DuckDB spills; empty disables spilling, so a query
	// over the memory limit fails.
	TempDir string
	// Threads is DuckDB's worker count; 0 keeps its default (all cores).
	Threads int
}

// Description is what a query returns, known before it runs.
type Description struct {
	// Schema is the result schema.
	Schema *arrow.Schema
	// Params is the schema of its parameters ($1 or ? placeholders), one
	// field per parameter; empty when it has none.
	Params *arrow.Schema
	// Origins are the origins of Schema's columns, one per column; nil
	// when the query's text does not tell them (origins.go).
	Origins []Origin
	// Pushed, when set, is the query as its tables' backend runs it whole
	// (pushquery.go), its Schema the result schema above: what
	// Engine.QueryPushed needs to run it again without parsing, binding
	// or preparing it. Nil for a query the engine runs, and for one with
	// parameters.
	Pushed *catalogs.PushedQuery
}

// Origin is the table column a result column shows as it is stored: the
// column a reference names, through aliases, joins, subqueries and CTEs.
// A computed column has the zero Origin.
type Origin struct {
	Table  catalogs.TableIdent
	Column string
}

// Known reports whether the column comes from a table.
func (o Origin) Known() bool { return o.Column != "" }

// ScanStats reports one table scan of a query.
type ScanStats struct {
	Table        catalogs.TableIdent
	Columns      []string
	Filters      []catalogs.Filter
	FilesPlanned int
	FilesTotal   int
	// Native is true when DuckDB read the table's Parquet files itself
	// (native.go), false when it read the catalog scan's stream.
	Native bool
	// Direct is true when the files were read straight into Arrow
	// batches, not by DuckDB (direct.go): a native scan of a query that
	// only lists columns.
	Direct bool
	// Pushed is true when the table's backend ran the whole query
	// (pushquery.go): no scan of its own, the other fields are empty.
	Pushed bool
}

// Part is one of the parts a query is read in (Engine.Split): the query
// over its share of the table's files.
type Part struct {
	// Index is the part, from 0 to Count-1.
	Index, Count int
	// Snapshot is the table version every part reads.
	Snapshot int64
}

// SplitOptions bound how a query is split.
type SplitOptions struct {
	// MaxParts is the most parts; below 2 nothing is split.
	MaxParts int
	// MinBytes is the least data (the planned files' bytes) worth
	// splitting.
	MinBytes int64
}
