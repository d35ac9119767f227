package flightframe

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Stream is what the batches of one received stream share: the schema
// message that opened it, to decode a batch with.
type Stream struct {
	schema *flight.FlightData
	mem    memory.Allocator
}

// NewStream returns the stream opened by the schema message schema.
func NewStream(schema *flight.FlightData, mem memory.Allocator) *Stream {
	return &Stream{schema: &flight.FlightData{DataHeader: schema.DataHeader}, mem: mem}
}

// Batch is an arrow.RecordBatch over a received record batch message
// (a Frame) of a stream: a writer that finds one (Relayer) sends the
// frame on as it is, and the columns are decoded from it only when
// something asks for them, then kept.
type Batch struct {
	refs   atomic.Int64
	frame  *Frame
	stream *Stream
	schema *arrow.Schema

	once sync.Once
	rec  arrow.RecordBatch // decoded, or nil
	err  error
}

// Relayer is a batch whose message can be sent on as it is.
type Relayer interface {
	arrow.RecordBatch
	// Frame is the batch's message; it lives as long as the batch.
	Frame() *Frame
	// Decode decodes the columns, or says why they do not decode.
	Decode() error
}

var (
	_ arrow.RecordBatch = (*Batch)(nil)
	_ Relayer           = (*Batch)(nil)
)

// NewBatch is the batch of f, a record batch message of s, typed as
// schema (whose columns' types are s's), holding the reference to f.
func NewBatch(f *Frame, s *Stream, schema *arrow.Schema) *Batch {
	b := &Batch{frame: f, stream: s, schema: schema}
	b.refs.Store(1)
	return b
}

// Frame implements Relayer.
func (b *Batch) Frame() *Frame { return b.frame }

// WithSchema is the same batch typed as schema (the same column types,
// other names or metadata), sharing the frame.
func (b *Batch) WithSchema(schema *arrow.Schema) arrow.RecordBatch {
	b.frame.Retain()
	return NewBatch(b.frame, b.stream, schema)
}

// Decode decodes the batch's columns now, if not done yet; a message
// that does not decode is the error.
func (b *Batch) Decode() error {
	b.once.Do(func() { b.rec, b.err = b.decode() })
	return b.err
}

func (b *Batch) decode() (arrow.RecordBatch, error) {
	fd, err := b.frame.Decoded()
	if err != nil {
		return nil, err
	}
	rd, err := flight.NewRecordReader(&messages{fds: []*flight.FlightData{b.stream.schema, fd}}, ipcAlloc(b.stream.mem)...)
	if err != nil {
		return nil, err
	}
	defer rd.Release()
	if !rd.Next() {
		if err := rd.Err(); err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
		return nil, fmt.Errorf("flightframe: a record batch message with no batch")
	}
	rec := rd.RecordBatch()
	if rec.NumCols() != int64(b.schema.NumFields()) {
		return nil, fmt.Errorf("flightframe: a batch of %d columns in a stream of %d", rec.NumCols(), b.schema.NumFields())
	}
	return array.NewRecordBatch(b.schema, rec.Columns(), rec.NumRows()), nil
}

// decoded is the decoded batch. A batch that does not decode panics, as
// the arrow.RecordBatch methods have no error to return (and as the IPC
// reader's batches do on buffers that lie): a reader that needs the
// columns calls Decode first for the error.
func (b *Batch) decoded() arrow.RecordBatch {
	if err := b.Decode(); err != nil {
		panic(fmt.Sprintf("flightframe: a relayed batch that does not decode: %v", err))
	}
	return b.rec
}

func ipcAlloc(mem memory.Allocator) []ipc.Option {
	if mem == nil {
		return nil
	}
	return []ipc.Option{ipc.WithAllocator(mem)}
}

// messages replays FlightData messages, then io.EOF.
type messages struct{ fds []*flight.FlightData }

func (m *messages) Recv() (*flight.FlightData, error) {
	if len(m.fds) == 0 {
		return nil, io.EOF
	}
	fd := m.fds[0]
	m.fds = m.fds[1:]
	return fd, nil
}

func (b *Batch) Retain() { b.refs.Add(1) }

func (b *Batch) Release() {
	if b.refs.Add(-1) != 0 {
		return
	}
	if b.rec != nil {
		b.rec.Release()
	}
	b.frame.Release()
}

func (b *Batch) Schema() *arrow.Schema { return b.schema }
func (b *Batch) NumRows() int64        { return b.frame.Rows() }
func (b *Batch) NumCols() int64        { return int64(b.schema.NumFields()) }
func (b *Batch) Columns() []arrow.Array {
	return b.decoded().Columns()
}
func (b *Batch) Column(i int) arrow.Array     { return b.decoded().Column(i) }
func (b *Batch) ColumnName(i int) string      { return b.schema.Field(i).Name }
func (b *Batch) MarshalJSON() ([]byte, error) { return b.decoded().MarshalJSON() }
func (b *Batch) SetColumn(i int, col arrow.Array) (arrow.RecordBatch, error) {
	return b.decoded().SetColumn(i, col)
}
func (b *Batch) NewSlice(i, j int64) arrow.RecordBatch { return b.decoded().NewSlice(i, j) }
