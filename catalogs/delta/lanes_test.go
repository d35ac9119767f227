package delta_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/catalogs/catalogtest"
	"github.com/flightgw/flightgw/catalogs/delta"
	dcodec "github.com/flightgw/flightgw/codec/delta"
)

// TestLanes: an upload into an unpartitioned table past the lane spread
// is written as files encoded at once, each an add whose stats count and
// bound its own rows; every row lands once. Aborted, such a stream leaves
// no file behind.
func TestLanes(t *testing.T) {
	defer delta.SetLaneSpread(1 << 10)()
	defer runtime.GOMAXPROCS(max(2, runtime.GOMAXPROCS(0)))
	wh := t.TempDir()
	p := openLocal(t, wh)
	ctx := context.Background()
	id := ident("default", "lanes")
	if _, err := p.CreateTable(ctx, id, catalogtest.Schema, nil); err != nil {
		t.Fatal(err)
	}
	const batches, rows = 40, 500
	write := func() catalogs.WriteStream {
		s, err := p.OpenStream(ctx, id, catalogs.WriteTxn{})
		if err != nil {
			t.Fatal(err)
		}
		for i := range int64(batches) {
			b := catalogtest.Batch(i*rows, rows)
			err := s.Write(ctx, b)
			b.Release()
			if err != nil {
				t.Fatal(err)
			}
		}
		return s
	}
	rs, err := write().Close(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Commit(ctx, id, rs); err != nil {
		t.Fatal(err)
	}
	var adds []dcodec.AddFile
	for _, l := range logLines(t, filepath.Join(wh, "default", "lanes"), 1) {
		if a, ok := l["add"]; ok {
			var add dcodec.AddFile
			if err := json.Unmarshal(a, &add); err != nil {
				t.Fatal(err)
			}
			adds = append(adds, add)
		}
	}
	if len(adds) < 2 {
		t.Fatalf("%d adds, want the files of at least 2 lanes", len(adds))
	}
	bs, n, err := scanAll(t, p, id)
	if err != nil || n != batches*rows {
		t.Fatalf("scan: %d rows, %v; want %d", n, err, batches*rows)
	}
	var ids []int64
	for _, b := range bs {
		ids = append(ids, b.Column(0).(*array.Int64).Int64Values()...)
	}
	slices.Sort(ids)
	for i, v := range ids {
		if v != int64(i) {
			t.Fatalf("ids[%d] = %d: a row lost or written twice", i, v)
		}
	}
	// Each file's stats are its own: the counts add up, and each file's
	// bounds hold whole batches of ids (rows-aligned, as the lanes take them).
	var total int64
	for _, a := range adds {
		var st struct {
			NumRecords int64
			MinValues  map[string]any
			MaxValues  map[string]any
		}
		if err := json.Unmarshal([]byte(a.Stats), &st); err != nil {
			t.Fatal(err)
		}
		total += st.NumRecords
		lo, hi := st.MinValues["id"].(float64), st.MaxValues["id"].(float64)
		if int64(lo)%rows != 0 || int64(hi)%rows != rows-1 || hi-lo+1 < float64(st.NumRecords) {
			t.Errorf("file %s: %d rows, id bounds [%v, %v]", a.Path, st.NumRecords, lo, hi)
		}
	}
	if total != batches*rows {
		t.Errorf("numRecords add up to %d, want %d", total, batches*rows)
	}

	before, err := listDir(filepath.Join(wh, "default", "lanes"))
	if err != nil {
		t.Fatal(err)
	}
	if err := write().Abort(ctx); err != nil {
		t.Fatal(err)
	}
	after, err := listDir(filepath.Join(wh, "default", "lanes"))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(before, after) {
		t.Errorf("an aborted stream left files: %s", strings.Join(slices.DeleteFunc(after, func(f string) bool { return slices.Contains(before, f) }), ", "))
	}
}

// TestPartitionedLanes: an upload into a partitioned table past the lane
// spread is split by partition on several lanes, each keeping files of
// its own: a partition written by two lanes has a file from each, every
// add holds only its partition's rows, every row lands once.
func TestPartitionedLanes(t *testing.T) {
	defer delta.SetLaneSpread(1 << 10)()
	defer runtime.GOMAXPROCS(max(2, runtime.GOMAXPROCS(0)))
	wh := t.TempDir()
	p := openLocal(t, wh)
	ctx := context.Background()
	id := ident("default", "plain")
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "part", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	if _, err := p.CreateTable(ctx, id, sc, map[string]string{"partition": "part"}); err != nil {
		t.Fatal(err)
	}
	const batches, rows, parts = 40, 500, 3
	s, err := p.OpenStream(ctx, id, catalogs.WriteTxn{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range int64(batches) {
		b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
		for r := i * rows; r < (i+1)*rows; r++ {
			b.Field(0).(*array.Int64Builder).Append(r)
			b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("p%d", r%parts))
		}
		rec := b.NewRecordBatch()
		b.Release()
		err := s.Write(ctx, rec)
		rec.Release()
		if err != nil {
			t.Fatal(err)
		}
	}
	rs, err := s.Close(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Commit(ctx, id, rs); err != nil {
		t.Fatal(err)
	}
	files := map[string]int{}
	var total int64
	for _, l := range logLines(t, filepath.Join(wh, "default", "plain"), 1) {
		a, ok := l["add"]
		if !ok {
			continue
		}
		var add dcodec.AddFile
		if err := json.Unmarshal(a, &add); err != nil {
			t.Fatal(err)
		}
		pv := add.PartitionValues["part"]
		if pv == nil || !strings.HasPrefix(add.Path, "part="+*pv+"/") {
			t.Fatalf("add %s: partition values %v", add.Path, add.PartitionValues)
		}
		files[*pv]++
		var st struct{ NumRecords int64 }
		if err := json.Unmarshal([]byte(add.Stats), &st); err != nil {
			t.Fatal(err)
		}
		total += st.NumRecords
	}
	if len(files) != parts || total != batches*rows {
		t.Fatalf("files by partition %v, %d rows; want %d partitions, %d rows", files, total, parts, batches*rows)
	}
	for pv, n := range files {
		if n < 2 {
			t.Errorf("partition %s: %d file(s), want one from each of at least 2 lanes", pv, n)
		}
	}
	bs, n, err := scanAll(t, p, id)
	if err != nil || n != batches*rows {
		t.Fatalf("scan: %d rows, %v; want %d", n, err, batches*rows)
	}
	var ids []int64
	for _, b := range bs {
		idc := b.Column(b.Schema().FieldIndices("id")[0]).(*array.Int64)
		pc := b.Column(b.Schema().FieldIndices("part")[0]).(*array.String)
		for r := range idc.Len() {
			if want := fmt.Sprintf("p%d", idc.Value(r)%parts); pc.Value(r) != want {
				t.Fatalf("id %d in partition %s, want %s", idc.Value(r), pc.Value(r), want)
			}
			ids = append(ids, idc.Value(r))
		}
	}
	slices.Sort(ids)
	for i, v := range ids {
		if v != int64(i) {
			t.Fatalf("ids[%d] = %d: a row lost or written twice", i, v)
		}
	}
}
