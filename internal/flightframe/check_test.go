package flightframe

import (
	"encoding/binary"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	flatbuffers "github.com/google/flatbuffers/go"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
)

// keep records copies of the FlightData messages a flight.Writer sends.
type keep struct {
	grpc.ServerStream
	fds []*flight.FlightData
}

func (k *keep) Send(fd *flight.FlightData) error {
	k.fds = append(k.fds, &flight.FlightData{DataHeader: append([]byte(nil), fd.DataHeader...), DataBody: append([]byte(nil), fd.DataBody...)})
	return nil
}

// written is rec as a flight.Writer sends it: the schema message, then
// the batch's.
func written(t *testing.T, rec arrow.RecordBatch, opts ...ipc.Option) []*flight.FlightData {
	t.Helper()
	k := &keep{}
	wr := flight.NewRecordWriter(k, append(opts, ipc.WithSchema(rec.Schema()))...)
	if err := wr.Write(rec); err != nil {
		t.Fatal(err)
	}
	wr.Close()
	return k.fds
}

// frameOf is fd received as a Frame, in pieces of 100 bytes.
func frameOf(t *testing.T, fd *flight.FlightData) *Frame {
	t.Helper()
	b, err := proto.Marshal(fd)
	if err != nil {
		t.Fatal(err)
	}
	f := new(Frame)
	if err := NewClientCodec().Unmarshal(received(b, 100), f); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Release)
	return f
}

// batchTable is the RecordBatch table of fd's header.
func batchTable(fd *flight.FlightData) flatbuffers.Table {
	var msg, rb flatbuffers.Table
	msg.Bytes, msg.Pos = fd.DataHeader, flatbuffers.GetUOffsetT(fd.DataHeader)
	msg.Union(&rb, flatbuffers.UOffsetT(msg.Offset(8)))
	return rb
}

// structAt is where the i-th 16-byte struct of rb's vector at slot is.
func structAt(rb flatbuffers.Table, slot flatbuffers.VOffsetT, i int) flatbuffers.UOffsetT {
	return rb.Vector(flatbuffers.UOffsetT(rb.Offset(slot))) + flatbuffers.UOffsetT(16*i)
}

// TestLayoutCheck: the batches arrow-go's writer writes (every type the
// layout describes, nulls, slices, no rows, compressed) pass the check;
// a batch whose header lies about its body or does not fit the schema
// fails it naming the column; types the layout does not describe have
// none (their batches are decoded, not relayed).
func TestLayoutCheck(t *testing.T) {
	wide := arrow.NewSchema([]arrow.Field{
		{Name: "i", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "b", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "ls", Type: arrow.BinaryTypes.LargeString},
		{Name: "bin", Type: arrow.BinaryTypes.Binary},
		{Name: "l", Type: arrow.ListOf(arrow.PrimitiveTypes.Int32), Nullable: true},
		{Name: "ll", Type: arrow.LargeListOf(arrow.BinaryTypes.String)},
		{Name: "fl", Type: arrow.FixedSizeListOf(2, arrow.PrimitiveTypes.Int16)},
		{Name: "st", Type: arrow.StructOf(arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
			arrow.Field{Name: "z", Type: arrow.BinaryTypes.String}), Nullable: true},
		{Name: "m", Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int64)},
		{Name: "d", Type: &arrow.Decimal128Type{Precision: 10, Scale: 2}},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
		{Name: "dt", Type: arrow.FixedWidthTypes.Date32},
		{Name: "fb", Type: &arrow.FixedSizeBinaryType{ByteWidth: 3}},
	}, nil)
	rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, wide, strings.NewReader(`[
		{"i": 1, "b": true, "s": "one", "ls": "L1", "bin": "AQI=", "l": [1, 2], "ll": ["a"], "fl": [1, 2], "st": {"a": 1, "z": "x"},
		 "m": [{"key": "k", "value": 1}], "d": "1.25", "ts": "2024-01-01T00:00:00Z", "dt": "2024-01-01", "fb": "AQID"},
		{"i": null, "b": null, "s": null, "ls": "", "bin": "", "l": null, "ll": [], "fl": [3, 4], "st": null,
		 "m": [], "d": "-2.50", "ts": "2024-01-02T00:00:00Z", "dt": "2024-01-02", "fb": "BAUG"},
		{"i": 3, "b": false, "s": "`+strings.Repeat("x", 500)+`", "ls": "L3", "bin": "Bw==", "l": [], "ll": ["b", "c"], "fl": [5, 6], "st": {"a": null, "z": ""},
		 "m": [{"key": "k", "value": 2}, {"key": "j", "value": 3}], "d": "0", "ts": "2024-01-03T00:00:00Z", "dt": "2024-01-03", "fb": "BwgJ"}]`))
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	layout := NewLayout(wide)
	if layout == nil {
		t.Fatal("no layout for the wide schema")
	}
	slice := rec.NewSlice(1, 3)
	defer slice.Release()
	empty := rec.NewSlice(0, 0)
	defer empty.Release()
	for _, c := range []struct {
		name string
		rec  arrow.RecordBatch
		opts []ipc.Option
	}{
		{"every type", rec, nil},
		{"a slice", slice, nil},
		{"no rows", empty, nil},
		{"lz4", rec, []ipc.Option{ipc.WithLZ4()}},
		{"zstd, a slice", slice, []ipc.Option{ipc.WithZstd()}},
	} {
		t.Run(c.name, func(t *testing.T) {
			fds := written(t, c.rec, c.opts...)
			if err := layout.Check(frameOf(t, fds[1])); err != nil {
				t.Fatalf("a batch arrow-go wrote: %v", err)
			}
		})
	}

	narrow := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "s", Type: arrow.BinaryTypes.String}}, nil)
	small, _, err := array.RecordFromJSON(memory.DefaultAllocator, narrow, strings.NewReader(`[{"id": 1, "s": "a"}, {"id": 2, "s": "bb"}, {"id": 3, "s": "ccc"}]`))
	if err != nil {
		t.Fatal(err)
	}
	defer small.Release()
	// Buffers: 0-1 id's validity and values, 2-4 s's validity, offsets, data.
	for _, c := range []struct {
		name    string
		layout  *Layout
		corrupt func(fd *flight.FlightData)
		want    string
	}{
		{"body cut short", NewLayout(narrow), func(fd *flight.FlightData) { fd.DataBody = fd.DataBody[:len(fd.DataBody)/2] }, "in a body of"},
		{"rows the buffers do not hold", NewLayout(narrow), func(fd *flight.FlightData) {
			rb := batchTable(fd)
			rb.MutateInt64(rb.Pos+flatbuffers.UOffsetT(rb.Offset(4)), 3000)
			rb.MutateInt64(structAt(rb, 6, 0), 3000)
			rb.MutateInt64(structAt(rb, 6, 1), 3000)
		}, `column "id" has 24 bytes of values, 24000 needed`},
		{"a node of another length than the batch", NewLayout(narrow), func(fd *flight.FlightData) {
			rb := batchTable(fd)
			rb.MutateInt64(structAt(rb, 6, 1), 2)
		}, `column "s" has 2 rows in a batch of 3`},
		{"more nulls than values", NewLayout(narrow), func(fd *flight.FlightData) {
			rb := batchTable(fd)
			rb.MutateInt64(structAt(rb, 6, 0)+8, 4)
		}, "with 4 nulls"},
		{"a buffer past the body", NewLayout(narrow), func(fd *flight.FlightData) {
			rb := batchTable(fd)
			rb.MutateInt64(structAt(rb, 8, 1), int64(len(fd.DataBody)))
		}, `column "id" has a buffer of`},
		{"a negative buffer offset", NewLayout(narrow), func(fd *flight.FlightData) {
			rb := batchTable(fd)
			rb.MutateInt64(structAt(rb, 8, 4), -8)
		}, `column "s" has a buffer of`},
		{"the last offset past the data", NewLayout(narrow), func(fd *flight.FlightData) {
			rb := batchTable(fd)
			off := rb.GetInt64(structAt(rb, 8, 3))
			binary.LittleEndian.PutUint32(fd.DataBody[off+12:], 1000)
		}, "bytes of data, 1000 needed"},
		{"offsets going back", NewLayout(narrow), func(fd *flight.FlightData) {
			rb := batchTable(fd)
			off := rb.GetInt64(structAt(rb, 8, 3))
			binary.LittleEndian.PutUint32(fd.DataBody[off:], 7)
		}, `column "s" has offsets from 7 to 6`},
		{"another schema's batch", NewLayout(wide), func(*flight.FlightData) {}, "2 field nodes and 5 buffers"},
	} {
		t.Run(c.name, func(t *testing.T) {
			fds := written(t, small)
			if err := NewLayout(narrow).Check(frameOf(t, fds[1])); err != nil {
				t.Fatalf("before the corruption: %v", err)
			}
			c.corrupt(fds[1])
			err := c.layout.Check(frameOf(t, fds[1]))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("check: %v, want an error saying %q", err, c.want)
			}
		})
	}

	for _, typ := range []arrow.DataType{
		&arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int8, ValueType: arrow.BinaryTypes.String},
		arrow.BinaryTypes.StringView, arrow.Null,
		arrow.DenseUnionOf([]arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int32}}, []arrow.UnionTypeCode{0}),
		arrow.ListOf(&arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int8, ValueType: arrow.BinaryTypes.String}),
	} {
		if NewLayout(arrow.NewSchema([]arrow.Field{{Name: "c", Type: typ}}, nil)) != nil {
			t.Errorf("a layout for %s", typ)
		}
	}
}

// BenchmarkLayoutCheck: the check of one batch of the upstream bench's
// columns (int64, float64, string, timestamp).
func BenchmarkLayoutCheck(b *testing.B) {
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "x", Type: arrow.PrimitiveTypes.Float64},
		{Name: "tag", Type: arrow.BinaryTypes.String}, {Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond}}}, nil)
	rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, schema, strings.NewReader(`[{"id": 1, "x": 2, "tag": "abcdefghijklmnop", "ts": 5}]`))
	if err != nil {
		b.Fatal(err)
	}
	defer rec.Release()
	k := &keep{}
	wr := flight.NewRecordWriter(k, ipc.WithSchema(schema))
	if err := wr.Write(rec); err != nil {
		b.Fatal(err)
	}
	wr.Close()
	msg, err := proto.Marshal(k.fds[1])
	if err != nil {
		b.Fatal(err)
	}
	f := new(Frame)
	if err := NewClientCodec().Unmarshal(received(msg, 16384), f); err != nil {
		b.Fatal(err)
	}
	defer f.Release()
	l := NewLayout(schema)
	for b.Loop() {
		if err := l.Check(f); err != nil {
			b.Fatal(err)
		}
	}
}
