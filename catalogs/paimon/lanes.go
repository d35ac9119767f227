package paimon

import (
	"context"
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightgw/flightgw/catalogs"
	pcodec "github.com/flightgw/flightgw/codec/paimon"
	"github.com/flightgw/flightgw/internal/pqwrite"
)

// The files of an append table with unaware buckets (-1) and no
// partitions hold rows in any order, so a stream encodes several at once:
// Parquet encoding (zstd above all) is the cost of an ingest, and one file
// is encoded on one core. pqwrite.Lanes hands the batches to up to
// maxLanes lanes; the first works alone until laneSpread bytes have gone
// out, so that a small upload stays one file in its order. Each lane
// writes its own files, each with its own DataFileMeta statistics, rolled
// at write.target-file-size-bytes. A lane holds the batch it encodes, one
// row group of at most rowGroupBytes encoded and the page buffers it
// reuses; the queue one batch per lane.

// maxLanes bounds the files one stream encodes at once.
const maxLanes = 4

// laneSpread is the Arrow size of an upload past which another lane
// starts (a variable for tests).
var laneSpread int64 = 16 << 20

// useLanes reports whether the stream's files are written by lanes.
func (s *stream) useLanes() bool {
	return len(s.lay.primary) == 0 && len(s.lay.partition) == 0 && s.lay.buckets < 0
}

// unawareGroup is the one partition and bucket of an unpartitioned
// unaware-bucket table.
var unawareGroup = &group{key: "0", partition: pcodec.EmptyRow, bucket: 0}

// sendLane hands rec to the lanes, starting them at the first batch. The
// lanes' context is the stream's, not this call's: they serve every
// later Write; a Write or Close whose context ends while it waits stops
// them (Lanes.Send, Lanes.Close), and so do the S3 uploads they run.
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

// lane is a lane's loop (pqwrite.LaneFiles): files of the unaware
// bucket, of the table's target file size.
func (s *stream) lane(ctx context.Context, n int, in <-chan arrow.RecordBatch) error {
	return pqwrite.LaneFiles[*fileWriter]{
		Open: func(ctx context.Context, first arrow.RecordBatch, mem *pqwrite.Alloc) (*fileWriter, error) {
			return s.newFile(ctx, unawareGroup, first, mem)
		},
		Write:  (*fileWriter).write,
		Size:   (*fileWriter).size,
		Target: s.p.cfg.targetFileSize,
		Finish: s.finish,
		Abort:  func(w *fileWriter) { w.pf.Abort() },
	}.Run(ctx, n, in)
}
