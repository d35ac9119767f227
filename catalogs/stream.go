package catalogs

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"
)

// StreamWriter is implemented by backends that can write a stream of
// batches into one table as a few large files instead of one small file
// per batch. The gateway opens one stream per ingest request, writes every
// incoming batch to it and closes it to obtain the receipts it commits.
//
// Provider.WriteBatch stays the simple path; a stream is an optimisation
// with the same visibility rule: nothing it writes is visible before a
// commit.
type StreamWriter interface {
	OpenStream(ctx context.Context, table TableIdent) (WriteStream, error)
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
