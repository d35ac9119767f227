package flightframe

import (
	"bytes"
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
)

// sink records the FlightData messages a flight.Writer sends, encoded.
type sink struct {
	grpc.ServerStream
	frames [][]byte
	meta   []byte // app_metadata to add to every message
}

func (s *sink) Send(fd *flight.FlightData) error {
	fd.AppMetadata = s.meta
	b, err := proto.Marshal(fd)
	s.frames = append(s.frames, b)
	return err
}

// received is b as gRPC hands it to the codec: in pieces of n bytes.
func received(b []byte, n int) mem.BufferSlice {
	var out mem.BufferSlice
	for len(b) > n {
		out = append(out, mem.SliceBuffer(b[:n]))
		b = b[n:]
	}
	return append(out, mem.SliceBuffer(b))
}

// TestFrame: a message received as a Frame reads as the IPC message it
// carries (kind, rows, body compression), is relayable only when it is a
// record batch holding nothing but its header and body, in the
// compression asked for, goes on as the bytes received, and decodes to
// the batch written; a message that is no FlightData is an error.
func TestFrame(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, schema,
		strings.NewReader(`[{"id": 1, "s": "`+strings.Repeat("x", 3000)+`"}, {"id": 2, "s": null}, {"id": 3, "s": "z"}]`))
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	for _, c := range []struct {
		name  string
		opts  []ipc.Option
		meta  []byte
		codec Compression
		plain bool
	}{
		{"plain", nil, nil, None, true},
		{"lz4", []ipc.Option{ipc.WithLZ4()}, nil, LZ4, true},
		{"zstd", []ipc.Option{ipc.WithZstd()}, nil, Zstd, true},
		{"app metadata", nil, []byte("m"), None, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := &sink{meta: c.meta}
			wr := flight.NewRecordWriter(s, append(c.opts, ipc.WithSchema(schema))...)
			if err := wr.Write(rec); err != nil {
				t.Fatal(err)
			}
			wr.Close()
			codec := NewClientCodec()
			var frames []*Frame
			for _, b := range s.frames {
				f := new(Frame)
				if err := codec.Unmarshal(received(b, 1000), f); err != nil {
					t.Fatal(err)
				}
				defer f.Release()
				frames = append(frames, f)
			}
			if k := frames[0].Kind(); k != KindSchema {
				t.Fatalf("first message: kind %d, want the schema", k)
			}
			f := frames[1]
			if f.Kind() != KindRecordBatch || f.Rows() != 3 || f.codec != c.codec || f.plain != c.plain {
				t.Fatalf("batch: kind %d rows %d compression %d plain %v, want a record batch of 3 rows, %d, %v", f.Kind(), f.Rows(), f.codec, f.plain, c.codec, c.plain)
			}
			for _, want := range []Compression{None, LZ4, Zstd} {
				if got := f.Relayable(want); got != (c.plain && want == c.codec) {
					t.Errorf("relayable in %d: %v", want, got)
				}
			}
			if d := f.Relay(); !bytes.Equal(d.Materialize(), s.frames[1]) {
				t.Error("relayed bytes differ from the received ones")
			} else {
				d.Free()
			}
			fd, err := frames[0].Decoded()
			if err != nil {
				t.Fatal(err)
			}
			f.Retain()
			b := NewBatch(f, NewStream(fd, nil), schema)
			defer b.Release()
			if err := b.Decode(); err != nil {
				t.Fatal(err)
			}
			if b.NumRows() != 3 || !array.RecordEqual(b, rec) {
				t.Errorf("decoded batch differs from the one written")
			}
		})
	}
	if err := NewClientCodec().Unmarshal(mem.BufferSlice{mem.SliceBuffer([]byte{2<<3 | 2, 9, 1})}, new(Frame)); err == nil {
		t.Error("a truncated FlightData read as a Frame")
	}
	// A header that is no IPC message: known as nothing, not relayed.
	junk, _ := proto.Marshal(&flight.FlightData{DataHeader: []byte{0xff, 0xff, 0xff, 0x7f, 1, 2, 3, 4}, DataBody: []byte("b")})
	f := new(Frame)
	if err := NewClientCodec().Unmarshal(mem.BufferSlice{mem.SliceBuffer(junk)}, f); err != nil {
		t.Fatal(err)
	}
	defer f.Release()
	if f.Kind() != 0 || f.Relayable(None) {
		t.Errorf("a junk header: kind %d, relayable %v", f.Kind(), f.Relayable(None))
	}
}

// FuzzFrame: any bytes an upstream sends either fail to read as a Frame
// or read as one whose header is read and checked (Layout.Check) without
// a panic, and decode (or fail to) without one.
func FuzzFrame(f *testing.F) {
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil)
	rec, _, _ := array.RecordFromJSON(memory.DefaultAllocator, schema, strings.NewReader(`[{"id": 1}]`))
	s := &sink{}
	wr := flight.NewRecordWriter(s, ipc.WithSchema(schema), ipc.WithLZ4())
	_ = wr.Write(rec)
	wr.Close()
	rec.Release()
	// And a plain batch of nested and variable-length columns, whose
	// offsets the check reads.
	nested := arrow.NewSchema([]arrow.Field{{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "l", Type: arrow.ListOf(arrow.PrimitiveTypes.Int32)}}, nil)
	rec, _, _ = array.RecordFromJSON(memory.DefaultAllocator, nested, strings.NewReader(`[{"s": "ab", "l": [1, 2]}, {"s": null, "l": []}]`))
	wr = flight.NewRecordWriter(s, ipc.WithSchema(nested))
	_ = wr.Write(rec)
	wr.Close()
	rec.Release()
	for _, b := range s.frames {
		f.Add(b)
	}
	layouts := []*Layout{NewLayout(schema), NewLayout(nested)}
	f.Fuzz(func(t *testing.T, b []byte) {
		fr := new(Frame)
		if NewClientCodec().Unmarshal(received(b, 7), fr) != nil {
			return
		}
		defer fr.Release()
		_ = fr.Relayable(None)
		for _, l := range layouts {
			_ = l.Check(fr)
		}
		_, _ = fr.Decoded()
	})
}
