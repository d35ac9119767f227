package integration

import (
	"bufio"
	"context"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-adbc/go/adbc"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// wideRows builds n rows with ids from..from+n-1 and two payload columns
// (about 40 bytes a row in Arrow).
func wideRows(from, n int) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "x", Type: arrow.PrimitiveTypes.Float64},
		{Name: "tag", Type: arrow.BinaryTypes.String},
	}, nil))
	defer b.Release()
	ids, xs, tags := b.Field(0).(*array.Int64Builder), b.Field(1).(*array.Float64Builder), b.Field(2).(*array.StringBuilder)
	for i := from; i < from+n; i++ {
		ids.Append(int64(i))
		xs.Append(float64(i) / 7)
		tags.Append("tag-" + strconv.Itoa(i%1000))
	}
	return b.NewRecordBatch()
}

// rssBytes is this process's resident set size.
func rssBytes(t *testing.T) int64 {
	t.Helper()
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Skip("no /proc/self/status")
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	t.Skip("no VmRSS")
	return 0
}

// TestLargeResultStreams reads a result of several million rows through
// ADBC while sampling the process's memory (the gateway runs in this
// process): the growth while streaming stays well below the result's
// size, which shows that no layer holds the whole result.
func TestLargeResultStreams(t *testing.T) {
	requireEngine(t)
	const rows, chunk = 5_000_000, 500_000
	// The GC floor off: it lets garbage reach limits.gc_min_heap before a
	// collection, and this measures what is held.
	g := startGateway(t, "engine: {memory_limit: 512MB}\nlimits: {gc_min_heap: -1}\n")
	cnxn := g.adbcConn(t, nil)
	for from := 0; from < rows; from += chunk {
		rec := wideRows(from, chunk)
		mode := adbc.OptionValueIngestModeAppend
		if from == 0 {
			mode = adbc.OptionValueIngestModeCreate
		}
		_, err := ingest(t, cnxn, "big", mode, rec)
		rec.Release()
		if err != nil {
			t.Fatal(err)
		}
	}
	resultBytes := int64(rows) * 40

	stmt, err := cnxn.NewStatement()
	if err != nil {
		t.Fatal(err)
	}
	defer stmt.Close()
	if err := stmt.SetSqlQuery(`SELECT id, x, tag FROM big`); err != nil {
		t.Fatal(err)
	}
	// Return what the ingest freed to the OS, so that growth from here on
	// is new memory, not reused pages; and collect garbage eagerly, so
	// that growth is what is held, not what awaits collection.
	defer debug.SetGCPercent(debug.SetGCPercent(10))
	debug.FreeOSMemory()
	baseline := rssBytes(t)
	var peak atomic.Int64
	peak.Store(baseline)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			if r := rssBytes(t); r > peak.Load() {
				peak.Store(r)
			}
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	rdr, _, err := stmt.ExecuteQuery(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var n, sum int64
	for rdr.Next() {
		b := rdr.RecordBatch()
		n += b.NumRows()
		for _, v := range b.Column(0).(*array.Int64).Int64Values() {
			sum += v
		}
	}
	err = rdr.Err()
	rdr.Release()
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if n != rows || sum != int64(rows)*(rows-1)/2 {
		t.Fatalf("read %d rows, id sum %d", n, sum)
	}
	growth := peak.Load() - baseline
	t.Logf("streamed %d rows (~%d MB as Arrow); RSS %d MB before, peak growth %d MB", n, resultBytes>>20, baseline>>20, growth>>20)
	// The Iceberg scan holds at most its workers' current files decoded
	// (iceberg-go returns batches in file order), here ~15 MB a file.
	if growth > resultBytes*6/10 {
		t.Fatalf("memory grew by %d MB while streaming a %d MB result: something holds it whole", growth>>20, resultBytes>>20)
	}
}
