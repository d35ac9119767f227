package server

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"

	"github.com/flightgw/flightgw/internal/flightframe"
)

// captureStream records the FlightData messages sent on a DoGet stream,
// encoded: protobuf's encoding of a FlightData, or an encodedFrame's bytes.
// With hold, it keeps an encodedFrame's buffers as gRPC's transport does
// until the bytes are on the wire, and reads them only in release.
type captureStream struct {
	grpc.ServerStream
	frames [][]byte
	hold   bool
	held   []mem.BufferSlice
}

// release reads the held frames and frees them.
func (c *captureStream) release() {
	for _, d := range c.held {
		c.frames = append(c.frames, d.Materialize())
		d.Free()
	}
	c.held = nil
}

func (c *captureStream) Context() context.Context { return context.Background() }

func (c *captureStream) Send(fd *flight.FlightData) error {
	b, err := proto.Marshal(fd)
	c.frames = append(c.frames, b)
	return err
}

func (c *captureStream) SendMsg(m any) error {
	if f, ok := m.(*encodedFrame); ok {
		if c.hold {
			// gRPC frees what SendMsg was given; the transport keeps
			// its own reference until the frame is sent.
			f.data.Ref()
			c.held = append(c.held, f.data)
		} else {
			c.frames = append(c.frames, f.data.Materialize())
		}
		f.data.Free()
		return nil
	}
	return c.Send(m.(*flight.FlightData))
}

// TestFramesMatchProtobuf: the frames writeChunks encodes itself are the
// bytes protobuf gives the FlightData messages flight.Writer sends, for a
// schema, batches with nulls, strings and nothing, and a result without a
// batch.
func TestFramesMatchProtobuf(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "ok", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	}, nil)
	var batches []arrow.RecordBatch
	for _, js := range []string{
		`[{"id": 1, "name": "a", "ok": true}, {"id": 2, "name": null, "ok": null}]`,
		`[]`,
		`[{"id": 3, "name": "` + strings.Repeat("long value ", 300) + `", "ok": false}]`,
	} {
		rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, schema, strings.NewReader(js))
		if err != nil {
			t.Fatal(err)
		}
		defer rec.Release()
		batches = append(batches, rec)
	}
	for _, n := range []int{len(batches), 0} {
		want := &captureStream{}
		wr := flight.NewRecordWriter(want, ipc.WithSchema(schema))
		for _, b := range batches[:n] {
			if err := wr.Write(b); err != nil {
				t.Fatal(err)
			}
		}
		wr.Close()

		got := &captureStream{}
		chunks := make(chan flight.StreamChunk, len(batches))
		for _, b := range batches[:n] {
			b.Retain()
			chunks <- flight.StreamChunk{Data: b}
		}
		close(chunks)
		if err := writeChunks(got, schema, chunks, flightframe.None); err != nil {
			t.Fatal(err)
		}
		if len(got.frames) != len(want.frames) || len(got.frames) != n+1 {
			t.Fatalf("%d batches: %d frames, flight.Writer sends %d", n, len(got.frames), len(want.frames))
		}
		for i := range want.frames {
			if !bytes.Equal(got.frames[i], want.frames[i]) {
				t.Errorf("%d batches: frame %d differs (%d bytes, protobuf %d)", n, i, len(got.frames[i]), len(want.frames[i]))
			}
			var fd flight.FlightData
			if err := proto.Unmarshal(got.frames[i], &fd); err != nil {
				t.Errorf("frame %d does not parse: %v", i, err)
			}
		}
	}
}

// TestFramesHoldBatches: a frame references its batch's buffers instead of
// copying them, so the batch stays allocated until gRPC has freed every
// frame, however early writeChunks releases it, and is released then.
func TestFramesHoldBatches(t *testing.T) {
	alloc := memory.NewCheckedAllocator(memory.NewGoAllocator())
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(alloc, schema)
	for i := range 5000 {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		if i%7 == 0 {
			b.Field(1).AppendNull()
		} else {
			b.Field(1).(*array.StringBuilder).Append(strings.Repeat("v", i%13))
		}
	}
	rec := b.NewRecordBatch()
	b.Release()

	want := &captureStream{}
	wr := flight.NewRecordWriter(want, ipc.WithSchema(schema))
	if err := wr.Write(rec); err != nil {
		t.Fatal(err)
	}
	wr.Close()

	got := &captureStream{hold: true}
	chunks := make(chan flight.StreamChunk, 1)
	chunks <- flight.StreamChunk{Data: rec} // writeChunks releases it
	close(chunks)
	if err := writeChunks(got, schema, chunks, flightframe.None); err != nil {
		t.Fatal(err)
	}
	if alloc.CurrentAlloc() == 0 {
		t.Fatal("the batch was released while gRPC still held its frame")
	}
	got.release()
	alloc.AssertSize(t, 0)
	if len(got.frames) != len(want.frames) {
		t.Fatalf("%d frames, flight.Writer sends %d", len(got.frames), len(want.frames))
	}
	for i := range want.frames {
		if !bytes.Equal(got.frames[i], want.frames[i]) {
			t.Errorf("frame %d differs (%d bytes, protobuf %d)", i, len(got.frames[i]), len(want.frames[i]))
		}
	}
}

// TestUnmarshalFlightData: the aliasing decoder of uploads reads every
// FlightData as protobuf does, and leaves to protobuf what it does not
// know.
func TestUnmarshalFlightData(t *testing.T) {
	c := newFrameCodec(nil)
	desc := &flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: []byte("cmd")}
	for name, fd := range map[string]*flight.FlightData{
		"empty":      {},
		"body":       {DataHeader: []byte{1, 2, 3}, DataBody: bytes.Repeat([]byte{7}, 70000)},
		"everything": {FlightDescriptor: desc, DataHeader: []byte("h"), AppMetadata: []byte("m"), DataBody: []byte("b")},
	} {
		raw, err := proto.Marshal(fd)
		if err != nil {
			t.Fatal(err)
		}
		// An unknown field (number 9, which protobuf keeps) goes to protobuf.
		for _, extra := range [][]byte{nil, {9<<3 | 2, 1, 'x'}} {
			msg := append(append([]byte{}, raw...), extra...)
			want := &flight.FlightData{}
			if err := proto.Unmarshal(msg, want); err != nil {
				t.Fatal(err)
			}
			// In one buffer, and in the 16 KiB pieces gRPC's transport
			// hands a large message in.
			for _, piece := range []int{len(msg) + 1, 16 << 10} {
				var data mem.BufferSlice
				for rest := msg; len(rest) > 0; rest = rest[min(piece, len(rest)):] {
					data = append(data, mem.SliceBuffer(rest[:min(piece, len(rest))]))
				}
				got := &flight.FlightData{}
				if err := c.Unmarshal(data, got); err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if !proto.Equal(got, want) {
					t.Errorf("%s (extra %v, %d buffers): decoded %v, protobuf reads %v", name, extra, len(data), got, want)
				}
			}
		}
	}
	// A truncated message is an error, as protobuf says.
	raw, _ := proto.Marshal(&flight.FlightData{DataBody: []byte("body")})
	if err := c.Unmarshal(mem.BufferSlice{mem.SliceBuffer(raw[:len(raw)-1])}, &flight.FlightData{}); err == nil {
		t.Error("truncated FlightData decoded without error")
	}
}

// frameSource replays captured frames as a DoGet client receives them.
type frameSource struct{ frames [][]byte }

func (f *frameSource) Recv() (*flight.FlightData, error) {
	if len(f.frames) == 0 {
		return nil, io.EOF
	}
	var fd flight.FlightData
	err := proto.Unmarshal(f.frames[0], &fd)
	f.frames = f.frames[1:]
	return &fd, err
}

// TestFramesCompressed: with engine.result_compression lz4 or zstd the
// frames carry compressed bodies, smaller than the plain ones, which a
// Flight reader decodes to the batches written.
func TestFramesCompressed(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "tag", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for i := range 20000 {
		b.Field(0).(*array.Int64Builder).Append(int64(i % 7))
		if i%5 == 0 {
			b.Field(1).AppendNull()
		} else {
			b.Field(1).(*array.StringBuilder).Append("tag-" + strings.Repeat("x", i%9))
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	write := func(codec string) [][]byte {
		opts, ok := resultCompressions[codec]
		if !ok {
			t.Fatalf("no codec %q", codec)
		}
		got := &captureStream{hold: true}
		chunks := make(chan flight.StreamChunk, 1)
		rec.Retain()
		chunks <- flight.StreamChunk{Data: rec}
		close(chunks)
		if err := writeChunks(got, schema, chunks, resultCodecs[codec], opts...); err != nil {
			t.Fatal(err)
		}
		got.release()
		return got.frames
	}
	size := func(frames [][]byte) (n int) {
		for _, f := range frames {
			n += len(f)
		}
		return n
	}
	plain := size(write("none"))
	for _, codec := range []string{"lz4", "zstd"} {
		frames := write(codec)
		if n := size(frames); n*2 > plain {
			t.Errorf("%s: %d bytes of frames, %d plain: not compressed", codec, n, plain)
		}
		rdr, err := flight.NewRecordReader(&frameSource{frames: frames})
		if err != nil {
			t.Fatalf("%s: %v", codec, err)
		}
		var read int
		for rdr.Next() {
			if !array.RecordEqual(rdr.RecordBatch(), rec) {
				t.Errorf("%s: the batch read differs from the one written", codec)
			}
			read++
		}
		if err := rdr.Err(); err != nil || read != 1 {
			t.Errorf("%s: read %d batches, %v", codec, read, err)
		}
		rdr.Release()
	}
}

// relayed is the batches as a flightsql catalog hands them on: each
// frame flight.Writer sent, received in two pieces (as gRPC reads a
// message in HTTP/2 frames) into a flightframe.Frame, its batch a
// flightframe.Batch over the stream's schema message.
func relayed(t *testing.T, frames [][]byte, schema *arrow.Schema) []*flightframe.Batch {
	t.Helper()
	codec := flightframe.NewClientCodec()
	var stream *flightframe.Stream
	var out []*flightframe.Batch
	for i, b := range frames {
		f := new(flightframe.Frame)
		half := len(b) / 2
		data := mem.BufferSlice{mem.SliceBuffer(b[:half]), mem.SliceBuffer(b[half:])}
		if err := codec.Unmarshal(data, f); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			fd, err := f.Decoded()
			if err != nil {
				t.Fatal(err)
			}
			stream = flightframe.NewStream(fd, nil)
			f.Release()
			continue
		}
		out = append(out, flightframe.NewBatch(f, stream, schema))
	}
	return out
}

// TestFramesRelayed: a relayed batch goes out as the very buffers it
// was received in (no copy, no re-encode), the schema once before it,
// mixed with encoded batches in any order; when the result is to be
// compressed otherwise than the batch is, it is decoded and encoded
// again, and reads back the same.
func TestFramesRelayed(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	var batches []arrow.RecordBatch
	for _, js := range []string{`[{"id": 1, "name": "a"}, {"id": 2, "name": null}]`, `[{"id": 3, "name": "` + strings.Repeat("c", 5000) + `"}]`} {
		rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, schema, strings.NewReader(js))
		if err != nil {
			t.Fatal(err)
		}
		defer rec.Release()
		batches = append(batches, rec)
	}
	upstream := &captureStream{}
	wr := flight.NewRecordWriter(upstream, ipc.WithSchema(schema))
	for _, b := range batches {
		if err := wr.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	wr.Close()

	// Relayed first, encoded second; and encoded first, relayed second.
	for _, relayFirst := range []bool{true, false} {
		rb := relayed(t, upstream.frames, schema)
		in := []arrow.RecordBatch{rb[0], batches[1]}
		if !relayFirst {
			rb[0].Release()
			batches[0].Retain()
			in = []arrow.RecordBatch{batches[0], rb[1]}
		} else {
			rb[1].Release()
			batches[1].Retain()
		}
		var sent [][]byte // the buffers each relayed frame was received in
		for _, b := range in {
			if r, ok := b.(*flightframe.Batch); ok {
				d := r.Frame().Relay()
				sent = append(sent, d[0].ReadOnlyData())
				d.Free()
			}
		}
		got := &captureStream{hold: true}
		chunks := make(chan flight.StreamChunk, len(in))
		for _, b := range in {
			chunks <- flight.StreamChunk{Data: b}
		}
		close(chunks)
		if err := writeChunks(got, schema, chunks, flightframe.None); err != nil {
			t.Fatal(err)
		}
		var firsts [][]byte
		for _, d := range got.held {
			firsts = append(firsts, d[0].ReadOnlyData())
		}
		got.release()
		if len(got.frames) != len(upstream.frames) {
			t.Fatalf("relayed first %v: %d frames, want %d", relayFirst, len(got.frames), len(upstream.frames))
		}
		for i := range upstream.frames {
			if !bytes.Equal(got.frames[i], upstream.frames[i]) {
				t.Errorf("relayed first %v: frame %d differs from the upstream's", relayFirst, i)
			}
		}
		relayedAt := 1
		if !relayFirst {
			relayedAt = 2
		}
		if &firsts[relayedAt][0] != &sent[0][0] {
			t.Errorf("relayed first %v: the relayed batch was not sent in the buffers it was received in", relayFirst)
		}
	}

	// Compressed results: the relayed batches are encoded again.
	rb := relayed(t, upstream.frames, schema)
	got := &captureStream{}
	chunks := make(chan flight.StreamChunk, len(rb))
	for _, b := range rb {
		chunks <- flight.StreamChunk{Data: b}
	}
	close(chunks)
	if err := writeChunks(got, schema, chunks, flightframe.Zstd, resultCompressions["zstd"]...); err != nil {
		t.Fatal(err)
	}
	for i := 1; i < len(got.frames); i++ {
		if bytes.Equal(got.frames[i], upstream.frames[i]) {
			t.Errorf("compressed: batch %d sent as received, uncompressed", i-1)
		}
	}
	rd, err := flight.NewRecordReader(&frameSource{frames: got.frames})
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Release()
	for i := 0; rd.Next(); i++ {
		if !array.RecordEqual(rd.RecordBatch(), batches[i]) {
			t.Errorf("compressed: batch %d reads back otherwise", i)
		}
	}
	if err := rd.Err(); err != nil {
		t.Fatal(err)
	}
}
