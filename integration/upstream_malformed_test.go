package integration

import (
	"context"
	"encoding/binary"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	fsql "github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql/example"
	flatbuffers "github.com/google/flatbuffers/go"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// corruptingServer is a Flight server (arrow-go's SQLite example) whose
// DoGet streams pass through corrupt, which may change the first record
// batch message of each: the schema is the one announced, the batch is
// not what its header says.
type corruptingServer struct {
	flight.FlightServer
	corrupt atomic.Pointer[func(fd *flight.FlightData)]
}

func (s *corruptingServer) DoGet(tkt *flight.Ticket, stream flight.FlightService_DoGetServer) error {
	return s.FlightServer.DoGet(tkt, &corruptingStream{FlightService_DoGetServer: stream, corrupt: s.corrupt.Load()})
}

type corruptingStream struct {
	flight.FlightService_DoGetServer
	corrupt *func(fd *flight.FlightData)
	done    bool
}

func (s *corruptingStream) Send(fd *flight.FlightData) error {
	if s.corrupt != nil && !s.done {
		if _, ok := recordBatchHeader(fd.DataHeader); ok {
			s.done = true
			fd.DataHeader = append([]byte(nil), fd.DataHeader...)
			fd.DataBody = append([]byte(nil), fd.DataBody...)
			(*s.corrupt)(fd)
		}
	}
	return s.FlightService_DoGetServer.Send(fd)
}

// recordBatchHeader is the RecordBatch table of an IPC Message
// flatbuffer that holds one.
func recordBatchHeader(b []byte) (flatbuffers.Table, bool) {
	var msg, rb flatbuffers.Table
	if len(b) < 8 {
		return rb, false
	}
	msg.Bytes, msg.Pos = b, flatbuffers.GetUOffsetT(b)
	o := flatbuffers.UOffsetT(msg.Offset(6)) // header_type
	if o == 0 || msg.GetByte(o+msg.Pos) != 3 {
		return rb, false
	}
	msg.Union(&rb, flatbuffers.UOffsetT(msg.Offset(8)))
	return rb, true
}

// vectorAt is where the i-th 16-byte struct of rb's vector at slot lies
// (FieldNode {length, null_count}, Buffer {offset, length}).
func vectorAt(rb flatbuffers.Table, slot flatbuffers.VOffsetT, i int) int {
	return int(rb.Vector(flatbuffers.UOffsetT(rb.Offset(slot)))) + 16*i
}

// TestUpstreamMalformedBatch: an upstream whose schema matches the plan
// but whose record batch lies (a body cut short, rows its buffers do not
// hold, a buffer past the body, string offsets past the data) fails the
// client's read with FailedPrecondition naming the catalog and the
// malformed batch: the gateway checks each batch's header against its
// body and the schema before relaying it (or decoding it), instead of
// sending on a batch the client's reader would turn into arrays reading
// past their memory. The gateway neither panics nor hangs, and serves the
// next query.
func TestUpstreamMalformedBatch(t *testing.T) {
	requireEngine(t)
	db, err := example.CreateDB()
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	mustExec(t, db, `CREATE TABLE t (id INTEGER, s TEXT)`)
	mustExec(t, db, `WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 100) INSERT INTO t SELECT x, 'row ' || x FROM c`)
	inner, err := example.NewSQLiteFlightSQLServer(db)
	if err != nil {
		t.Fatal(err)
	}
	up := &corruptingServer{FlightServer: fsql.NewFlightServer(inner)}
	gw := startLiteGateway(t, up)
	client := gw.flightClient(t)
	const q = `SELECT * FROM lite.main.t`
	read := func() (int64, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		info, err := client.Execute(ctx, q)
		if err != nil {
			return 0, err
		}
		rd, err := client.DoGet(ctx, info.Endpoint[0].Ticket)
		if err != nil {
			return 0, err
		}
		defer rd.Release()
		var n int64
		for rd.Next() {
			n += rd.RecordBatch().NumRows()
		}
		if ctx.Err() != nil {
			t.Fatalf("the read hung: %v", ctx.Err())
		}
		return n, rd.Err()
	}
	if n, err := read(); err != nil || n != 100 {
		t.Fatalf("before any corruption: %d rows, %v", n, err)
	}
	// Columns id (int64) and s (utf8): nodes 0 and 1; buffers 0-1 id's
	// validity and values, 2-4 s's validity, offsets and data.
	for _, c := range []struct {
		name    string
		corrupt func(fd *flight.FlightData)
	}{
		{"body cut short", func(fd *flight.FlightData) { fd.DataBody = fd.DataBody[:len(fd.DataBody)/2] }},
		{"more rows than the buffers hold", func(fd *flight.FlightData) {
			rb, _ := recordBatchHeader(fd.DataHeader)
			rows := rb.GetInt64(rb.Pos + flatbuffers.UOffsetT(rb.Offset(4)))
			rb.MutateInt64(rb.Pos+flatbuffers.UOffsetT(rb.Offset(4)), rows*1000)
			for i := range 2 {
				rb.MutateInt64(flatbuffers.UOffsetT(vectorAt(rb, 6, i)), rows*1000)
			}
		}},
		{"a buffer past the body", func(fd *flight.FlightData) {
			rb, _ := recordBatchHeader(fd.DataHeader)
			rb.MutateInt64(flatbuffers.UOffsetT(vectorAt(rb, 8, 1)), int64(len(fd.DataBody)))
		}},
		{"string offsets past the data", func(fd *flight.FlightData) {
			rb, _ := recordBatchHeader(fd.DataHeader)
			rows := rb.GetInt64(rb.Pos + flatbuffers.UOffsetT(rb.Offset(4)))
			off := rb.GetInt64(flatbuffers.UOffsetT(vectorAt(rb, 8, 3)))
			binary.LittleEndian.PutUint32(fd.DataBody[off+4*rows:], 1<<30)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			up.corrupt.Store(&c.corrupt)
			n, err := read()
			up.corrupt.Store(nil)
			if status.Code(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), "malformed record batch") || !strings.Contains(err.Error(), `catalog "lite"`) {
				t.Fatalf("read %d rows, error %v; want FailedPrecondition naming the catalog and the malformed record batch", n, err)
			}
			if n, err := read(); err != nil || n != 100 {
				t.Fatalf("the next query: %d rows, %v", n, err)
			}
		})
	}
}
