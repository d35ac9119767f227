package catalogs

import "context"

// StagedScanner is implemented by backends that can read a table together
// with a transaction's uncommitted writes through a stream, whatever their
// files need to be read (a merge on read, an object store). It is the
// general read-your-writes path: the SQL engine reads the staged files
// itself when a StagedPlanner's plan is plain, and through ScanStaged
// otherwise.
type StagedScanner interface {
	// ScanStaged reads the table as the transaction sees it: the committed
	// data of the current snapshot (none when overwrite is true, the
	// transaction having replaced the table's data) and the data the
	// receipts staged, as if they had been committed on top of it. It has
	// the semantics of Scan, merge on read included (a staged row of an
	// existing primary key replaces the committed one, a staged deletion
	// drops it). req.SnapshotID must be nil: no snapshot holds the staged
	// files. Receipts of another table are an ErrInvalidArgument.
	ScanStaged(ctx context.Context, table TableIdent, req ScanRequest, staged []WriteReceipt, overwrite bool) (*ScanResult, error)
}
