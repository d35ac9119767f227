package integration

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	pb "github.com/apache/arrow-go/v18/arrow/flight/gen/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
)

func ingestOpts(table string, ifNotExist flightsql.TableDefinitionOptionsTableNotExistOption,
	ifExists flightsql.TableDefinitionOptionsTableExistsOption) *flightsql.ExecuteIngestOpts {
	return &flightsql.ExecuteIngestOpts{
		Table:                  table,
		TableDefinitionOptions: &flightsql.TableDefinitionOptions{IfNotExist: ifNotExist, IfExists: ifExists},
	}
}

var (
	modeAppend = func(table string) *flightsql.ExecuteIngestOpts {
		return ingestOpts(table, flightsql.TableDefinitionOptionsTableNotExistOptionFail, flightsql.TableDefinitionOptionsTableExistsOptionAppend)
	}
	modeCreate = func(table string) *flightsql.ExecuteIngestOpts {
		return ingestOpts(table, flightsql.TableDefinitionOptionsTableNotExistOptionCreate, flightsql.TableDefinitionOptionsTableExistsOptionFail)
	}
)

func reader(t *testing.T, recs ...arrow.RecordBatch) array.RecordReader {
	t.Helper()
	r, err := array.NewRecordReader(recs[0].Schema(), recs)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// assertStatus checks a gRPC error's code and that its message names want.
func assertStatus(t *testing.T, err error, code codes.Code, want string) {
	t.Helper()
	s, _ := status.FromError(err)
	if s.Code() != code {
		t.Fatalf("code = %v (%v), want %v", s.Code(), err, code)
	}
	if !containsFold(s.Message(), want) {
		t.Fatalf("message %q does not name %q", s.Message(), want)
	}
}

func TestIngestBadInput(t *testing.T) {
	g := startGateway(t, "")
	c := g.flightClient(t)
	ctx := context.Background()

	strict := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "score", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	}, nil)
	seed := batchFromJSON(t, strict, func(i int) string { return `{"id": 1, "name": "a", "score": 1.5}` }, 1)
	if _, err := c.ExecuteIngest(ctx, reader(t, seed), modeCreate("strict")); err != nil {
		t.Fatal(err)
	}
	files := g.parquetFiles(t)

	mk := func(fields []arrow.Field, row string) arrow.RecordBatch {
		return batchFromJSON(t, arrow.NewSchema(fields, nil), func(int) string { return row }, 2)
	}
	idF := arrow.Field{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true}
	nameF := arrow.Field{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true}
	scoreF := arrow.Field{Name: "score", Type: arrow.PrimitiveTypes.Float64, Nullable: true}

	cases := []struct {
		name string
		rec  arrow.RecordBatch
		opts *flightsql.ExecuteIngestOpts
		code codes.Code
		want string
	}{
		{"missing column", mk([]arrow.Field{idF, nameF}, `{"id": 2, "name": "b"}`), modeAppend("strict"), codes.InvalidArgument, "score"},
		{"extra column", mk([]arrow.Field{idF, nameF, scoreF, {Name: "surprise", Type: arrow.PrimitiveTypes.Int32, Nullable: true}},
			`{"id": 2, "name": "b", "score": 1, "surprise": 3}`), modeAppend("strict"), codes.InvalidArgument, "surprise"},
		{"mistyped column", mk([]arrow.Field{idF, {Name: "name", Type: arrow.FixedWidthTypes.Boolean, Nullable: true}, scoreF},
			`{"id": 2, "name": true, "score": 1}`), modeAppend("strict"), codes.InvalidArgument, "name"},
		{"null in required column", mk([]arrow.Field{idF, nameF, scoreF}, `{"id": null, "name": "b", "score": 1}`),
			modeAppend("strict"), codes.InvalidArgument, "id"},
		{"unknown table", seed, modeAppend("nope"), codes.NotFound, "nope"},
		{"create existing", seed, modeCreate("strict"), codes.AlreadyExists, "strict"},
		{"unknown catalog", seed, func() *flightsql.ExecuteIngestOpts {
			o := modeCreate("x")
			cat := "warehouse9"
			o.Catalog = &cat
			return o
		}(), codes.NotFound, "warehouse9"},
		{"unknown schema", seed, func() *flightsql.ExecuteIngestOpts {
			o := modeAppend("strict")
			s := "ghost"
			o.Schema = &s
			return o
		}(), codes.NotFound, "ghost"},
		{"temporary", seed, func() *flightsql.ExecuteIngestOpts {
			o := modeCreate("tmp")
			o.Temporary = true
			return o
		}(), codes.Unimplemented, "temporary"},
		{"type the format cannot hold", mk([]arrow.Field{idF, {Name: "span", Type: arrow.FixedWidthTypes.MonthDayNanoInterval, Nullable: true}},
			`{"id": 1, "span": {"months": 1, "days": 2, "nanoseconds": 3}}`), modeCreate("intervals"), codes.InvalidArgument, "span"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.ExecuteIngest(ctx, reader(t, tc.rec), tc.opts)
			assertStatus(t, err, tc.code, tc.want)
		})
	}
	if got := int64Column(t, g.readTable(t, "strict"), "id"); !slices.Equal(got, []int64{1}) {
		t.Fatalf("table changed by rejected ingests: %v", got)
	}
	if after := g.parquetFiles(t); !slices.Equal(after, files) {
		t.Fatalf("rejected ingests left files:\nbefore %v\nafter  %v", files, after)
	}
}

// ingestDescriptor is the FlightDescriptor of a CommandStatementIngest.
func ingestDescriptor(t *testing.T, table string) *flight.FlightDescriptor {
	t.Helper()
	cmd := &pb.CommandStatementIngest{Table: table, TableDefinitionOptions: &pb.CommandStatementIngest_TableDefinitionOptions{
		IfNotExist: pb.CommandStatementIngest_TableDefinitionOptions_TABLE_NOT_EXIST_OPTION_FAIL,
		IfExists:   pb.CommandStatementIngest_TableDefinitionOptions_TABLE_EXISTS_OPTION_APPEND}}
	var a anypb.Any
	if err := a.MarshalFrom(cmd); err != nil {
		t.Fatal(err)
	}
	b, err := proto.Marshal(&a)
	if err != nil {
		t.Fatal(err)
	}
	return &flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: b}
}

func TestMalformedAndAbandonedStreams(t *testing.T) {
	g := startGateway(t, "")
	c := g.flightClient(t)
	ctx := context.Background()
	if _, err := c.ExecuteIngest(ctx, reader(t, people(t, 0, 1)), modeCreate("streams")); err != nil {
		t.Fatal(err)
	}
	files := g.parquetFiles(t)

	t.Run("malformed IPC", func(t *testing.T) {
		stream, w := openUpload(t, ctx, c, "streams")
		if err := w.Write(people(t, 10, 3)); err != nil {
			t.Fatal(err)
		}
		// A record batch message whose header is garbage.
		if err := stream.Send(&flight.FlightData{DataHeader: []byte{0xde, 0xad, 0xbe, 0xef, 1, 2, 3}, DataBody: []byte("xx")}); err != nil {
			t.Fatal(err)
		}
		stream.CloseSend()
		assertStatus(t, lastError(stream), codes.InvalidArgument, "streams")
	})

	t.Run("truncated body", func(t *testing.T) {
		stream, err := c.Client.DoPut(ctx)
		if err != nil {
			t.Fatal(err)
		}
		// Capture a valid batch message and cut its body short.
		var msgs []*flight.FlightData
		cap := &captureStream{out: &msgs}
		w := flight.NewRecordWriter(cap, ipc.WithSchema(peopleSchema))
		w.SetFlightDescriptor(ingestDescriptor(t, "streams"))
		w.Write(people(t, 20, 50))
		msgs[1].DataBody = msgs[1].DataBody[:len(msgs[1].DataBody)/3]
		for _, m := range msgs {
			stream.Send(m)
		}
		stream.CloseSend()
		if err := lastError(stream); status.Code(err) != codes.InvalidArgument {
			t.Fatalf("truncated body: %v", err)
		}
	})

	t.Run("client disconnects mid-stream", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		_, w := openUpload(t, cctx, c, "streams")
		for i := range 5 {
			if err := w.Write(people(t, 100+i*100, 100)); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(100 * time.Millisecond) // let the gateway stage what it got
		cancel()
		if !eventually(t, 10*time.Second, func() bool { return strings.Contains(g.logs.String(), "code=Canceled") }) {
			t.Fatalf("gateway did not see the cancellation:\n%s", g.logs.String())
		}
	})

	if got := int64Column(t, g.readTable(t, "streams"), "id"); !slices.Equal(got, []int64{0}) {
		t.Fatalf("table changed: %v", got)
	}
	if !eventually(t, 10*time.Second, func() bool { return slices.Equal(g.parquetFiles(t), files) }) {
		t.Fatalf("staged files left behind:\nbefore %v\nafter  %v", files, g.parquetFiles(t))
	}
}

// openUpload starts a raw DoPut of a CommandStatementIngest (append) into
// table and returns the stream and an IPC writer on it.
func openUpload(t *testing.T, ctx context.Context, c *flightsql.Client, table string) (flight.FlightService_DoPutClient, *flight.Writer) {
	t.Helper()
	stream, err := c.Client.DoPut(ctx)
	if err != nil {
		t.Fatal(err)
	}
	w := flight.NewRecordWriter(stream, ipc.WithSchema(peopleSchema))
	w.SetFlightDescriptor(ingestDescriptor(t, table))
	return stream, w
}

// lastError drains the server's replies and returns the error that ends
// them.
func lastError(stream flight.FlightService_DoPutClient) error {
	for {
		if _, err := stream.Recv(); err != nil {
			return err
		}
	}
}

// captureStream records what a RecordWriter sends.
type captureStream struct {
	flight.FlightService_DoPutClient
	out *[]*flight.FlightData
}

func (c *captureStream) Send(d *flight.FlightData) error {
	*c.out = append(*c.out, proto.Clone(d).(*flight.FlightData))
	return nil
}

func endTransaction(t *testing.T, c *flightsql.Client, id []byte, action pb.ActionEndTransactionRequest_EndTransaction) error {
	t.Helper()
	var a anypb.Any
	if err := a.MarshalFrom(&pb.ActionEndTransactionRequest{TransactionId: id, Action: action}); err != nil {
		t.Fatal(err)
	}
	body, _ := proto.Marshal(&a)
	stream, err := c.Client.DoAction(context.Background(), &flight.Action{Type: flightsql.EndTransactionActionType, Body: body})
	if err != nil {
		return err
	}
	for {
		if _, err := stream.Recv(); err != nil {
			if err.Error() == "EOF" {
				return nil
			}
			return err
		}
	}
}

func TestEndTransactionErrors(t *testing.T) {
	g := startGateway(t, "")
	c := g.flightClient(t)
	ctx := context.Background()
	tx, err := c.BeginTransaction(ctx)
	if err != nil {
		t.Fatal(err)
	}
	commit := pb.ActionEndTransactionRequest_END_TRANSACTION_COMMIT
	assertStatus(t, endTransaction(t, c, []byte("0123456789abcdef0123456789abcdef"), commit), codes.NotFound, "transaction")
	assertStatus(t, endTransaction(t, c, nil, commit), codes.InvalidArgument, "transaction_id")
	assertStatus(t, endTransaction(t, c, tx.ID(), pb.ActionEndTransactionRequest_END_TRANSACTION_UNSPECIFIED), codes.InvalidArgument, "COMMIT or ROLLBACK")
	id := append([]byte(nil), tx.ID()...)
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	// COMMIT repeated (a client that lost the reply) succeeds again;
	// ROLLBACK of a committed transaction is refused.
	if err := endTransaction(t, c, id, commit); err != nil {
		t.Fatalf("repeated COMMIT: %v", err)
	}
	assertStatus(t, endTransaction(t, c, id, pb.ActionEndTransactionRequest_END_TRANSACTION_ROLLBACK), codes.FailedPrecondition, "already committed")

	// An explicit transaction id on the ingest command. (The table is
	// created first: once tx2 is open, an ingest from this connection
	// without a transaction id would join it.)
	if _, err := c.ExecuteIngest(ctx, reader(t, people(t, 0, 2)), modeCreate("explicit")); err != nil {
		t.Fatal(err)
	}
	tx2, _ := c.BeginTransaction(ctx)
	_, err = tx2.BeginSavepoint(ctx, "sp")
	assertStatus(t, err, codes.Unimplemented, "savepoint")
	o := modeAppend("explicit")
	o.TransactionId = tx2.ID()
	if _, err := c.ExecuteIngest(ctx, reader(t, people(t, 5, 3)), o); err != nil {
		t.Fatal(err)
	}
	if got := rows(g.readTable(t, "explicit")); got != 2 {
		t.Fatalf("uncommitted rows visible: %d", got)
	}
	if err := tx2.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if got := rows(g.readTable(t, "explicit")); got != 5 {
		t.Fatalf("after commit: %d", got)
	}
	o.TransactionId = []byte("not-a-transaction")
	_, err = c.ExecuteIngest(ctx, reader(t, people(t, 9, 1)), o)
	assertStatus(t, err, codes.NotFound, "transaction")
}

func TestShutdownDiscardsUnfinishedUploads(t *testing.T) {
	g := startGateway(t, "timeouts: {shutdown_grace: 1s}\n")
	c := g.flightClient(t)
	ctx := context.Background()
	if _, err := c.ExecuteIngest(ctx, reader(t, people(t, 0, 1)), modeCreate("draining")); err != nil {
		t.Fatal(err)
	}
	files := g.parquetFiles(t)

	// An upload that never ends: a few batches, then silence.
	_, w := openUpload(t, ctx, c, "draining")
	for i := range 3 {
		if err := w.Write(people(t, 100+i*1000, 1000)); err != nil {
			t.Fatal(err)
		}
	}
	// A transaction with staged files, never ended.
	tx, err := c.BeginTransaction(ctx)
	if err != nil {
		t.Fatal(err)
	}
	o := modeAppend("draining")
	o.TransactionId = tx.ID()
	if _, err := c.ExecuteIngest(ctx, reader(t, people(t, 50, 5)), o); err != nil {
		t.Fatal(err)
	}

	g.shutdown() // waits out the grace period, then cancels the upload
	if got := int64Column(t, g.readTable(t, "draining"), "id"); !slices.Equal(got, []int64{0}) {
		t.Fatalf("unfinished work became visible: %v", got)
	}
	if after := g.parquetFiles(t); !slices.Equal(after, files) {
		t.Fatalf("shutdown left staged files:\nbefore %v\nafter  %v", files, after)
	}
	if !strings.Contains(g.logs.String(), "shutdown grace period over") {
		t.Fatalf("the upload did not hold the shutdown for the grace period:\n%s", g.logs.String())
	}
	// The shutdown said what it waited for.
	if !strings.Contains(g.logs.String(), `msg="shutdown waits for calls in flight" calls=1 methods="DoPut×1`) {
		t.Fatalf("the shutdown did not name the upload it waited for:\n%s", g.logs.String())
	}
}
