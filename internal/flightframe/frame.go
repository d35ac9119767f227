package flightframe

import (
	"fmt"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow/flight"
	flatbuffers "github.com/google/flatbuffers/go"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// Frame is a received FlightData message kept in the buffers gRPC read
// it into, not gathered nor decoded: a result relayed from another
// Flight server is sent on as these same bytes (Relay), and decoded only
// when something reads its columns. Its IPC header (a few hundred bytes)
// is copied out and read for the message's type, rows and compression.
type Frame struct {
	refs atomic.Int32
	data mem.BufferSlice
	// header is the data_header field (the IPC Message flatbuffer).
	header []byte
	// plain: the message holds data_header and data_body and nothing
	// else (no descriptor, no app_metadata), so it can go on as it is.
	plain bool
	// Read from header; kind is 0 when it does not read as a Message.
	kind  MessageKind
	rows  int64
	codec Compression
	// body is where the data_body field's bytes lie in data.
	bodyOff, bodyLen int
	// The record batch's field nodes and buffers (Message.fbs), for
	// Layout.Check: where each vector starts in header, and its length;
	// variadic is set when it has variadic buffer counts (views).
	nodesAt, buffersAt uint32
	nodes, buffers     int
	variadic           bool
}

// MessageKind is the IPC message a FlightData carries (Message.fbs).
type MessageKind byte

// The IPC message headers (MessageHeader in Message.fbs).
const (
	KindSchema          MessageKind = 1
	KindDictionaryBatch MessageKind = 2
	KindRecordBatch     MessageKind = 3
)

// Compression is a record batch's body compression: None, or the IPC
// CompressionType (LZ4_FRAME 0, ZSTD 1).
type Compression int

// The body compressions.
const (
	None Compression = -1
	LZ4  Compression = 0
	Zstd Compression = 1
)

// Kind is the IPC message the frame carries (0: unknown).
func (f *Frame) Kind() MessageKind { return f.kind }

// Rows is a record batch's row count.
func (f *Frame) Rows() int64 { return f.rows }

// Relayable reports whether the frame is a record batch that can be sent
// on as it is by a writer whose batches are compressed with c.
func (f *Frame) Relayable(c Compression) bool {
	return f.plain && f.kind == KindRecordBatch && f.codec == c
}

// Retain adds a reference.
func (f *Frame) Retain() { f.refs.Add(1) }

// Release drops a reference; the last gives the buffers back to gRPC.
func (f *Frame) Release() {
	if f.refs.Add(-1) == 0 {
		f.data.Free()
		f.data = nil
	}
}

// Relay returns the message's bytes with a reference of their own, for
// a gRPC codec's Marshal: gRPC frees them once written.
func (f *Frame) Relay() mem.BufferSlice {
	f.data.Ref()
	return f.data
}

// Decoded is the message as a FlightData, its fields aliasing one copy.
func (f *Frame) Decoded() (*flight.FlightData, error) {
	b := Materialize(f.data)
	fd := &flight.FlightData{}
	if Decode(b, fd) {
		return fd, nil
	}
	fd.Reset()
	return fd, proto.Unmarshal(b, fd)
}

// parse reads the frame's fields out of data, which it keeps with a
// reference of its own. A message that does not read as a FlightData
// is an error, as protobuf's codec says.
func (f *Frame) parse(data mem.BufferSlice) error {
	total := data.Len()
	var head [2 * binaryVarintMax]byte
	var sawHeader, sawOther bool
	for off := 0; off < total; {
		n := copyAt(data, off, head[:])
		num, typ, tn := protowire.ConsumeTag(head[:n])
		if tn < 0 || typ != protowire.BytesType {
			return f.malformed(data)
		}
		l, ln := protowire.ConsumeVarint(head[tn:n])
		start := off + tn + ln
		if ln < 0 || l > uint64(total-start) {
			return f.malformed(data)
		}
		switch num {
		case FieldDataHeader:
			if sawHeader {
				sawOther = true // protobuf keeps the last; relay none
			}
			sawHeader = true
			f.header = make([]byte, l)
			copyAt(data, start, f.header)
		case FieldDataBody:
			f.bodyOff, f.bodyLen = start, int(l)
		default:
			sawOther = true
		}
		off = start + int(l)
	}
	f.plain = sawHeader && !sawOther
	f.readHeader()
	data.Ref()
	f.data = data
	f.refs.Store(1)
	return nil
}

const binaryVarintMax = 10

func (f *Frame) malformed(data mem.BufferSlice) error {
	err := proto.Unmarshal(Materialize(data), &flight.FlightData{})
	if err == nil {
		err = fmt.Errorf("flightframe: a FlightData message that does not parse")
	}
	return err
}

// readHeader reads the kind, rows and compression from the IPC Message
// flatbuffer, and where a record batch's field nodes and buffers lie:
// Message {version, header_type, header, bodyLength}, RecordBatch
// {length, nodes, buffers, compression, variadicBufferCounts},
// BodyCompression {codec}. The flatbuffers package does not check
// offsets: a header that does not read (or whose vectors run past it)
// leaves the frame unknown (kind 0), never relayed; the IPC reader that
// decodes it then says what is wrong.
func (f *Frame) readHeader() {
	f.kind, f.rows, f.codec = 0, 0, None
	defer func() {
		if recover() != nil {
			f.kind, f.rows, f.codec = 0, 0, None
		}
	}()
	b := f.header
	if len(b) < 8 {
		return
	}
	var msg flatbuffers.Table
	msg.Bytes, msg.Pos = b, flatbuffers.GetUOffsetT(b)
	kind := MessageKind(0)
	if o := flatbuffers.UOffsetT(msg.Offset(6)); o != 0 {
		kind = MessageKind(msg.GetByte(o + msg.Pos))
	}
	if kind != KindRecordBatch {
		f.kind = kind
		return
	}
	o := flatbuffers.UOffsetT(msg.Offset(8))
	if o == 0 {
		return
	}
	var rb flatbuffers.Table
	msg.Union(&rb, o)
	rows := int64(0)
	if o := flatbuffers.UOffsetT(rb.Offset(4)); o != 0 {
		rows = rb.GetInt64(o + rb.Pos)
	}
	nodesAt, nodes, ok1 := vector(&rb, 6, fieldNodeSize)
	buffersAt, buffers, ok2 := vector(&rb, 8, bufferSize)
	if !ok1 || !ok2 {
		return
	}
	codec := None
	if o := flatbuffers.UOffsetT(rb.Offset(10)); o != 0 {
		var bc flatbuffers.Table
		bc.Bytes, bc.Pos = rb.Bytes, rb.Indirect(o+rb.Pos)
		codec = LZ4
		if o := flatbuffers.UOffsetT(bc.Offset(4)); o != 0 {
			codec = Compression(int8(bc.GetByte(o + bc.Pos)))
		}
	}
	if rows < 0 || (codec != LZ4 && codec != Zstd && codec != None) {
		return
	}
	f.kind, f.rows, f.codec = kind, rows, codec
	f.nodesAt, f.nodes, f.buffersAt, f.buffers = nodesAt, nodes, buffersAt, buffers
	// An empty vector of variadic counts (which some writers may send)
	// is none.
	_, variadic, ok := vector(&rb, 12, 8)
	f.variadic = !ok || variadic > 0
}

// The sizes of the FieldNode {length, null_count} and Buffer {offset,
// length} structs.
const (
	fieldNodeSize = 16
	bufferSize    = 16
)

// vector is where the vector of structs of size elem in t's field at
// slot starts, and its length; ok is false when it does not lie within
// the flatbuffer (flatbuffers does not check).
func vector(t *flatbuffers.Table, slot flatbuffers.VOffsetT, elem int) (at uint32, n int, ok bool) {
	o := flatbuffers.UOffsetT(t.Offset(slot))
	if o == 0 {
		return 0, 0, true
	}
	start, n := t.Vector(o), t.VectorLen(o)
	if n < 0 || uint64(start)+uint64(n)*uint64(elem) > uint64(len(t.Bytes)) {
		return 0, 0, false
	}
	return uint32(start), n, true
}

// copyAt copies data's bytes from off into dst, as many as there are,
// and returns how many.
func copyAt(data mem.BufferSlice, off int, dst []byte) int {
	n := 0
	for _, b := range data {
		d := b.ReadOnlyData()
		if off >= len(d) {
			off -= len(d)
			continue
		}
		n += copy(dst[n:], d[off:])
		off = 0
		if n == len(dst) {
			break
		}
	}
	return n
}
