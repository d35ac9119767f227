package server

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/flightgw/flightgw/handlers"
	"github.com/flightgw/flightgw/internal/flightframe"
)

// A query result is the gateway's largest output. Written the usual way
// (flight.Writer), each batch is copied twice before the socket: its IPC
// body into the writer's buffer, then that FlightData message into a
// gRPC buffer by protobuf. The DoGet of query tickets instead encodes each
// FlightData message itself: the field headers and IPC metadata in a
// buffer of gRPC's pool, followed by the batch's own Arrow buffers, which
// gRPC then sends as they are (frameCodec). The only copy left is gRPC's
// own, into its write buffer. A batch relayed from an upstream Flight
// server (flightframe.Relayer: a flightsql catalog's pushed query) is
// sent as the very buffers gRPC received it in, not encoded at all.
// Every other message goes through protobuf as before.

const (
	fieldDataHeader = flightframe.FieldDataHeader
	fieldDataBody   = flightframe.FieldDataBody
)

// encodedFrame is a FlightData message already encoded; frameCodec hands
// its buffers to gRPC, which frees them once sent.
type encodedFrame struct{ data mem.BufferSlice }

// frameCodec is the server's codec: protobuf for every message but an
// encodedFrame. A received message that does not decode is not reported
// to gRPC, which would answer Internal before any interceptor sees it:
// it is reset and kept in bad, where the interceptors find it and answer
// InvalidArgument (guardStreams, rejectMalformed).
type frameCodec struct {
	proto encoding.CodecV2
	bad   *badMessages
}

func newFrameCodec(bad *badMessages) frameCodec {
	return frameCodec{proto: encoding.GetCodecV2("proto"), bad: bad}
}

func (c frameCodec) Marshal(v any) (mem.BufferSlice, error) {
	if f, ok := v.(*encodedFrame); ok {
		return f.data, nil
	}
	return c.proto.Marshal(v)
}

// Unmarshal decodes with protobuf, but for the FlightData of an upload:
// protobuf would copy its IPC body out of the message bytes (after gRPC
// copied them into one buffer), which costs an ingest a second copy and
// twice the garbage; the fields here alias that one buffer instead.
// A message that does not decode is kept for the interceptor to answer
// InvalidArgument (badMessages), not gRPC's Internal.
func (c frameCodec) Unmarshal(data mem.BufferSlice, v any) error {
	if fd, ok := v.(*flight.FlightData); ok {
		if flightframe.Decode(flightframe.Materialize(data), fd) {
			return nil
		}
		fd.Reset()
	}
	err := c.proto.Unmarshal(data, v)
	if m, ok := v.(proto.Message); ok && err != nil && c.bad != nil {
		proto.Reset(m)
		c.bad.m.Store(m, err)
		return nil
	}
	return err
}

// badMessages are the received messages that did not decode, until an
// interceptor takes them.
type badMessages struct{ m sync.Map }

// take returns why m did not decode, or nil, and forgets it.
func (b *badMessages) take(m any) error {
	if b == nil {
		return nil
	}
	if err, ok := b.m.LoadAndDelete(m); ok {
		return err.(error)
	}
	return nil
}

func (c frameCodec) Name() string { return c.proto.Name() }

// frameWriter is an ipc.PayloadWriter that sends each payload as one
// FlightData message: the protobuf field headers and the IPC metadata in a
// pooled gRPC buffer, then the body's buffers themselves, without a copy.
// gRPC holds them until they are on the wire, so the batch they belong to
// is retained until gRPC frees the last of them (see heldBatch).
type frameWriter struct {
	stream flight.FlightService_DoGetServer
	pool   mem.BufferPool
	// rec is the batch being written (nil for the schema message); the
	// payload's body buffers are its memory, or the IPC writer's own (Go
	// heap, kept by the references alone).
	rec arrow.RecordBatch
	// drop is how many payloads to drop unsent (a schema already sent).
	drop int
}

func (w *frameWriter) Start() error { return nil }
func (w *frameWriter) Close() error { return nil }

// counter is an io.Writer that only counts.
type counter int

func (c *counter) Write(p []byte) (int, error) {
	*c += counter(len(p))
	return len(p), nil
}

// heldBatch is the gRPC BufferPool of a frame's body buffers: gRPC "puts"
// each back once it is sent (or the stream is gone), and the batch is
// released with the last one.
type heldBatch struct {
	refs atomic.Int32
	rec  arrow.RecordBatch
}

func (h *heldBatch) Get(n int) *[]byte {
	b := make([]byte, n)
	return &b
}

func (h *heldBatch) Put(*[]byte) {
	if h.refs.Add(-1) == 0 && h.rec != nil {
		h.rec.Release()
	}
}

// segments is an io.Writer that makes the body of a frame: each large
// write (a body buffer) becomes a gRPC buffer referencing it, and small
// ones (padding, short buffers) are gathered in a copy between them.
type segments struct {
	out   mem.BufferSlice
	small []byte
	held  *heldBatch
}

func (s *segments) Write(p []byte) (int, error) {
	if mem.IsBelowBufferPoolingThreshold(len(p)) {
		s.small = append(s.small, p...)
		return len(p), nil
	}
	s.flush()
	ref := p[:len(p):len(p)]
	s.held.refs.Add(1)
	s.out = append(s.out, mem.NewBuffer(&ref, s.held))
	return len(p), nil
}

func (s *segments) flush() {
	if len(s.small) > 0 {
		s.out = append(s.out, mem.SliceBuffer(s.small))
		s.small = nil
	}
}

func (w *frameWriter) WritePayload(p ipc.Payload) error {
	if w.drop > 0 {
		w.drop--
		return nil
	}
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
		size += protowire.SizeTag(fieldDataBody) + protowire.SizeVarint(uint64(body))
	}
	buf := w.pool.Get(size)
	out := (*buf)[:0]
	out = protowire.AppendTag(out, fieldDataHeader, protowire.BytesType)
	out = protowire.AppendBytes(out, header)
	if body > 0 {
		out = protowire.AppendTag(out, fieldDataBody, protowire.BytesType)
		out = protowire.AppendVarint(out, uint64(body))
	}
	if len(out) != size {
		w.pool.Put(buf)
		return fmt.Errorf("server: FlightData frame head of %d bytes, %d planned", len(out), size)
	}
	*buf = out
	frame := mem.BufferSlice{mem.NewBuffer(buf, w.pool)}
	if body == 0 {
		return w.stream.SendMsg(&encodedFrame{data: frame})
	}
	// One reference for this call, dropped after SendMsg: the batch is
	// released here when gRPC already sent (or dropped) every buffer.
	held := &heldBatch{rec: w.rec}
	held.refs.Store(1)
	if w.rec != nil {
		w.rec.Retain()
	}
	defer held.Put(nil)
	segs := segments{out: frame, held: held}
	if err := p.SerializeBody(&segs); err != nil {
		segs.out.Free()
		return err
	}
	segs.flush()
	if n := segs.out.Len(); n != size+int(body) {
		segs.out.Free()
		return fmt.Errorf("server: FlightData frame of %d bytes, %d planned", n, size+int(body))
	}
	return w.stream.SendMsg(&encodedFrame{data: segs.out})
}

// queryService serves DoGet of query tickets with frameWriter, and every
// other call as the Flight SQL server does.
type queryService struct {
	handshakeService
	h *handlers.Handler
	// ipc are the IPC writer's options of every result:
	// engine.result_compression; codec is its body compression, that of
	// the relayed batches sent on as received.
	ipc   []ipc.Option
	codec flightframe.Compression
	// idle returns the idle Go heap before a stream (idleheap.go).
	idle *idleHeap
}

// resultCompressions are the values of engine.result_compression and the
// IPC writer options they give. An empty value is none.
var resultCompressions = map[string][]ipc.Option{
	"": nil, "none": nil,
	// The compressed bodies from Go's allocator, which frameWriter keeps
	// alive by reference alone (the process's DefaultAllocator reuses the
	// buffers a reallocation gives up: internal/pqwrite/growalloc.go).
	"lz4":  {ipc.WithLZ4(), ipc.WithAllocator(memory.NewGoAllocator())},
	"zstd": {ipc.WithZstd(), ipc.WithAllocator(memory.NewGoAllocator())},
}

func (s queryService) DoGet(t *flight.Ticket, stream flight.FlightService_DoGetServer) error {
	tkt, err := flightsql.GetStatementQueryTicket(t)
	if err != nil {
		// Not a query ticket: a metadata command, a prepared statement.
		return s.handshakeService.DoGet(t, stream)
	}
	s.idle.release()
	schema, chunks, err := s.h.DoGetStatement(stream.Context(), tkt)
	if err != nil {
		return err
	}
	return writeChunks(stream, schema, chunks, s.codec, s.ipc...)
}

// resultCodecs are the body compressions of engine.result_compression.
var resultCodecs = map[string]flightframe.Compression{"": flightframe.None, "none": flightframe.None,
	"lz4": flightframe.LZ4, "zstd": flightframe.Zstd}

// DoPut checks the upload's first messages (putStream) before the Flight
// SQL server reads them.
func (s queryService) DoPut(stream flight.FlightService_DoPutServer) error {
	return s.handshakeService.DoPut(&putStream{FlightService_DoPutServer: stream})
}

// writeChunks writes a result's schema and batches as Flight IPC frames,
// with the IPC writer's options opts (compression, whose body
// compression is codec). A relayed batch (flightframe.Relayer, a record
// batch message an upstream sent) compressed as codec says is sent on as
// the bytes received; any other is encoded. It releases every batch it
// receives, and drains the rest on error.
func writeChunks(stream flight.FlightService_DoGetServer, schema *arrow.Schema, chunks <-chan flight.StreamChunk,
	codec flightframe.Compression, opts ...ipc.Option) error {
	defer func() {
		for c := range chunks {
			if c.Data != nil {
				c.Data.Release()
			}
		}
	}()
	fw := &frameWriter{stream: stream, pool: mem.DefaultBufferPool()}
	opts = append(opts[:len(opts):len(opts)], ipc.WithSchema(schema))
	// The schema goes first, from a writer of its own: a relayed batch
	// may come before the writer writes anything, and the writer then
	// writes it again as its first message, which fw drops.
	if err := ipc.NewWriterWithPayloadWriter(fw, opts...).Close(); err != nil {
		return err
	}
	fw.drop = 1
	wr := ipc.NewWriterWithPayloadWriter(fw, opts...)
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
			if err := writeChunk(stream, wr, fw, c.Data, codec); err != nil {
				return err
			}
		}
	}
}

// writeChunk sends one batch, as received when it is a relayed one
// compressed as codec, else encoded by wr; it releases the batch.
func writeChunk(stream flight.FlightService_DoGetServer, wr *ipc.Writer, fw *frameWriter, b arrow.RecordBatch, codec flightframe.Compression) error {
	defer b.Release()
	if r, ok := b.(flightframe.Relayer); ok {
		if f := r.Frame(); f.Relayable(codec) {
			return stream.SendMsg(&encodedFrame{data: f.Relay()})
		}
		if err := r.Decode(); err != nil {
			return status.Errorf(codes.Internal, "a batch relayed from an upstream does not decode: %v", err)
		}
	}
	fw.rec = b
	err := wr.Write(b)
	fw.rec = nil
	return err
}
