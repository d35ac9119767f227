package catalogs

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"
)

// StreamWriter is implemented by backends that can write a stream of
// batches into one table as a few large files instead of one small file
// per batch, or into a transaction of their own. The gateway opens one
// stream per ingest request (or INSERT), writes every incoming batch to
// it and closes it to obtain the receipts it commits.
//
// Provider.WriteBatch stays the simple path; a stream has the same
// visibility rule: nothing it writes is visible before a commit.
//
// The stream always knows the unit of work it belongs to (WriteTxn): a
// backend whose writes go into a transaction of its own (StarRocks Stream
// Load, an upstream Flight SQL server) makes every stream opened with the
// same WriteTxn.ID on the same table one backend transaction; the
// receipts the streams return are committed together (Commit, CommitOnce
// or CommitOverwrite with WriteTxn.CommitID) or discarded together
// (Discarder), exactly once. Aborting one stream (WriteStream.Abort) may
// then doom the whole backend transaction: the later commit fails with
// ErrFailedPrecondition naming the table, and nothing of the unit of work
// becomes visible. A backend that stages files may ignore w.
type StreamWriter interface {
	OpenStream(ctx context.Context, table TableIdent, w WriteTxn) (WriteStream, error)
}

// WriteStream is one open write session on a table. It is not safe for
// concurrent use. Memory use is bounded: a stream never holds a whole
// upload, only the batches being encoded into the current files.
type WriteStream interface {
	// Write validates batch against the table schema and queues it for
	// writing. The batch is only borrowed for the call.
	Write(ctx context.Context, batch arrow.RecordBatch) error
	// Close flushes the open files and returns the receipts of every file
	// the stream wrote, ready for Commit. After a failed Close nothing the
	// stream staged is left behind.
	Close(ctx context.Context) ([]WriteReceipt, error)
	// Abort stops the stream and deletes every file it staged. It is safe
	// to call after Close (it then does nothing).
	Abort(ctx context.Context) error
}
