package catalogs

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"
)

// WriteTxn names the gateway unit of work a write belongs to: a Flight SQL
// transaction, or one auto-commit ingest or INSERT. Backends whose writes
// go into a transaction of their own (StarRocks Stream Load, an upstream
// Flight SQL server) use it so that one gateway unit of work is one backend
// transaction, however many streams and batches it receives.
type WriteTxn struct {
	// ID identifies the unit of work: the Flight transaction id, or a
	// fresh id for an auto-commit write. Every write of one unit of work to
	// one table carries the same ID.
	ID string
	// CommitID is the id the commit of this unit of work will record (the
	// value CommitOnce receives). A backend that labels its transactions
	// derives the label from it, so that a retried commit finds the first.
	CommitID string
	// AutoCommit is true when the unit of work commits as soon as its one
	// stream ends (no Flight transaction).
	AutoCommit bool
	// Replace is true when the stream's receipts will commit with
	// Overwriter.CommitOverwrite (ingest mode replace, INSERT OVERWRITE).
	// A backend whose stream writes into its backend transaction as the
	// data arrive (an upstream Flight SQL server) must replace there, as
	// it writes; a backend that replaces at the commit ignores it.
	Replace bool
}

// CommitMode says how one table's receipts land.
type CommitMode int

const (
	// ModeAppend adds the receipts' data to the table.
	ModeAppend CommitMode = iota
	// ModeOverwrite replaces all of the table's data with the receipts'
	// (and its schema too, when the receipts came from a SchemaReplacer
	// stream with another schema).
	ModeOverwrite
)

// String names the mode for messages.
func (m CommitMode) String() string {
	if m == ModeOverwrite {
		return "overwrite"
	}
	return "append"
}

// TableCommit is one table's share of a multi-table commit.
type TableCommit struct {
	Table    TableIdent
	Mode     CommitMode
	Receipts []WriteReceipt
}

// MultiTableCommitter is implemented by backends whose catalog can commit
// several tables atomically (Iceberg on a REST catalog, through its
// transactions/commit endpoint): either every table's snapshot lands or
// none does.
type MultiTableCommitter interface {
	// CommitTables commits every table in one atomic catalog operation,
	// recording commitID in each new snapshot, with the compare-and-swap
	// retry loop of Commit. When commitID has already landed on every
	// table it returns those outcomes and appends nothing (with
	// CommitOutcome.Duplicate set where the landed data are not these
	// receipts'). Outcomes are in the order of tables.
	CommitTables(ctx context.Context, commitID string, tables []TableCommit) ([]CommitOutcome, error)
}

// SchemaReplacer is implemented by backends that can replace a table's
// data and schema in one commit (ingest mode replace, whatever columns the
// upload has). The backend decides whether the upload's schema is the
// table's own (after its type conversions, so that int8 columns sent to an
// int column are the same schema) or a new one; either way the table keeps
// its identity and history, and readers see the old table until the commit
// and the new one after it, never an empty or missing table.
type SchemaReplacer interface {
	// OpenReplaceStream opens a write stream whose files are written
	// under schema. Its receipts are committed with
	// Overwriter.CommitOverwrite (or MultiTableCommitter with
	// ModeOverwrite), which then also makes schema the table's schema when
	// it differs from the current one. It returns ErrInvalidArgument
	// naming the column when a type cannot be stored.
	OpenReplaceStream(ctx context.Context, table TableIdent, schema *arrow.Schema) (WriteStream, error)
}

// ReceiptChecker is implemented by backends whose receipts may come back
// from another process (the commit messages of a distributed write: a
// worker gateway staged them, a coordinator commits or aborts them): it
// checks that they are this table's, and whether the table already
// references their files. The gateway refuses such receipts (CommitMessages
// and AbortMessages) for a backend that does not check them.
type ReceiptChecker interface {
	// CheckReceipts checks, before anything is committed or deleted, that
	// the receipts are this backend's, were staged for table as it is now,
	// name only files under the table's location, and name no file twice
	// (it would land once and its rows be counted twice). It returns
	// ErrInvalidArgument naming the receipt or file at fault.
	CheckReceipts(ctx context.Context, table TableIdent, receipts []WriteReceipt) error
	// CheckUnreferenced returns ErrFailedPrecondition naming the first
	// file of receipts that any snapshot of table references (current or
	// older); nil when none is. The gateway asks it before deleting files
	// named by receipts from another process (AbortMessages), which
	// cannot otherwise know that they were never committed, and for
	// CommitMessages' replay refusal.
	CheckUnreferenced(ctx context.Context, table TableIdent, receipts []WriteReceipt) error
}

// PayloadCodec is implemented by backends whose receipts can travel as
// commit messages (the payloads PrepareCommit hands out and CommitMessages
// takes back, in a signed envelope, codec/envelope). The payload is the
// backend's own format: Paimon's is Paimon Java's CommitMessageSerializer
// list, so that a Java coordinator commits the gateway's payloads and the
// gateway commits Java's; Iceberg's is the receipts themselves
// (envelope.EncodeReceipts). The backend kind and the serializer versions
// are the codec's, so a new format adds nothing to codec/envelope, txn or
// handlers. Without it PrepareCommit is FailedPrecondition.
type PayloadCodec interface {
	// PayloadKind names the payload's format in the envelope (the
	// backend kind, "iceberg", "paimon"): a coordinator refuses a payload
	// of another kind before decoding it.
	PayloadKind() string
	// EncodePayload merges the receipts of one table into one payload
	// and returns it with its serializer version.
	EncodePayload(ctx context.Context, table TableIdent, receipts []WriteReceipt) (version int, payload []byte, err error)
	// DecodePayload turns a payload of serializer version, from any
	// process, into receipts of table. It derives what the backend needs
	// beside the payload (file paths) from the table, never from the
	// payload's claims; ReceiptChecker then checks the result. It returns
	// ErrInvalidArgument naming what does not decode, or the serializer
	// version when it does not read that version.
	DecodePayload(ctx context.Context, table TableIdent, version int, payload []byte) ([]WriteReceipt, error)
}
