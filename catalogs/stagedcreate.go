package catalogs

import (
	"context"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
)

// StagedCreator is implemented by backends whose table format lets a
// table be prepared where no other connection sees it and published with
// its first snapshot in one atomic step (a Delta table exists once its log
// version 0 does). A create through it becomes visible only when its first
// commit lands: a create that fails, is cancelled or dies with the gateway
// before then leaves no table (at most unreferenced data files, which the
// backend's Reclaimer removes), and a create inside a transaction becomes
// visible at COMMIT. Without it the write path creates the table first and
// undoes a failed create with Uncreator.
type StagedCreator interface {
	// StagesCreate reports whether a create with these table options is
	// staged; when not, the write creates the table up front
	// (TableManager.CreateTable) as for a backend without StagedCreator.
	StagesCreate(opts map[string]string) bool
	// OpenCreateStream opens a write stream into table, which does not
	// exist yet, as it will be created from schema and opts (the table
	// options TableManager.CreateTable takes): its location and schema are fixed
	// now and its files are written under that location, but nothing is
	// visible. It checks what CreateTable would check (the namespace
	// exists, every type can be stored, every option applies) and returns
	// ErrInvalidArgument naming the column or option, ErrNotFound naming
	// the namespace.
	OpenCreateStream(ctx context.Context, table TableIdent, schema *arrow.Schema, opts map[string]string, w WriteTxn) (WriteStream, error)
	// CommitCreate publishes table, created from schema and opts, with
	// the receipts (of streams OpenCreateStream opened with the same
	// schema and opts; none for an empty table) as its first snapshot,
	// recording commitID as CommitOnce does, in one atomic step. When the
	// table exists (another create won the race) it returns
	// ErrAlreadyExists and publishes nothing: the receipts' files are then
	// the caller's to discard. A CommitCreate repeated after its commit
	// landed returns that commit's outcome.
	CommitCreate(ctx context.Context, table TableIdent, schema *arrow.Schema, opts map[string]string, commitID string, receipts []WriteReceipt) (CommitOutcome, error)
}

// CreateKeeper is implemented by StagedCreators whose create streams
// leave a mark that the orphan reclaimer reads as their lease (a create
// killed before its commit leaves files that belong to no table: the
// reclaimer deletes them once every mark of the name is older than
// ReclaimOptions.MinAge). A stream refreshes its mark as it writes; a unit
// of work that holds a staged create's receipts (a transaction awaiting
// COMMIT) refreshes theirs with KeepCreate, so that a create is kept
// however long it lives, on any replica sharing the lake.
//
// The marks are refreshed every CreateKeepEvery: ReclaimOptions.MinAge
// must be far above it.
type CreateKeeper interface {
	// KeepCreate refreshes the marks of receipts, of streams that
	// OpenCreateStream opened into table.
	KeepCreate(ctx context.Context, table TableIdent, receipts []WriteReceipt) error
}

// CreateKeepEvery is how often a live staged create refreshes its marks.
const CreateKeepEvery = time.Minute

// CreateScanner is implemented by StagedCreators that can read a table a
// transaction is creating, which exists nowhere but in that transaction:
// a query inside it reads the table as its CommitCreate would make it.
type CreateScanner interface {
	// CreateSchema is the Arrow schema the table created from schema and
	// opts is read with (what GetTableSpec will return once it exists).
	CreateSchema(ctx context.Context, table TableIdent, schema *arrow.Schema, opts map[string]string) (*arrow.Schema, error)
	// ScanCreate reads that table holding only the receipts' rows (of
	// streams OpenCreateStream opened with the same schema and opts), with
	// the semantics of Scan; req.SnapshotID must be nil.
	ScanCreate(ctx context.Context, table TableIdent, schema *arrow.Schema, opts map[string]string, req ScanRequest, staged []WriteReceipt) (*ScanResult, error)
}
