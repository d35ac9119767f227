package server

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/flightgw/flightgw/handlers"
)

// What a DoPut's bytes must be before arrow-go's Flight SQL server and
// IPC reader see them. That server dereferences the first message's
// FlightDescriptor without a check, its reader decodes a delayed schema
// message outside its panic recovery, and the IPC reader builds a batch
// without checking that the buffers hold what the batch claims, so a
// backend writing it reads past them. Each is checked here first and is
// InvalidArgument.

// putStream checks a DoPut's first message (it names the command) and
// its schema message (it decodes).
type putStream struct {
	flight.FlightService_DoPutServer
	received   int
	schemaSeen bool
}

func (p *putStream) Recv() (*flight.FlightData, error) {
	fd, err := p.FlightService_DoPutServer.Recv()
	if err != nil {
		if p.received == 0 && errors.Is(err, io.EOF) {
			// What ADBC's Flight SQL drivers send for an ingest of zero
			// batches: arrow-go's client writes the command and the schema
			// with the first batch, so the table cannot even be named.
			return nil, status.Error(codes.InvalidArgument, "DoPut: the stream ended before its first message, so it named no command "+
				"and no schema; an ADBC ingest of a table with no batches sends nothing (arrow-go's Flight SQL client sends the "+
				"schema with the first batch): to create an empty table, ingest a reader holding one batch of zero rows")
		}
		return nil, err
	}
	p.received++
	if p.received == 1 && fd.GetFlightDescriptor() == nil {
		return nil, status.Error(codes.InvalidArgument, "DoPut: the first message carries no FlightDescriptor (the Flight SQL command)")
	}
	if !p.schemaSeen && len(fd.GetDataHeader()) > 0 {
		p.schemaSeen = true
		if err := checkSchemaMessage(fd.GetDataHeader()); err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "DoPut: the first Arrow IPC message is not a valid schema message: %v", err)
		}
	}
	return fd, nil
}

// checkSchemaMessage decodes header as an IPC schema message, inside the
// IPC reader's own panic recovery (an eager schema read).
func checkSchemaMessage(header []byte) error {
	rdr, err := ipc.NewReaderFromMessageReader(&oneMessage{header: header})
	if err != nil {
		return err
	}
	rdr.Release()
	return nil
}

// oneMessage is an ipc.MessageReader of a single message, built when it is
// read (building it can panic on garbage, and is recovered there).
type oneMessage struct {
	header []byte
	done   bool
	msg    *ipc.Message
}

func (o *oneMessage) Message() (*ipc.Message, error) {
	if o.done {
		return nil, io.EOF
	}
	o.done = true
	o.msg = ipc.NewMessage(memory.NewBufferBytes(o.header), memory.NewBufferBytes(nil))
	return o.msg, nil
}

func (o *oneMessage) Retain() {}

func (o *oneMessage) Release() {
	if o.msg != nil {
		o.msg.Release()
		o.msg = nil
	}
}

// checkedHandler is the Flight SQL server's view of the handler: every
// upload's reader checks each batch before the handler sees it.
type checkedHandler struct {
	*handlers.Handler
}

func (h checkedHandler) DoPutCommandStatementIngest(ctx context.Context, cmd flightsql.StatementIngest, rdr flight.MessageReader) (int64, error) {
	return h.Handler.DoPutCommandStatementIngest(ctx, cmd, &checkedReader{MessageReader: rdr})
}

func (h checkedHandler) DoPutPreparedStatementQuery(ctx context.Context, cmd flightsql.PreparedStatementQuery, rdr flight.MessageReader,
	w flight.MetadataWriter) ([]byte, error) {
	return h.Handler.DoPutPreparedStatementQuery(ctx, cmd, &checkedReader{MessageReader: rdr}, w)
}

func (h checkedHandler) DoPutPreparedStatementUpdate(ctx context.Context, cmd flightsql.PreparedStatementUpdate, rdr flight.MessageReader) (int64, error) {
	return h.Handler.DoPutPreparedStatementUpdate(ctx, cmd, &checkedReader{MessageReader: rdr})
}

// checkedReader ends the stream with InvalidArgument at the first batch
// whose buffers do not hold what it claims.
type checkedReader struct {
	flight.MessageReader
	err error
}

func (r *checkedReader) Next() bool {
	if r.err != nil || !r.MessageReader.Next() {
		return false
	}
	if err := checkBatch(r.MessageReader.RecordBatch()); err != nil {
		r.err = status.Errorf(codes.InvalidArgument, "malformed record batch: %v", err)
		return false
	}
	return true
}

func (r *checkedReader) Read() (arrow.RecordBatch, error) {
	if !r.Next() {
		if err := r.Err(); err != nil {
			return nil, err
		}
		return nil, io.EOF
	}
	return r.MessageReader.RecordBatch(), nil
}

func (r *checkedReader) Err() error {
	if r.err != nil {
		return r.err
	}
	return r.MessageReader.Err()
}

// checkBatch checks that every column's buffers hold its values, its
// offsets stay inside its data and its dictionary indices inside its
// dictionary. A panic while checking (arrow-go's validation itself on
// bytes it does not expect) is a malformed batch too.
func checkBatch(b arrow.RecordBatch) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	for i, col := range b.Columns() {
		name := b.Schema().Field(i).Name
		if int64(col.Len()) != b.NumRows() {
			return fmt.Errorf("column %q has %d values for %d rows", name, col.Len(), b.NumRows())
		}
		if err := checkArray(col.Data()); err != nil {
			return fmt.Errorf("column %q: %w", name, err)
		}
	}
	return nil
}

func checkArray(d arrow.ArrayData) error {
	end := d.Offset() + d.Len()
	bufs := d.Buffers()
	if d.Offset() < 0 || d.Len() < 0 {
		return errors.New("negative offset or length")
	}
	if len(bufs) > 0 && bufs[0] != nil && bufs[0].Len() < int(bitutil.BytesForBits(int64(end))) {
		return fmt.Errorf("validity bitmap of %d bytes for %d values", bufs[0].Len(), end)
	}
	if fw, ok := d.DataType().(arrow.FixedWidthDataType); ok && fw.BitWidth() > 0 && len(bufs) > 1 {
		need := int(bitutil.BytesForBits(int64(end) * int64(fw.BitWidth())))
		if end > 0 && (bufs[1] == nil || bufs[1].Len() < need) {
			return fmt.Errorf("data buffer of %d bytes for %d %s values", bufLen(bufs[1]), end, d.DataType())
		}
	}
	arr := array.MakeFromData(d)
	defer arr.Release()
	if len(bufs) == 3 {
		if done, err := checkStrings(arr, bufs[2]); done {
			return err
		}
	}
	if v, ok := arr.(interface{ ValidateFull() error }); ok {
		if err := v.ValidateFull(); err != nil {
			return err
		}
	}
	for i, c := range d.Children() {
		if err := checkArray(c); err != nil {
			return fmt.Errorf("child %d: %w", i, err)
		}
	}
	if dict, ok := arr.(*array.Dictionary); ok {
		if err := checkArray(d.Dictionary()); err != nil {
			return fmt.Errorf("dictionary: %w", err)
		}
		n := dict.Dictionary().Len()
		for i := range dict.Len() {
			if dict.IsValid(i) {
				if j := dict.GetValueIndex(i); j < 0 || j >= n {
					return fmt.Errorf("dictionary index %d at row %d outside the dictionary of %d values", j, i, n)
				}
			}
		}
	}
	return nil
}

// checkStrings checks the layout of a string array (done is false for
// other arrays); that its values are UTF-8 is the write path's to check
// (txn, which names the row of the upload).
func checkStrings(arr arrow.Array, data *memory.Buffer) (done bool, err error) {
	switch a := arr.(type) {
	case *array.String:
		if err := a.Validate(); err != nil {
			return true, err
		}
		return true, checkOffsets(a.ValueOffsets(), bufLen(data))
	case *array.LargeString:
		if err := a.Validate(); err != nil {
			return true, err
		}
		return true, checkOffsets(a.ValueOffsets(), bufLen(data))
	}
	return false, nil
}

// checkOffsets checks that offsets start at or after 0, never decrease
// and end inside a data buffer of size bytes.
func checkOffsets[T int32 | int64](offsets []T, size int) error {
	if len(offsets) == 0 {
		return nil
	}
	if offsets[0] < 0 {
		return fmt.Errorf("offset %d is negative", offsets[0])
	}
	for i := 1; i < len(offsets); i++ {
		if offsets[i] < offsets[i-1] {
			return fmt.Errorf("offsets decrease at index %d: %d < %d", i, offsets[i], offsets[i-1])
		}
	}
	if last := offsets[len(offsets)-1]; int64(last) > int64(size) {
		return fmt.Errorf("offset %d is past the data buffer of %d bytes", last, size)
	}
	return nil
}

func bufLen(b *memory.Buffer) int {
	if b == nil {
		return 0
	}
	return b.Len()
}
