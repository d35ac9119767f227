package integration

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/ipc"

	"github.com/flightgw/flightgw/auth"
)

// hogUploads keeps n DoPut streams of c open until ctx ends, each
// sending one 1-row batch a second (a slow-loris), and opens a new one
// whenever the gateway cuts one.
func hogUploads(ctx context.Context, c *flightsql.Client, n int, rec arrow.RecordBatch, desc *flight.FlightDescriptor) *sync.WaitGroup {
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			for ctx.Err() == nil {
				stream, err := c.Client.DoPut(ctx)
				if err != nil {
					time.Sleep(100 * time.Millisecond)
					continue
				}
				w := flight.NewRecordWriter(stream, ipc.WithSchema(rec.Schema()))
				w.SetFlightDescriptor(desc)
				for ctx.Err() == nil {
					if err := w.Write(rec); err != nil {
						break
					}
					select {
					case <-ctx.Done():
					case <-time.After(time.Second):
					}
				}
				_ = w.Close()
			}
		})
	}
	return &wg
}

// TestSlowStreamsYieldToWaitingPrincipal: two, then four, principals
// each keep four DoPut streams alive with one row a second (every write
// slot of the default configuration held, and more waiting); another
// principal's ingest starts within a few seconds: the hogs' streams are
// below limits.min_stream_rate and give their slots up to it. Before,
// it waited until its deadline (DeadlineExceeded).
func TestSlowStreamsYieldToWaitingPrincipal(t *testing.T) {
	for _, hogs := range []int{2, 4} {
		t.Run(fmt.Sprintf("%d hogs", hogs), func(t *testing.T) {
			var users strings.Builder
			for i := range hogs {
				h, _ := auth.HashPassword("hog")
				fmt.Fprintf(&users, "    - {name: hog%d, password_hash: %q}\n", i, h)
			}
			h, _ := auth.HashPassword("victim")
			fmt.Fprintf(&users, "    - {name: victim, password_hash: %q}\n", h)
			g := startGateway(t, "auth:\n  enabled: true\n  users:\n"+users.String())
			cv, vctx := login(t, g, "victim", "victim")
			for _, tbl := range []string{"hogged", "wanted"} {
				if _, err := cv.ExecuteIngest(vctx, reader(t, people(t, 0, 1)), modeCreate(tbl)); err != nil {
					t.Fatal(err)
				}
			}
			row := people(t, 1, 1)
			desc := ingestDescriptor(t, "hogged")
			var all []*sync.WaitGroup
			var stops []context.CancelFunc
			for i := range hogs {
				c, ctx := login(t, g, fmt.Sprintf("hog%d", i), "hog")
				hctx, stop := context.WithCancel(ctx)
				stops = append(stops, stop)
				all = append(all, hogUploads(hctx, c, 4, row, desc))
			}
			defer func() {
				for _, stop := range stops {
					stop()
				}
				for _, wg := range all {
					wg.Wait()
				}
			}()
			time.Sleep(1500 * time.Millisecond) // the hogs hold every slot
			ctx, cancel := context.WithTimeout(vctx, 15*time.Second)
			defer cancel()
			start := time.Now()
			if _, err := cv.ExecuteIngest(ctx, reader(t, people(t, 2, 1)), modeAppend("wanted")); err != nil {
				t.Fatalf("the victim's ingest with %d hogs: %v", hogs, err)
			}
			took := time.Since(start)
			t.Logf("%d hogs: the victim's ingest took %s", hogs, took)
			if took > 8*time.Second {
				t.Errorf("the victim's ingest took %s with %d hogs, want a few seconds", took, hogs)
			}
		})
	}
}

// TestParallelUploadsAllLand: one client with 16 parallel uploads on the
// default configuration (8 write slots, 4 per principal): every append
// lands, none is refused; the streams over the share wait their turn.
// Before, 12 of the 16 were refused at once.
func TestParallelUploadsAllLand(t *testing.T) {
	g := startGateway(t, "")
	c := g.flightClient(t)
	ctx := context.Background()
	if _, err := c.ExecuteIngest(ctx, reader(t, people(t, 0, 1)), modeCreate("many")); err != nil {
		t.Fatal(err)
	}
	const clients, appends, rows = 16, 5, 100
	var wg sync.WaitGroup
	var failed atomic.Int64
	for i := range clients {
		recs := make([]arrow.RecordBatch, appends)
		for j := range recs {
			recs[j] = people(t, 1+(i*appends+j)*rows, rows)
		}
		wg.Go(func() {
			for _, rec := range recs {
				if _, err := c.ExecuteIngest(ctx, reader(t, rec), modeAppend("many")); err != nil {
					failed.Add(1)
					t.Errorf("upload %d: %v", i, err)
				}
			}
		})
	}
	wg.Wait()
	if n := failed.Load(); n > 0 {
		t.Fatalf("%d of %d appends failed", n, clients*appends)
	}
	if got := len(int64Column(t, g.readTable(t, "many"), "id")); got != 1+clients*appends*rows {
		t.Fatalf("table has %d rows, want %d", got, 1+clients*appends*rows)
	}
}

// TestParallelQueriesAllServed: one client reading 16 query results in
// parallel on the default configuration (16 query slots, 8 per
// principal): all are served, none refused. Before, the DoGets over the
// share were refused at once.
func TestParallelQueriesAllServed(t *testing.T) {
	requireEngine(t)
	g := startGateway(t, "")
	c := g.flightClient(t)
	ctx := context.Background()
	const queries, rows = 16, 2_000_000
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range queries {
		wg.Go(func() {
			<-start
			info, err := c.Execute(ctx, fmt.Sprintf("SELECT i FROM range(%d) t(i)", rows))
			if err != nil {
				t.Errorf("query %d: %v", i, err)
				return
			}
			rdr, err := c.DoGet(ctx, info.Endpoint[0].Ticket)
			if err != nil {
				t.Errorf("query %d: DoGet: %v", i, err)
				return
			}
			defer rdr.Release()
			n := 0
			for rdr.Next() {
				n += int(rdr.RecordBatch().NumRows())
			}
			if err := rdr.Err(); err != nil || n != rows {
				t.Errorf("query %d: %d rows, %v", i, n, err)
			}
		})
	}
	close(start)
	wg.Wait()
}
