package delta

import (
	"context"
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/internal/pqwrite"
)

// An unpartitioned table's files hold rows in any order, so an ingest
// stream encodes several at once, as the Paimon backend's unaware-bucket
// streams do: Parquet encoding (zstd above all) is the cost of an ingest,
// and one file is encoded on one core, on the goroutine that also
// receives and decodes the upload. pqwrite.Lanes hands the batches to up
// to maxLanes lanes (one per core); the first works alone until
// laneSpread bytes have gone out, so that a small upload stays one file
// in its order. Each lane writes its own files, each with its own stats,
// rolled at the target file size. A lane holds the batch it encodes, one
// row group of at most 4 MiB encoded (newFile) and the page buffers it
// reuses; the queue one batch per lane. OPTIMIZE writes through one lane
// of its own (the stream's goroutine): its point is fewer files.

// maxLanes bounds the files one stream encodes at once.
const maxLanes = 4

// laneSpread is the Arrow size of an upload past which another lane
// starts (a variable for tests).
var laneSpread int64 = 16 << 20

// sendLane hands rec to the lanes, starting them at the first batch. The
// lanes' context is the stream's, not this call's: they serve every
// later Write; a Write or Close whose context ends while it waits stops
// them (Lanes.Send, Lanes.Close).
func (s *stream) sendLane(ctx context.Context, rec arrow.RecordBatch) error {
	if s.lanes == nil {
		s.lanes = pqwrite.NewLanes(ctx, pqwrite.LaneCount(maxLanes), laneSpread, s.lane)
	}
	rec.Retain() // the lane's now: it releases it
	if err := s.lanes.Send(ctx, rec); err != nil {
		return s.laneErr(err)
	}
	return nil
}

// laneErr keeps a backend error's kind and names the table on any other
// (a context's end, a lane's panic).
func (s *stream) laneErr(err error) error {
	if catalogs.Kind(err) != nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return catalogs.Wrap(catalogs.ErrUnavailable, err, fmt.Sprintf("table %s: write data files", s.st.ident))
}

// lane is a lane's loop (pqwrite.LaneFiles): unpartitioned files of the
// stream's target size.
func (s *stream) lane(ctx context.Context, n int, in <-chan arrow.RecordBatch) error {
	return pqwrite.LaneFiles[*fileWriter]{
		Open: func(ctx context.Context, first arrow.RecordBatch, mem *pqwrite.Alloc) (*fileWriter, error) {
			return s.newFile(ctx, "", nil, first, mem)
		},
		Write: func(w *fileWriter, b arrow.RecordBatch) error {
			if err := w.pf.Write(b); err != nil {
				return catalogs.Wrap(catalogs.ErrUnavailable, err, fmt.Sprintf("table %s: write %s", s.st.ident, w.rel))
			}
			return nil
		},
		Size:   func(w *fileWriter) int64 { return w.pf.Size() },
		Target: s.target,
		Finish: s.finish,
		Abort:  func(w *fileWriter) { w.pf.Abort() },
	}.Run(ctx, n, in)
}
