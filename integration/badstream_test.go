package integration

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// rawCodec sends []byte messages as they are and decodes replies as
// protobuf, so that a test can put bytes on the wire that no Flight
// client would (a FlightData that is not a protobuf message).
type rawCodec struct{}

func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	if b, ok := v.([]byte); ok {
		return mem.BufferSlice{mem.SliceBuffer(b)}, nil
	}
	b, err := proto.Marshal(v.(proto.Message))
	return mem.BufferSlice{mem.SliceBuffer(b)}, err
}

func (rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	return proto.Unmarshal(data.Materialize(), v.(proto.Message))
}

func (rawCodec) Name() string { return "proto" }

// rawCall opens method on the gateway, sends msgs (each a []byte or a
// proto.Message), half-closes, and returns the status the call ends with.
func rawCall(t *testing.T, conn *grpc.ClientConn, method string, msgs ...any) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := conn.NewStream(ctx, &grpc.StreamDesc{ClientStreams: true, ServerStreams: true}, method, grpc.ForceCodecV2(rawCodec{}))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		if err := cs.SendMsg(m); err != nil {
			if errors.Is(err, io.EOF) {
				break // the server ended the call: its status follows
			}
			t.Fatal(err)
		}
	}
	_ = cs.CloseSend()
	for {
		var reply flight.FlightData
		if err := cs.RecvMsg(&reply); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

// TestMalformedFrames sends garbage where every stream expects a Flight
// message: each is InvalidArgument, and none reaches the panic recovery
// (the harness fails a test whose gateway logged a recovered panic).
func TestMalformedFrames(t *testing.T) {
	g := startGateway(t, "")
	c := g.flightClient(t)
	ctx := context.Background()
	if _, err := c.ExecuteIngest(ctx, reader(t, people(t, 0, 1)), modeCreate("frames")); err != nil {
		t.Fatal(err)
	}
	conn, err := grpc.NewClient(g.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()

	// A valid upload's messages: schema (with the descriptor), one batch.
	var valid []*flight.FlightData
	w := flight.NewRecordWriter(&captureStream{out: &valid}, ipc.WithSchema(peopleSchema))
	w.SetFlightDescriptor(ingestDescriptor(t, "frames"))
	if err := w.Write(people(t, 10, 20)); err != nil {
		t.Fatal(err)
	}
	schemaMsg, batchMsg := valid[0], valid[1]
	desc := schemaMsg.FlightDescriptor
	garbage := []byte{0xde, 0xad, 0xbe, 0xef, 0xff, 0xff, 0xff, 0x7f, 1, 2, 3, 4, 5, 6, 7, 8}
	notProto := []byte{0xff, 0xff, 0xff, 0xff, 0xff}
	with := func(f func(*flight.FlightData)) *flight.FlightData {
		m := proto.Clone(schemaMsg).(*flight.FlightData)
		f(m)
		return m
	}
	truncated := proto.Clone(batchMsg).(*flight.FlightData)
	truncated.DataBody = truncated.DataBody[:len(truncated.DataBody)/3]

	const (
		doPut    = "/arrow.flight.protocol.FlightService/DoPut"
		doGet    = "/arrow.flight.protocol.FlightService/DoGet"
		doAction = "/arrow.flight.protocol.FlightService/DoAction"
	)
	for _, tc := range []struct {
		name   string
		method string
		msgs   []any
	}{
		{"DoPut not a protobuf message", doPut, []any{notProto}},
		{"DoPut empty first message", doPut, []any{&flight.FlightData{}}},
		{"DoPut no descriptor, garbage header", doPut, []any{&flight.FlightData{DataHeader: garbage}}},
		{"DoPut no descriptor, valid schema", doPut, []any{with(func(m *flight.FlightData) { m.FlightDescriptor = nil })}},
		{"DoPut garbage descriptor command", doPut, []any{with(func(m *flight.FlightData) { m.FlightDescriptor.Cmd = garbage })}},
		{"DoPut path descriptor", doPut, []any{with(func(m *flight.FlightData) {
			m.FlightDescriptor = &flight.FlightDescriptor{Type: flight.DescriptorPATH, Path: []string{"frames"}}
		})}},
		{"DoPut garbage schema message", doPut, []any{with(func(m *flight.FlightData) { m.DataHeader = garbage })}},
		{"DoPut batch where the schema belongs", doPut, []any{with(func(m *flight.FlightData) { m.DataHeader = batchMsg.DataHeader })}},
		{"DoPut descriptor only, garbage next", doPut, []any{&flight.FlightData{FlightDescriptor: desc}, &flight.FlightData{DataHeader: garbage}}},
		{"DoPut garbage batch message", doPut, []any{schemaMsg, &flight.FlightData{DataHeader: garbage, DataBody: garbage}}},
		{"DoPut truncated batch", doPut, []any{schemaMsg, truncated}},
		{"DoPut batch not a protobuf message", doPut, []any{schemaMsg, notProto}},
		{"DoPut many garbage batches", doPut, append([]any{schemaMsg}, repeat(&flight.FlightData{DataHeader: garbage, DataBody: garbage}, 33)...)},
		{"DoGet not a protobuf message", doGet, []any{notProto}},
		{"DoGet garbage ticket", doGet, []any{&flight.Ticket{Ticket: garbage}}},
		{"DoAction not a protobuf message", doAction, []any{notProto}},
		{"DoAction garbage prepare body", doAction, []any{&flight.Action{Type: "CreatePreparedStatement", Body: garbage}}},
		{"DoAction garbage close body", doAction, []any{&flight.Action{Type: "ClosePreparedStatement", Body: garbage}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := rawCall(t, conn, tc.method, tc.msgs...)
			if status.Code(err) != codes.InvalidArgument {
				t.Errorf("%s: %v, want InvalidArgument", tc.name, err)
			}
		})
	}
	if strings.Contains(g.logs.String(), "panic in handler") {
		t.Errorf("a malformed frame reached the panic recovery")
	}
	if got := int64Column(t, g.readTable(t, "frames"), "id"); len(got) != 1 {
		t.Fatalf("table changed: %v", got)
	}
}

func repeat(m any, n int) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = m
	}
	return out
}

// TestMutatedUploads flips one byte of a valid upload's schema message,
// batch header or batch body, at 33 places each: the upload either still
// makes sense (OK) or is InvalidArgument, never Unavailable or Internal
// (a backend writing a batch whose buffers do not hold what it claims).
func TestMutatedUploads(t *testing.T) {
	g := startGateway(t, "")
	c := g.flightClient(t)
	if _, err := c.ExecuteIngest(context.Background(), reader(t, people(t, 0, 1)), modeCreate("mutated")); err != nil {
		t.Fatal(err)
	}
	conn, err := grpc.NewClient(g.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var valid []*flight.FlightData
	w := flight.NewRecordWriter(&captureStream{out: &valid}, ipc.WithSchema(peopleSchema))
	w.SetFlightDescriptor(ingestDescriptor(t, "mutated"))
	if err := w.Write(people(t, 10, 20)); err != nil {
		t.Fatal(err)
	}
	for _, part := range []string{"schema", "header", "body"} {
		for i := range 33 {
			schema := proto.Clone(valid[0]).(*flight.FlightData)
			batch := proto.Clone(valid[1]).(*flight.FlightData)
			b := map[string][]byte{"schema": schema.DataHeader, "header": batch.DataHeader, "body": batch.DataBody}[part]
			b[i*len(b)/33] ^= 0xff
			err := rawCall(t, conn, "/arrow.flight.protocol.FlightService/DoPut", schema, batch)
			if code := status.Code(err); code != codes.OK && code != codes.InvalidArgument {
				t.Errorf("%s byte %d flipped: %v", part, i*len(b)/33, err)
			}
		}
	}
}
