package server

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/flightgw/flightgw/handlers"
)

// A query result is the gateway's largest output. Written the usual way
// (flight.Writer), each batch is copied twice before the socket: its IPC
// body into the writer's buffer, then that FlightData message into a
// gRPC buffer by protobuf. The DoGet of query tickets instead encodes each
// FlightData message itself, the body written once, straight from the
// Arrow buffers into a buffer of gRPC's pool, which gRPC then sends as it
// is (frameCodec). Every other message goes through protobuf as before.

// FlightData field numbers (Flight.proto).
const (
	fieldDataHeader protowire.Number = 2
	fieldDataBody   protowire.Number = 1000
)

// encodedFrame is a FlightData message already encoded; frameCodec hands
// its buffers to gRPC, which frees them once sent.
type encodedFrame struct{ data mem.BufferSlice }

// frameCodec is the server's codec: protobuf for every message but an
// encodedFrame.
type frameCodec struct{ proto encoding.CodecV2 }

func newFrameCodec() frameCodec { return frameCodec{proto: encoding.GetCodecV2("proto")} }

func (c frameCodec) Marshal(v any) (mem.BufferSlice, error) {
	if f, ok := v.(*encodedFrame); ok {
		return f.data, nil
	}
	return c.proto.Marshal(v)
}

func (c frameCodec) Unmarshal(data mem.BufferSlice, v any) error { return c.proto.Unmarshal(data, v) }

func (c frameCodec) Name() string { return c.proto.Name() }

// frameWriter is an ipc.PayloadWriter that sends each payload as one
// FlightData message encoded into a pooled gRPC buffer.
type frameWriter struct {
	stream flight.FlightService_DoGetServer
	pool   mem.BufferPool
}

func (w *frameWriter) Start() error { return nil }
func (w *frameWriter) Close() error { return nil }

// counter is an io.Writer that only counts.
type counter int

func (c *counter) Write(p []byte) (int, error) {
	*c += counter(len(p))
	return len(p), nil
}

// appender is an io.Writer that appends to a slice with room enough.
type appender struct{ b []byte }

func (a *appender) Write(p []byte) (int, error) {
	a.b = append(a.b, p...)
	return len(p), nil
}

func (w *frameWriter) WritePayload(p ipc.Payload) error {
	meta := p.Meta()
	var header []byte
	if meta != nil {
		defer meta.Release()
		header = meta.Bytes()
	}
	var body counter
	if err := p.SerializeBody(&body); err != nil {
		return err
	}
	size := protowire.SizeTag(fieldDataHeader) + protowire.SizeBytes(len(header))
	if body > 0 {
		size += protowire.SizeTag(fieldDataBody) + protowire.SizeBytes(int(body))
	}
	buf := w.pool.Get(size)
	out := (*buf)[:0]
	out = protowire.AppendTag(out, fieldDataHeader, protowire.BytesType)
	out = protowire.AppendBytes(out, header)
	if body > 0 {
		out = protowire.AppendTag(out, fieldDataBody, protowire.BytesType)
		out = protowire.AppendVarint(out, uint64(body))
		a := appender{b: out}
		if err := p.SerializeBody(&a); err != nil {
			w.pool.Put(buf)
			return err
		}
		out = a.b
	}
	if len(out) != size {
		w.pool.Put(buf)
		return fmt.Errorf("server: FlightData frame of %d bytes, %d planned", len(out), size)
	}
	*buf = out
	return w.stream.SendMsg(&encodedFrame{data: mem.BufferSlice{mem.NewBuffer(buf, w.pool)}})
}

// queryService serves DoGet of query tickets with frameWriter, and every
// other call as the Flight SQL server does.
type queryService struct {
	handshakeService
	h *handlers.Handler
}

func (s queryService) DoGet(t *flight.Ticket, stream flight.FlightService_DoGetServer) error {
	tkt, err := flightsql.GetStatementQueryTicket(t)
	if err != nil {
		// Not a query ticket: a metadata command, a prepared statement.
		return s.handshakeService.DoGet(t, stream)
	}
	schema, chunks, err := s.h.DoGetStatement(stream.Context(), tkt)
	if err != nil {
		return err
	}
	return writeChunks(stream, schema, chunks)
}

// writeChunks writes a result's schema and batches as Flight IPC frames.
// It releases every batch it receives, and drains the rest on error.
func writeChunks(stream flight.FlightService_DoGetServer, schema *arrow.Schema, chunks <-chan flight.StreamChunk) error {
	defer func() {
		for c := range chunks {
			if c.Data != nil {
				c.Data.Release()
			}
		}
	}()
	wr := ipc.NewWriterWithPayloadWriter(&frameWriter{stream: stream, pool: mem.DefaultBufferPool()}, ipc.WithSchema(schema))
	defer wr.Close()
	for {
		select {
		case <-stream.Context().Done():
			return stream.Context().Err()
		case c, ok := <-chunks:
			if !ok {
				return nil
			}
			if c.Err != nil {
				return c.Err
			}
			err := wr.Write(c.Data)
			c.Data.Release()
			if err != nil {
				return err
			}
		}
	}
}
