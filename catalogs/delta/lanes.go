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

// lane writes the batches it takes from in into files of its own. A file
// it leaves open on error is closed here; the stream's cleanup deletes it
// (newFile listed it).
func (s *stream) lane(ctx context.Context, _ int, in <-chan arrow.RecordBatch) (err error) {
	var w *fileWriter
	mem := pqwrite.NewAlloc()
	defer func() {
		if w != nil {
			w.pf.Abort()
		}
	}()
	for {
		var b arrow.RecordBatch
		select {
		case b = <-in:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
		if b == nil { // in is closed: the upload is complete
			break
		}
		if w == nil {
			if w, err = s.newFile(ctx, "", nil, b, mem); err != nil {
				b.Release()
				return err
			}
		}
		err = w.pf.Write(b)
		b.Release()
		if err != nil {
			return catalogs.Wrap(catalogs.ErrUnavailable, err, fmt.Sprintf("table %s: write %s", s.st.ident, w.rel))
		}
		if w.pf.Size() >= s.target {
			f := w
			w = nil
			if err := s.finish(f); err != nil {
				return err
			}
		}
	}
	if w != nil {
		f := w
		w = nil
		return s.finish(f)
	}
	return nil
}
