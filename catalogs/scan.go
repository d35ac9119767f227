package catalogs

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow/array"
)

// Scanner is implemented by backends that can read a table's committed
// data. The SQL engine pushes the projection and the filters it can express
// down into the scan; the backend uses them to prune files and may still
// return rows that do not match (the engine filters again).
type Scanner interface {
	Scan(ctx context.Context, table TableIdent, req ScanRequest) (*ScanResult, error)
}

// ScanRequest is a projection, a conjunction of simple predicates and a
// row limit.
type ScanRequest struct {
	// Columns to read, by name; nil reads every column.
	Columns []string
	// Filters are ANDed together.
	Filters []Filter
	// SnapshotID reads a given snapshot instead of the current one.
	SnapshotID *int64
	// Limit, when above 0, says the query needs no more than Limit of the
	// rows that satisfy Filters (in any order): a backend may stop once
	// it has returned that many, and may return more (the engine applies
	// the query's LIMIT, and its WHERE, again). 0 means every row is
	// needed. A backend that applies Filters only approximately (pruning
	// files) must count only rows that satisfy all of them, or ignore
	// Limit. The engine sets it only for a query that projects and
	// filters one table under a LIMIT (engine/limit.go).
	Limit int64
}

// FilterOp is a comparison a scan can push down.
type FilterOp string

// The pushable comparisons.
const (
	OpEq      FilterOp = "="
	OpNotEq   FilterOp = "!="
	OpLt      FilterOp = "<"
	OpLtEq    FilterOp = "<="
	OpGt      FilterOp = ">"
	OpGtEq    FilterOp = ">="
	OpIsNull  FilterOp = "is_null"
	OpNotNull FilterOp = "not_null"
	OpIn      FilterOp = "in"
)

// Filter compares a column with literal values. Values hold Go values of
// the column's type: bool, int32, int64, float32, float64, string, []byte,
// time.Time (timestamps and dates) or a decimal as a string.
type Filter struct {
	Column string
	Op     FilterOp
	Values []any
}

// ScanResult streams the scanned batches. The caller must Release the
// reader.
type ScanResult struct {
	Reader array.RecordReader
	// FilesPlanned is the number of data files the scan reads after
	// pruning; FilesTotal is the number in the snapshot.
	FilesPlanned int
	FilesTotal   int
}
