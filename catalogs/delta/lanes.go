package delta

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/internal/pqwrite"
)

// A table's files hold rows in any order, so an ingest stream encodes
// several at once, as the Paimon backend's unaware-bucket streams do:
// Parquet encoding (zstd above all) is the cost of an ingest, and one file
// is encoded on one core, on the goroutine that also receives and decodes
// the upload. pqwrite.Lanes hands the batches to up to maxLanes lanes (one
// per core); the first works alone until laneSpread bytes have gone out,
// so that a small upload stays one file (per partition) in its order.
// Each lane writes its own files, each with its own stats, rolled at the
// target file size. An unpartitioned table's lane holds the batch it
// encodes, one row group of at most 4 MiB encoded (newFile) and the page
// buffers it reuses; the queue one batch per lane. A partitioned table's
// lane takes whole batches of the table's columns, splits them by
// partition and keeps a file open per partition it has seen, at most
// maxOpenFiles over all lanes (so a partition the lanes share has a file
// from each). OPTIMIZE writes through one lane of its own (the stream's
// goroutine): its point is fewer files.

// maxLanes bounds the files one stream encodes at once.
const maxLanes = 4

// laneSpread is the Arrow size of an upload past which another lane
// starts (a variable for tests).
var laneSpread int64 = 16 << 20

// sendLane hands rec to the lanes (pqwrite.SendTo), opening them at the
// first batch.
func (s *stream) sendLane(ctx context.Context, rec arrow.RecordBatch) error {
	return pqwrite.StreamErr(s.st.ident, pqwrite.SendTo(ctx, &s.lanes, pqwrite.LaneCount(maxLanes), laneSpread, s.lane, rec))
}

// lane is a lane's loop: for an unpartitioned table pqwrite.LaneFiles,
// files of the stream's target size; for a partitioned one partLane.
func (s *stream) lane(ctx context.Context, n int, in <-chan arrow.RecordBatch) error {
	if len(s.partCols) > 0 {
		return s.partLane(ctx, in)
	}
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

// partLane writes the batches it takes from in (the table's columns) by
// partition into open files of its own until in is closed or ctx ends,
// releasing each batch; files left open by an error are closed for the
// stream's cleanup.
func (s *stream) partLane(ctx context.Context, in <-chan arrow.RecordBatch) (err error) {
	o := s.newOpenFiles(maxOpenFiles / pqwrite.LaneCount(maxLanes))
	defer func() {
		if err != nil {
			o.abort()
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
			return o.finishAll()
		}
		err = o.write(ctx, b)
		b.Release()
		if err != nil {
			return err
		}
	}
}
