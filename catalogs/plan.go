package catalogs

import "context"

// FilePlanner is implemented by backends whose table data are Parquet
// files that the SQL engine may read itself instead of through Scan. The
// engine reads a table's files directly only when the plan is Plain; in
// every other case it falls back to Scanner, which stays the general path.
type FilePlanner interface {
	// PlanFiles returns the data files a scan of req must read, after the
	// backend's partition and column-statistics pruning. Columns and
	// Filters mean what they mean for Scan; the engine still evaluates
	// the whole query over the files.
	PlanFiles(ctx context.Context, table TableIdent, req ScanRequest) (*FilePlan, error)
}

// FilePlan is the set of data files a scan reads.
type FilePlan struct {
	// Files are absolute local filesystem paths of Parquet files, each
	// under Root.
	Files []string
	// Root is the local directory that holds every file of the catalog
	// (its configured warehouse), the only directory a reader of this
	// plan needs access to.
	Root string
	// Plain is true when reading Files by column name, as they are, gives
	// exactly the table's rows: no delete files apply, every file was
	// written with the table's current schema, and the files are local.
	// Files and Root may be empty when Plain is false.
	Plain bool
	// Reason says why a plan is not plain (for logs and tests).
	Reason string
	// FilesTotal is the number of data files in the snapshot.
	FilesTotal int
	// FileBytes are the sizes of Files, in the same order (0 where the
	// backend does not know).
	FileBytes []int64
	// SnapshotID is the snapshot planned, when the backend has snapshots:
	// planning again with it as ScanRequest.SnapshotID gives the same
	// files, which is how a query read in parts reads one table version.
	SnapshotID *int64
}

// StagedPlanner is implemented by FilePlanners that can also plan a
// transaction's uncommitted writes, so that a query inside the
// transaction reads them with the committed data (read-your-writes).
type StagedPlanner interface {
	// PlanStaged plans a scan of req over the table as a transaction
	// sees it: the committed files (none when overwrite is true, the
	// transaction having replaced the table's data) and the files the
	// receipts staged. Plain means what it means for PlanFiles, for every
	// file; the plan has no SnapshotID, since no snapshot holds the staged
	// files.
	PlanStaged(ctx context.Context, table TableIdent, req ScanRequest, staged []WriteReceipt, overwrite bool) (*FilePlan, error)
}
