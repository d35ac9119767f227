package paimon_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/johannesboyne/gofakes3"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/catalogs/lake"
	"github.com/flightgw/flightgw/catalogs/paimon"
	pcodec "github.com/flightgw/flightgw/codec/paimon"
)

// receiptFiles decodes the DataFileMetas of receipts.
func receiptFiles(t *testing.T, rs []catalogs.WriteReceipt) []pcodec.CommitMessage {
	t.Helper()
	var out []pcodec.CommitMessage
	for _, r := range rs {
		var m struct {
			Version  int    `json:"version"`
			Messages []byte `json:"messages"`
		}
		if err := json.Unmarshal(r.Metadata, &m); err != nil {
			t.Fatal(err)
		}
		ms, err := pcodec.DecodeList(m.Version, m.Messages)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, ms...)
	}
	return out
}

// streamRows writes rows through one stream in batches of batch rows and
// commits them; it returns the stream (closed) and its messages.
func streamRows(t *testing.T, p *paimon.Provider, id catalogs.TableIdent, rows []sampleRow, batch int, commit string) (catalogs.WriteStream, []pcodec.CommitMessage) {
	t.Helper()
	ctx := context.Background()
	ws, err := p.OpenStream(ctx, id, catalogs.WriteTxn{})
	if err != nil {
		t.Fatal(err)
	}
	for len(rows) > 0 {
		n := min(len(rows), batch)
		b := sampleBatch(rows[:n])
		err := ws.Write(ctx, b)
		b.Release()
		if err != nil {
			t.Fatal(err)
		}
		rows = rows[n:]
	}
	rs, err := ws.Close(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.CommitOnce(ctx, id, commit, rs); err != nil {
		t.Fatal(err)
	}
	return ws, receiptFiles(t, rs)
}

// TestPKSpill: a primary-key stream larger than write.buffer-size-bytes
// never buffers more than the bound; it spills sorted level-0 files with
// increasing sequence numbers, and the table holds the last write of each
// key, within one stream (across its spilled files) and across commits.
func TestPKSpill(t *testing.T) {
	const bound = 16 << 10
	p, _ := openLocal(t, map[string]string{paimon.PropWriteBufferSize: fmt.Sprint(bound)})
	ctx := context.Background()
	id := catalogs.TableIdent{Catalog: "lake", Namespace: []string{"default"}, Name: "pk_spill"}
	if _, err := p.CreateTable(ctx, id, sampleSchema, map[string]string{"primary-key": "id", "bucket": "2"}); err != nil {
		t.Fatal(err)
	}
	// Commit 0: 3000 keys, then a second write of 1000 of them; commit 1
	// rewrites 500 more.
	s0 := sample{name: "pk_spill", opts: map[string]string{"primary-key": "id"},
		commits: [][]sampleRow{append(rowsFrom(0, 3000, 0), rowsFrom(1000, 1000, 3)...), rowsFrom(2500, 1000, 1)}}
	ws, msgs := streamRows(t, p, id, s0.commits[0], 100, "c0")
	peak, limit, spills, _ := paimon.StreamBounds(ws)
	if limit != bound || peak == 0 || peak > limit {
		t.Errorf("buffered at most %d bytes with bound %d (want (0, %d])", peak, limit, bound)
	}
	if spills < 4 || len(msgs) != spills+2 {
		t.Errorf("%d spills, %d files: want several spills and one more file per bucket at close", spills, len(msgs))
	}
	// Each bucket's files: sequence numbers increase from file to file,
	// each file sorted (min key <= max key) with one row per key.
	last := map[int32]int64{0: -1, 1: -1}
	var rows int64
	for _, m := range msgs {
		f := m.Data.NewFiles[0]
		if f.MinSequenceNumber != last[m.Bucket]+1 || f.MaxSequenceNumber != f.MinSequenceNumber+f.RowCount-1 {
			t.Errorf("bucket %d file %s: sequence %d..%d after %d", m.Bucket, f.FileName, f.MinSequenceNumber, f.MaxSequenceNumber, last[m.Bucket])
		}
		last[m.Bucket] = f.MaxSequenceNumber
		lo, _ := f.MinKey.BigInt(0)
		hi, _ := f.MaxKey.BigInt(0)
		if lo > hi {
			t.Errorf("file %s: min key %d above max key %d", f.FileName, lo, hi)
		}
		rows += f.RowCount
	}
	if rows < 3000 || rows > 4000 {
		t.Errorf("%d rows in files: want the 3000 keys and at most their 1000 rewrites", rows)
	}
	streamRows(t, p, id, s0.commits[1], 100, "c1")
	if got, want := scanRendered(t, p, id), s0.expected(); !slices.Equal(got, want) {
		t.Errorf("scan: %d rows, want %d", len(got), len(want))
		for i := range min(len(got), len(want)) {
			if got[i] != want[i] {
				t.Fatalf("first difference at %d: got %s, want %s", i, got[i], want[i])
			}
		}
	}
}

// TestPKBatchOverBound: a single batch over the bound is written at once.
func TestPKBatchOverBound(t *testing.T) {
	p, _ := openLocal(t, map[string]string{paimon.PropWriteBufferSize: "1024"})
	ctx := context.Background()
	id := catalogs.TableIdent{Catalog: "lake", Namespace: []string{"default"}, Name: "pk_big"}
	if _, err := p.CreateTable(ctx, id, sampleSchema, map[string]string{"primary-key": "id"}); err != nil {
		t.Fatal(err)
	}
	rows := rowsFrom(0, 2000, 0)
	ws, msgs := streamRows(t, p, id, rows, 1000, "c0")
	if peak, limit, _, _ := paimon.StreamBounds(ws); peak > limit || len(msgs) != 2 {
		t.Errorf("buffered %d (bound %d), %d files: want nothing held, a file per batch", peak, limit, len(msgs))
	}
	if got := scanRendered(t, p, id); len(got) != 2000 {
		t.Errorf("scan: %d rows, want 2000", len(got))
	}
}

// TestWriteBufferOption: the table's write-buffer-size (Paimon's spelling,
// from table-default.*) lowers the catalog's bound; a bad one is refused
// naming it.
func TestWriteBufferOption(t *testing.T) {
	p, _ := openLocal(t, map[string]string{"table-default.write-buffer-size": "2 kb"})
	ctx := context.Background()
	id := catalogs.TableIdent{Catalog: "lake", Namespace: []string{"default"}, Name: "pk_opt"}
	if _, err := p.CreateTable(ctx, id, sampleSchema, map[string]string{"primary-key": "id"}); err != nil {
		t.Fatal(err)
	}
	ws, _ := streamRows(t, p, id, rowsFrom(0, 500, 0), 50, "c0")
	if peak, limit, spills, _ := paimon.StreamBounds(ws); limit != 2048 || peak > limit || spills == 0 {
		t.Errorf("bound %d, peak %d, %d spills: want 2048, within it, spilled", limit, peak, spills)
	}
	q, _ := openLocal(t, map[string]string{"table-default.write-buffer-size": "lots"})
	if _, err := q.CreateTable(ctx, id, sampleSchema, map[string]string{"primary-key": "id"}); err != nil {
		t.Fatal(err)
	}
	if _, err := q.OpenStream(ctx, id, catalogs.WriteTxn{}); !errors.Is(err, catalogs.ErrInvalidArgument) || !strings.Contains(err.Error(), "write-buffer-size") {
		t.Errorf("open with write-buffer-size lots: %v, want invalid argument naming the option", err)
	}
}

// TestMaxOpenFiles: a fixed-bucket append stream writing more buckets than
// write.max-open-files keeps at most that many open, closing the least
// recently written, and loses no row.
func TestMaxOpenFiles(t *testing.T) {
	p, _ := openLocal(t, map[string]string{paimon.PropMaxOpenFiles: "3"})
	ctx := context.Background()
	id := catalogs.TableIdent{Catalog: "lake", Namespace: []string{"default"}, Name: "many_buckets"}
	if _, err := p.CreateTable(ctx, id, sampleSchema, map[string]string{"bucket": "8", "bucket-key": "id", "partition": "p"}); err != nil {
		t.Fatal(err)
	}
	rows := rowsFrom(0, 2000, 0)
	ws, msgs := streamRows(t, p, id, rows, 200, "c0")
	if _, _, _, open := paimon.StreamBounds(ws); open != 3 {
		t.Errorf("at most %d files open, want 3", open)
	}
	if len(msgs) <= 16 {
		t.Errorf("%d files for 16 partition-buckets: want more (files closed early)", len(msgs))
	}
	s := sample{commits: [][]sampleRow{rows}}
	if got, want := scanRendered(t, p, id), s.expected(); !slices.Equal(got, want) {
		t.Errorf("scan: %d rows, want %d", len(got), len(want))
	}
}

// TestAppendLanes: an unaware-bucket stream larger than the lane spread
// writes several files at once; every row lands once and each file's
// DataFileMeta (row count, id min and max, null count) is its own.
func TestAppendLanes(t *testing.T) {
	defer paimon.SetLaneSpread(1 << 10)()
	if runtime.GOMAXPROCS(0) < 2 {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	}
	p, wh := openLocal(t, nil)
	ctx := context.Background()
	rows := rowsFrom(0, 20000, 0)
	// The lanes share one queue, so which lane takes each batch is the
	// scheduler's choice: on a loaded machine the first lane can take
	// them all. Up to five streams, each into a table of its own, until
	// one leaves a file per lane.
	var id catalogs.TableIdent
	var msgs []pcodec.CommitMessage
	for try := 0; try < 5 && len(msgs) < 2; try++ {
		id = catalogs.TableIdent{Catalog: "lake", Namespace: []string{"default"}, Name: fmt.Sprint("lanes", try)}
		if _, err := p.CreateTable(ctx, id, sampleSchema, nil); err != nil {
			t.Fatal(err)
		}
		_, msgs = streamRows(t, p, id, rows, 500, "c0")
	}
	if len(msgs) < 2 {
		t.Fatalf("%d files after five streams: want one per lane", len(msgs))
	}
	var total int64
	for _, m := range msgs {
		f := m.Data.NewFiles[0]
		total += f.RowCount
		r, err := file.OpenParquetFile(filepath.Join(wh, "default.db", id.Name, "bucket-0", f.FileName), false)
		if err != nil {
			t.Fatal(err)
		}
		fr, err := pqarrow.NewFileReader(r, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
		if err != nil {
			t.Fatal(err)
		}
		tbl, err := fr.ReadTable(ctx)
		r.Close()
		if err != nil {
			t.Fatal(err)
		}
		lo, hi, nulls := int64(1<<62), int64(-1), int64(0)
		for _, c := range tbl.Column(0).Data().Chunks() {
			for _, v := range c.(*array.Int64).Int64Values() {
				lo, hi = min(lo, v), max(hi, v)
			}
		}
		for _, c := range tbl.Column(1).Data().Chunks() {
			nulls += int64(c.NullN())
		}
		gotLo, _ := f.ValueStats.MinValues.BigInt(0)
		gotHi, _ := f.ValueStats.MaxValues.BigInt(0)
		if tbl.NumRows() != f.RowCount || gotLo != lo || gotHi != hi || *f.ValueStats.NullCounts[1] != nulls {
			t.Errorf("file %s: meta rows %d, id %d..%d, %d null names; file %d rows, id %d..%d, %d nulls",
				f.FileName, f.RowCount, gotLo, gotHi, *f.ValueStats.NullCounts[1], tbl.NumRows(), lo, hi, nulls)
		}
		tbl.Release()
	}
	if total != 20000 {
		t.Errorf("%d rows in files, want 20000", total)
	}
	s := sample{commits: [][]sampleRow{rows}}
	if got, want := scanRendered(t, p, id), s.expected(); !slices.Equal(got, want) {
		t.Errorf("scan: %d rows, want %d", len(got), len(want))
	}
}

// TestLanesCancelS3: a Write whose context ends while the lanes wait on
// S3 returns at once with the context's error, the uploads in flight stop,
// and Abort leaves no data object behind.
func TestLanesCancelS3(t *testing.T) {
	defer paimon.SetLaneSpread(1 << 10)()
	s3 := newFakeS3(t)
	var hold atomic.Bool
	var held atomic.Int64
	h := gofakes3.New(s3.backend).Server()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hold.Load() && r.Method == http.MethodPut && strings.Contains(r.URL.Path, "/bucket-0/") {
			held.Add(1)
			// The server notices a closed connection only past the body.
			_, _ = io.Copy(io.Discard, r.Body)
			<-r.Context().Done() // a stuck store: only the client's giving up ends the call
			return
		}
		h.ServeHTTP(w, r)
	}))
	defer srv.Close()
	props := s3.props("cancel")
	props[paimon.PropS3Endpoint] = srv.URL
	props[paimon.PropTargetFileSize] = "1024" // a PUT per batch
	props[lake.PropRemoteTimeout] = "60000"
	p, err := paimon.Open(context.Background(), "lake", props)
	if err != nil {
		t.Fatal(err)
	}
	id := catalogs.TableIdent{Catalog: "lake", Namespace: []string{"default"}, Name: "stuck"}
	if _, err := p.CreateTable(context.Background(), id, sampleSchema, nil); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ws, err := p.OpenStream(ctx, id, catalogs.WriteTxn{})
	if err != nil {
		t.Fatal(err)
	}
	hold.Store(true)
	go func() {
		for held.Load() == 0 {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	start := time.Now()
	var werr error
	for i := 0; werr == nil && i < 1000; i++ {
		b := sampleBatch(rowsFrom(int64(i*100), 100, 0))
		werr = ws.Write(ctx, b)
		b.Release()
	}
	if !errors.Is(werr, context.Canceled) {
		t.Fatalf("write: %v, want context.Canceled", werr)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("write returned %v after the cancel", d)
	}
	hold.Store(false)
	aborted := make(chan error, 1)
	go func() { aborted <- ws.Abort(context.Background()) }()
	select {
	case err := <-aborted:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("abort still waiting on the stuck uploads after 10s")
	}
	objs, err := s3.list("cancel/default.db/stuck/bucket-0/")
	if err != nil || len(objs) != 0 {
		t.Errorf("data objects after abort: %v (%v), want none", objs, err)
	}
}

// TestTwoWritesOfOneTransaction: a transaction that writes the same keys
// twice before committing keeps the second write's rows. Each write's
// stream used to number its rows from the committed maximum, so the
// first write of a key could carry the higher sequence number and win
// the merge; the provider now hands out sequence numbers above every
// earlier stream's of the bucket.
func TestTwoWritesOfOneTransaction(t *testing.T) {
	p, _ := openLocal(t, nil)
	ctx := context.Background()
	id := catalogs.TableIdent{Catalog: "lake", Namespace: []string{"default"}, Name: "pk_txn"}
	if _, err := p.CreateTable(ctx, id, sampleSchema, map[string]string{"primary-key": "id", "bucket": "2"}); err != nil {
		t.Fatal(err)
	}
	streamRows(t, p, id, rowsFrom(0, 10, 0), 10, "base")
	stage := func(rows []sampleRow) []catalogs.WriteReceipt {
		ws, err := p.OpenStream(ctx, id, catalogs.WriteTxn{})
		if err != nil {
			t.Fatal(err)
		}
		b := sampleBatch(rows)
		defer b.Release()
		if err := ws.Write(ctx, b); err != nil {
			t.Fatal(err)
		}
		rs, err := ws.Close(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return rs
	}
	// The first write touches more keys than the second, so that its
	// numbers would run past the second's if both started at the same one.
	first := stage(rowsFrom(0, 10, 1))
	second := stage(rowsFrom(5, 3, 2))
	if _, err := p.CommitOnce(ctx, id, "txn", append(first, second...)); err != nil {
		t.Fatal(err)
	}
	want := (sample{opts: map[string]string{"primary-key": "id"},
		commits: [][]sampleRow{rowsFrom(0, 10, 0), rowsFrom(0, 10, 1), rowsFrom(5, 3, 2)}}).expected()
	if got := scanRendered(t, p, id); !slices.Equal(got, want) {
		t.Errorf("after one commit of two writes:\n got %v\nwant %v", got, want)
	}
}
