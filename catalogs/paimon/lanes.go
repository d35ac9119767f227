package paimon

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"

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

// sendLane hands rec to the lanes (pqwrite.SendTo), opening them at the
// first batch.
func (s *stream) sendLane(ctx context.Context, rec arrow.RecordBatch) error {
	return pqwrite.StreamErr(s.st.ident, pqwrite.SendTo(ctx, &s.lanes, pqwrite.LaneCount(maxLanes), laneSpread, s.lane, rec))
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
