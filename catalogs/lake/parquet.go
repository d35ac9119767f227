package lake

import (
	"bufio"
	"io"
	"os"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/flightgw/flightgw/internal/pqwrite"
)

// DefaultTargetFileSize is the size at which a lane rolls to a new data
// file (write.target-file-size-bytes) unless the catalog says otherwise.
const DefaultTargetFileSize = 128 << 20

// Observer accumulates what a table format records of a data file's
// columns from the batches written to it: Paimon's minimum, maximum and
// null count of each column, Iceberg's NaN counts (the footer carries the
// rest).
type Observer interface {
	Observe(b arrow.RecordBatch)
}

// ParquetOptions configure one data file.
type ParquetOptions struct {
	// Props are the table format's writer properties (codec and level,
	// page size, decimal encoding...).
	Props []parquet.WriterProperty
	// ArrowProps are its Arrow writer properties (the stored schema).
	ArrowProps []pqarrow.WriterOption
	// RowGroupBytes closes a row group once its encoded size reaches it,
	// so that what an open file buffers stays small.
	RowGroupBytes int64
	// Mem allocates the page buffers (a lane reuses its pqwrite.Alloc).
	Mem memory.Allocator
	// StoreSchema stores the Arrow schema in the footer
	// (pqarrow.WithStoreSchema).
	StoreSchema bool
}

// fileWriter is what writes a ParquetFile's row groups and footer:
// pqwrite.FlatWriter when it writes the schema and properties, pqarrow
// otherwise (arrowFile).
type fileWriter interface {
	Write(b arrow.RecordBatch) error
	RowGroupBytes() int64
	FlushRowGroup() error
	BytesWritten() int64
	Metadata() (*metadata.FileMetaData, error)
	Close() error
}

// arrowFile is pqarrow's writer as a fileWriter.
type arrowFile struct{ fw *pqarrow.FileWriter }

func (a arrowFile) Write(b arrow.RecordBatch) error           { return a.fw.WriteBuffered(b) }
func (a arrowFile) RowGroupBytes() int64                      { return a.fw.RowGroupTotalCompressedBytes() }
func (a arrowFile) FlushRowGroup() error                      { return a.fw.NewBufferedRowGroupChecked() }
func (a arrowFile) BytesWritten() int64                       { return a.fw.TotalBytesWritten() }
func (a arrowFile) Metadata() (*metadata.FileMetaData, error) { return a.fw.FileMetadata() }
func (a arrowFile) Close() error                              { return a.fw.Close() }

// pqarrowOnly, set by FLIGHTGW_PARQUET_WRITER=pqarrow, writes every file
// with pqarrow: the way back should a file from pqwrite.FlatWriter ever
// need it, and the other side of its benchmarks.
var pqarrowOnly = os.Getenv("FLIGHTGW_PARQUET_WRITER") == "pqarrow"

// ParquetFile is one data file being written: the table format's lane
// writes batches to it and rolls to a new file once Size reaches its
// target. High-cardinality columns of the first batch are written without
// a dictionary (pqwrite.PlainColumns).
type ParquetFile struct {
	out  io.WriteCloser
	cnt  pqwrite.CountWriter
	buf  *bufio.Writer
	fw   fileWriter
	rg   int64
	rows int64
	obs  Observer
}

// NewParquetFile starts a file of schema sc on out, for batches like
// first; obs, when set, observes every batch written. On error out is
// closed.
func NewParquetFile(out io.WriteCloser, sc *arrow.Schema, first arrow.RecordBatch, o ParquetOptions, obs Observer) (*ParquetFile, error) {
	f := &ParquetFile{out: out, cnt: pqwrite.CountWriter{W: out}, rg: o.RowGroupBytes, obs: obs}
	mem := o.Mem
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	props := append(append(o.Props[:len(o.Props):len(o.Props)], parquet.WithAllocator(mem)), pqwrite.PlainColumns(first)...)
	aprops := append(o.ArrowProps[:len(o.ArrowProps):len(o.ArrowProps)], pqarrow.WithAllocator(mem))
	if o.StoreSchema {
		aprops = append(aprops, pqarrow.WithStoreSchema())
	}
	// pqarrow writes page headers and pages separately: buffering saves
	// most of the system calls of a local file.
	f.buf = bufio.NewWriterSize(&f.cnt, 1<<20)
	wprops := parquet.NewWriterProperties(props...)
	if len(o.ArrowProps) == 0 && !pqarrowOnly {
		// FlatWriter writes whole column chunks and the footer: no
		// buffer between it and out (it would copy every byte).
		fw, ok, err := pqwrite.NewFlatWriter(sc, &f.cnt, wprops, o.StoreSchema)
		if err != nil {
			_ = out.Close()
			return nil, err
		}
		if ok {
			f.fw = fw
			return f, nil
		}
	}
	fw, err := pqarrow.NewFileWriter(sc, f.buf, wprops, pqarrow.NewArrowWriterProperties(aprops...))
	if err != nil {
		_ = out.Close()
		return nil, err
	}
	f.fw = arrowFile{fw}
	return f, nil
}

// Write appends b, closing the row group once it reaches its size.
func (f *ParquetFile) Write(b arrow.RecordBatch) error { return f.WriteAs(b, b) }

// WriteAs appends b, the on-disk form of rows (Paimon's key-value layout
// of a primary-key table's rows), which the observer sees.
func (f *ParquetFile) WriteAs(b, rows arrow.RecordBatch) error {
	if f.obs != nil {
		f.obs.Observe(rows)
	}
	if err := f.fw.Write(b); err != nil {
		return err
	}
	f.rows += b.NumRows()
	if f.rg > 0 && f.fw.RowGroupBytes() >= f.rg {
		return f.fw.FlushRowGroup()
	}
	return nil
}

// Size is the file's encoded size so far: the row groups written out and
// the open one.
func (f *ParquetFile) Size() int64 {
	return f.fw.BytesWritten() + f.fw.RowGroupBytes()
}

// Metadata is the file's footer, after Close: the row groups and their
// column-chunk statistics, which a table format may take its own file
// statistics from.
func (f *ParquetFile) Metadata() (*metadata.FileMetaData, error) { return f.fw.Metadata() }

// Rows is the number of rows written.
func (f *ParquetFile) Rows() int64 { return f.rows }

// Bytes is what reached out: after Close, the file's size.
func (f *ParquetFile) Bytes() int64 { return f.cnt.N }

// Close writes the footer and closes out: the file is complete.
func (f *ParquetFile) Close() error {
	err := f.fw.Close() // writes the footer into buf
	if err == nil {
		err = f.buf.Flush()
	}
	if cerr := f.out.Close(); err == nil {
		err = cerr
	}
	return err
}

// Abort closes the file without caring whether it is complete; the caller
// deletes it.
func (f *ParquetFile) Abort() {
	_ = f.fw.Close()
	_ = f.out.Close()
}
