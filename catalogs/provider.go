package catalogs

import (
	"context"
	"errors"

	"github.com/apache/arrow-go/v18/arrow"
)

// Provider is the core abstraction for data lake catalog backends
// (CatalogProvider in the reference).
//
// Implementations MUST be safe for concurrent use and MUST NOT panic on
// invalid input: every failure is returned as an error wrapping one of the
// kinds in errors.go.
type Provider interface {
	// GetTableSpec loads a table's current spec (schema, partition spec,
	// properties, current snapshot pointer). It MUST be idempotent and safe
	// to call concurrently.
	GetTableSpec(ctx context.Context, table TableIdent) (TableSpec, error)

	// WriteBatch writes a batch of Arrow data to the backend's storage
	// layer. It MUST NOT make the data visible: open table formats stage
	// data files; StarRocks loads into an open Stream Load transaction;
	// upstream Flight SQL writes inside an upstream transaction. The batch
	// is only borrowed for the duration of the call: an implementation that
	// keeps it must Retain it.
	WriteBatch(ctx context.Context, table TableIdent, batch arrow.RecordBatch) (WriteReceipt, error)

	// Commit makes previously written batches visible. For compare-and-swap
	// backends (Iceberg, Delta, Paimon) it MUST be a retry loop that reloads
	// the table on conflict; CommitOutcome.Retried counts the conflicts.
	// For non-transactional backends it MAY be a no-op.
	Commit(ctx context.Context, table TableIdent, receipts []WriteReceipt) (CommitOutcome, error)

	// GetSecurityContext returns the credentials and encryption metadata for
	// the table. Implementations MUST fetch short-lived credentials and MUST
	// NOT cache them beyond their expiry.
	GetSecurityContext(ctx context.Context, table TableIdent) (SecurityContext, error)
}

// Discarder is implemented by backends that can throw away staged writes
// (a rollback). Discard removes every staged artefact the receipts name;
// it is safe to call with receipts whose files are already gone.
type Discarder interface {
	Discard(ctx context.Context, table TableIdent, receipts []WriteReceipt) error
}

// TableManager is implemented by backends that can create and drop tables,
// which the ingest modes create, replace and create-append need.
type TableManager interface {
	// CreateTable creates a table from an Arrow schema with the write's
	// table options (Iceberg's partition spec, sort order and properties;
	// Paimon's bucket, bucket-key, primary-key, partition; Delta's
	// partition; StarRocks' layout; nil: the backend's defaults). It
	// returns an error wrapping ErrAlreadyExists when the table exists,
	// and ErrInvalidArgument naming the column when a type cannot be
	// stored, or naming the option when the backend does not take it or
	// cannot write the layout it asks for: an option is never ignored.
	CreateTable(ctx context.Context, table TableIdent, schema *arrow.Schema, opts map[string]string) (TableSpec, error)
	// CheckTableOptions checks, without creating anything, what
	// CreateTable would check of opts for a table of schema: a
	// create_append that finds its table existing still refuses the
	// options it could never have applied.
	CheckTableOptions(table TableIdent, schema *arrow.Schema, opts map[string]string) error
	// DropTable drops a table and returns ErrNotFound when it does not exist.
	DropTable(ctx context.Context, table TableIdent) error
}

// Uncreator is implemented by backends that can undo a create whose first
// write failed before its commit landed, so that the failed create leaves
// no table behind and a retry with mode create succeeds. The check and the
// drop are one atomic step: a table another writer has committed to in
// the meantime is never dropped, so no acknowledged row is lost.
type Uncreator interface {
	// DropUnwritten drops table when no commit has landed on it since it
	// was created (its metadata is still the creation's), and reports
	// whether it did. A table that cannot be dropped so (someone
	// committed, or the catalog cannot drop conditionally) is kept:
	// dropped is false and err nil.
	DropUnwritten(ctx context.Context, table TableIdent) (dropped bool, err error)
}

// Lister is implemented by backends that can enumerate their namespaces and
// tables (metadata calls such as GetDbSchemas and GetTables).
type Lister interface {
	// ListNamespaces returns every namespace, each as its path of levels.
	ListNamespaces(ctx context.Context) ([][]string, error)
	// ListTables returns the tables of one namespace.
	ListTables(ctx context.Context, namespace []string) ([]TableIdent, error)
}

// CommitRecord describes a commit that has landed, found by its commit id.
type CommitRecord struct {
	Outcome CommitOutcome `json:"outcome"`
	// RowCount is the number of rows the commit added.
	RowCount uint64 `json:"row_count"`
}

// IdempotentCommitter is implemented by backends that record a commit id
// with each commit, so that a commit whose reply was lost can be repeated
// without appending twice.
type IdempotentCommitter interface {
	// CommitOnce commits like Provider.Commit and records commitID with the
	// commit. When a commit with the same id has already landed on the
	// table, it returns that commit's outcome and appends nothing (the
	// receipts' staged files are then the caller's to discard).
	CommitOnce(ctx context.Context, table TableIdent, commitID string, receipts []WriteReceipt) (CommitOutcome, error)
	// FindCommit looks up a landed commit by id; ok is false when none has.
	FindCommit(ctx context.Context, table TableIdent, commitID string) (rec CommitRecord, ok bool, err error)
}

// CommitMatcher is implemented by IdempotentCommitters that can tell which
// data files a landed commit added, so that a commit id names exactly one
// set of files: a commit id repeated with the files it landed with is
// answered from its snapshot, and with other files refused, however many
// processes race with it (CommitMessages). Both answers come from what
// the commit recorded, never from the request.
type CommitMatcher interface {
	// MatchCommit looks commitID up on table. When it has landed, rec is
	// the commit as recorded (RowCount: the rows it added), and same
	// reports whether it added exactly the data files of receipts (in a
	// snapshot that merged several commits: the receipts' files are among
	// the snapshot's and their rows are the rows recorded for commitID).
	MatchCommit(ctx context.Context, table TableIdent, commitID string, receipts []WriteReceipt) (rec CommitRecord, landed, same bool, err error)
}

// Overwriter is implemented by backends that can atomically replace all of
// a table's current data with the staged receipts (ingest mode replace).
type Overwriter interface {
	// CommitOverwrite removes every data file of the current snapshot and
	// adds the receipts' files in one commit, with the same retry and
	// commit id rules as IdempotentCommitter.CommitOnce (an empty commitID
	// records none).
	CommitOverwrite(ctx context.Context, table TableIdent, commitID string, receipts []WriteReceipt) (CommitOutcome, error)
}

// Closer is implemented by backends that hold resources (connections,
// background goroutines) to release at shutdown.
type Closer interface {
	Close() error
}

// AllTables lists every table of every namespace of l. A namespace
// dropped between the two listings is skipped.
func AllTables(ctx context.Context, l Lister) ([]TableIdent, error) {
	nss, err := l.ListNamespaces(ctx)
	if err != nil {
		return nil, err
	}
	var out []TableIdent
	for _, ns := range nss {
		ts, err := l.ListTables(ctx, ns)
		if err != nil && !errors.Is(err, ErrNotFound) {
			return nil, err
		}
		out = append(out, ts...)
	}
	return out, nil
}
