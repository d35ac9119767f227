package iceberg

import (
	"context"
	"fmt"
	"iter"
	"runtime"
	"strconv"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	ice "github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"golang.org/x/sync/errgroup"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/catalogs/lake"
	"github.com/flightgw/flightgw/internal/pqwrite"
)

// The lane writer: the data files of an unpartitioned, unsorted table are
// written here with arrow-go's pqarrow directly, instead of through
// iceberg-go's WriteRecords, for speed. Parquet encoding (zstd above all)
// is the cost of an ingest, and WriteRecords encodes one file at a time on
// one core: here up to maxLanes files are encoded at once, each by its own
// goroutine ("lane") taking the next batch from a shared queue. The first
// lane writes alone until the upload passes laneSpread, so a small upload
// stays one file in its own row order; a larger one spreads over the
// lanes, each lane's file in arrival order. Every file rolls at the target
// file size, like WriteRecords's. What a lane holds is bounded: the batch
// it encodes, one buffered row group of at most laneRowGroupBytes, and the
// page buffers it reuses (pqwrite.Alloc).
//
// The files hold what WriteRecords's hold: the table's Arrow schema with
// field ids, statistics on, the codec and level of the table's
// write.parquet.* properties (zstd level 1 by default, compressed by C
// zstd, internal/pqwrite), dictionary encoding with the cost-based
// fallback to plain (and high-cardinality columns plain from the start,
// pqwrite.PlainColumns).
// Their Iceberg metrics come from the written footer through iceberg-go's
// own FileToDataFile (bounds, null and value counts, column sizes, split
// offsets, the table's metrics modes), plus the NaN counts of float
// columns, counted from the batches as they are written (nan.go), which
// the footer does not carry.

// maxLanes bounds the files one upload encodes at once.
const maxLanes = 4

// defaultZstdLevel is the zstd level when the table sets none.
const defaultZstdLevel = pqwrite.DefaultZstdLevel

// laneCount is the number of lanes: one per core, at most maxLanes.
func laneCount() int { return min(max(runtime.GOMAXPROCS(0), 1), maxLanes) }

// laneSpread is the Arrow size of an upload past which the other lanes
// start: below it one file holds the upload, in its order.
const laneSpread = 16 << 20

// laneRowGroupBytes bounds the row group a lane buffers (its encoded
// size): each lane holds one, so it is smaller than WriteRecords's.
const laneRowGroupBytes = 4 << 20

// useLanes reports whether tbl's files can be written by the lanes: the
// table is unpartitioned and unsorted (WriteRecords fans partitions out
// and sorts batches).
func useLanes(tbl *table.Table) bool {
	return tbl.Spec().IsUnpartitioned() && tbl.Metadata().DefaultSortOrder() == table.UnsortedSortOrderID
}

// laneConfig is what every file of one write shares.
type laneConfig struct {
	fsys     iceio.WriteFileIO
	loc      table.LocationProvider
	props    []parquet.WriterProperty
	target   int64 // file size at which a file rolls
	rgBytes  int64 // buffered row group size at which a row group closes
	nanCols  []nanColumn
	tblProps ice.Properties
}

func (w *fileWriter) laneConfig() (laneConfig, error) {
	fsys, err := fileIO(w.ctx, w.tbl)
	if err != nil {
		return laneConfig{}, err
	}
	loc, err := w.tbl.LocationProvider()
	if err != nil {
		return laneConfig{}, err
	}
	props := w.tbl.Properties()
	wp, err := writerProps(props, w.target)
	if err != nil {
		return laneConfig{}, err
	}
	rg, _ := strconv.ParseInt(props[table.ParquetRowGroupSizeBytesKey], 10, 64)
	if rg <= 0 {
		rg = maxRowGroupBytes
	}
	rg = min(rg, laneRowGroupBytes)
	return laneConfig{fsys: fsys, loc: loc, props: wp,
		target: w.p.cfg.targetFileSize, rgBytes: rg, nanCols: nanColumns(w.target), tblProps: props}, nil
}

// writerProps are the Parquet properties WriteRecords would use for props
// (iceberg-go's table/internal GetWriteProperties), with zstd level 1 when
// props set none.
func writerProps(props ice.Properties, sc *arrow.Schema) ([]parquet.WriterProperty, error) {
	num := func(key string, def int64) int64 {
		if v, err := strconv.ParseInt(props[key], 10, 64); err == nil && v > 0 {
			return v
		}
		return def
	}
	codecs := map[string]compress.Compression{
		"zstd": compress.Codecs.Zstd, "snappy": compress.Codecs.Snappy, "gzip": compress.Codecs.Gzip,
		"uncompressed": compress.Codecs.Uncompressed, "brotli": compress.Codecs.Brotli,
		"lz4": compress.Codecs.Lz4, "lz4raw": compress.Codecs.Lz4Raw,
	}
	name := props.Get(table.ParquetCompressionKey, table.ParquetCompressionDefault)
	codec, ok := codecs[name]
	if !ok {
		return nil, fmt.Errorf("%w: %s %q is not a supported codec", ice.ErrInvalidArgument, table.ParquetCompressionKey, name)
	}
	level := compress.DefaultCompressionLevel
	if codec == compress.Codecs.Zstd {
		level = defaultZstdLevel
	}
	if v, err := strconv.Atoi(props[table.ParquetCompressionLevelKey]); err == nil && v >= 0 {
		level = v
	}
	// Data page v2 unless the table asks for v1, as WriteRecords: v2
	// compresses the values without first copying them behind the levels.
	page := parquet.DataPageV2
	if props[table.ParquetPageVersionKey] == "1" {
		page = parquet.DataPageV1
	}
	opts := []parquet.WriterProperty{
		parquet.WithMaxRowGroupLength(num(table.ParquetRowGroupLimitKey, 1<<20)),
		parquet.WithDataPageSize(num(table.ParquetPageSizeBytesKey, 1<<20)),
		parquet.WithDataPageVersion(page),
		parquet.WithBatchSize(num(table.ParquetPageRowLimitKey, 20000)),
		parquet.WithDictionaryPageSizeLimit(num(table.ParquetDictSizeBytesKey, 2<<20)),
		parquet.WithCompression(codec), parquet.WithCompressionLevel(level),
		parquet.WithDictionaryDefault(props.Get("parquet.enable.dictionary", "true") != "false"),
	}
	// Like iceberg-go (and Iceberg Java): a column whose first page does
	// not shrink under a dictionary falls back to plain encoding.
	base := parquet.NewWriterProperties(opts...)
	psc, err := pqarrow.ToParquet(sc, base, pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		return nil, err
	}
	for i := range psc.NumColumns() {
		opts = append(opts, parquet.WithDictionaryCostFallbackFor(psc.Column(i).Path(), true))
	}
	return opts, nil
}

// runLanes writes batches through the lanes; it returns once every lane
// has stopped, with w.files set to the files they closed (even on error,
// so that cleanup deletes them).
func (w *fileWriter) runLanes(batches iter.Seq2[arrow.RecordBatch, error]) error {
	cfg, err := w.laneConfig()
	if err != nil {
		for b, err := range batches {
			if err == nil {
				b.Release()
			}
			break
		}
		return err
	}
	n := laneCount()
	g, ctx := errgroup.WithContext(w.ctx)
	queue := make(chan arrow.RecordBatch, n)
	files := make([][]ice.DataFile, n)
	var mu sync.Mutex
	started := 0
	start := func() {
		i := started
		started++
		g.Go(func() error {
			return protect(catalogs.ErrInvalidArgument, fmt.Sprintf("table %s: write data files", w.ident), func() error {
				return w.lane(ctx, cfg, i, queue, func(df ice.DataFile) {
					mu.Lock()
					files[i] = append(files[i], df)
					mu.Unlock()
				})
			})
		})
	}
	start()
	var sent int64
	err = func() error {
		defer close(queue)
		for b, err := range batches {
			if err != nil {
				return err
			}
			if started < n && sent >= laneSpread {
				start()
			}
			// Sized before it is sent: once in the queue, the batch is the
			// lane's, which releases it.
			size := pqwrite.BatchBytes(b)
			select {
			case queue <- b:
				sent += size
			case <-ctx.Done():
				b.Release()
				return nil // the lane's error is g's
			}
		}
		return nil
	}()
	if gerr := g.Wait(); err == nil {
		err = gerr
	}
	for _, fs := range files {
		w.files = append(w.files, fs...)
	}
	return err
}

// lane writes the batches it takes from queue into files of its own,
// reporting each file it closes to done. After an error (or once ctx
// ends) it only releases what it takes, so that the sender never blocks.
func (w *fileWriter) lane(ctx context.Context, cfg laneConfig, lane int, queue <-chan arrow.RecordBatch, done func(ice.DataFile)) (err error) {
	var f *laneFile
	mem := pqwrite.NewAlloc()
	defer func() {
		for b := range queue {
			b.Release()
		}
		if f != nil {
			f.abort(cfg.fsys)
		}
	}()
	for seq := 0; ; {
		var b arrow.RecordBatch
		select {
		case b = <-queue:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
		if b == nil {
			break // the queue is closed
		}
		if f == nil {
			name := fmt.Sprintf("%05d-%d-%s-%05d.parquet", lane, lane, w.id, seq)
			seq++
			if f, err = openLaneFile(cfg, mem, w.target, cfg.loc.NewDataLocation(name), b); err != nil {
				b.Release()
				return err
			}
		}
		err = f.write(b)
		b.Release()
		if err != nil {
			return err
		}
		if f.size() >= cfg.target {
			df, err := f.finish(ctx, cfg, w.tbl)
			f = nil
			if err != nil {
				return err
			}
			done(df)
		}
	}
	if f != nil {
		df, err := f.finish(ctx, cfg, w.tbl)
		f = nil
		if err != nil {
			return err
		}
		done(df)
	}
	return nil
}

// laneFile is one data file being written (the floor's lake.ParquetFile),
// with the NaN counts of its float columns.
type laneFile struct {
	path string
	pf   *lake.ParquetFile
	nans nanCounter
}

// nanCounter counts the NaNs of a file's float columns (lake.Observer).
type nanCounter struct {
	cols   []nanColumn
	counts map[int]int64
}

func (n nanCounter) Observe(b arrow.RecordBatch) { countNaNs(n.cols, b, n.counts) }

// openLaneFile creates the file at path for batches like first (which
// decides the columns written without a dictionary, pqwrite.PlainColumns).
func openLaneFile(cfg laneConfig, mem memory.Allocator, sc *arrow.Schema, path string, first arrow.RecordBatch) (*laneFile, error) {
	out, err := cfg.fsys.Create(path)
	if err != nil {
		return nil, err
	}
	f := &laneFile{path: path, nans: nanCounter{cols: cfg.nanCols, counts: map[int]int64{}}}
	f.pf, err = lake.NewParquetFile(out, sc, first, lake.ParquetOptions{Props: cfg.props,
		StoreSchema: true, RowGroupBytes: cfg.rgBytes, Mem: mem}, f.nans)
	if err != nil {
		return nil, err
	}
	return f, nil
}

// write appends b, closing the row group once it reaches its size.
func (f *laneFile) write(b arrow.RecordBatch) error { return f.pf.Write(b) }

// size is the file's encoded size so far.
func (f *laneFile) size() int64 { return f.pf.Size() }

// finish closes the file and returns its DataFile: metrics from the
// footer as iceberg-go reads them, with the NaN counts added.
func (f *laneFile) finish(ctx context.Context, cfg laneConfig, tbl *table.Table) (ice.DataFile, error) {
	if err := f.pf.Close(); err != nil {
		_ = removeFile(cfg.fsys, f.path)
		return nil, err
	}
	df, err := table.FileToDataFile(ctx, cfg.fsys, f.path, tbl.Schema(), tbl.Spec(), table.UnsortedSortOrderID, cfg.tblProps)
	if err != nil {
		return nil, err
	}
	return withNaNCounts(df, tbl.Spec(), f.nans.counts)
}

// abort closes the file and deletes it.
func (f *laneFile) abort(fsys iceio.WriteFileIO) {
	f.pf.Abort()
	_ = removeFile(fsys, f.path)
}

// withNaNCounts returns df with nans as its NaN value counts.
func withNaNCounts(df ice.DataFile, spec ice.PartitionSpec, nans map[int]int64) (ice.DataFile, error) {
	b, err := ice.NewDataFileBuilder(spec, df.ContentType(), df.FilePath(), df.FileFormat(), df.Partition(), nil, nil, df.Count(), df.FileSizeBytes())
	if err != nil {
		return nil, err
	}
	b.ColumnSizes(df.ColumnSizes()).ValueCounts(df.ValueCounts()).NullValueCounts(df.NullValueCounts()).
		NaNValueCounts(nans).SplitOffsets(df.SplitOffsets())
	if lo := df.LowerBoundValues(); len(lo) > 0 {
		b.LowerBoundValues(lo)
	}
	if hi := df.UpperBoundValues(); len(hi) > 0 {
		b.UpperBoundValues(hi)
	}
	return b.Build(), nil
}
