package pqwrite

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

var laneSchema = arrow.NewSchema([]arrow.Field{{Name: "v", Type: arrow.PrimitiveTypes.Int64}}, nil)

func laneBatch(mem memory.Allocator, n int) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, laneSchema)
	defer b.Release()
	for i := range n {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
	}
	return b.NewRecordBatch()
}

// TestLanesSpread: one lane until spread bytes have gone out, then one
// more per spread, at most n; every batch reaches a lane once and is
// released.
func TestLanesSpread(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	var mu sync.Mutex
	rows := map[int]int64{}
	l := NewLanes(context.Background(), 3, 8<<10, func(ctx context.Context, lane int, in <-chan arrow.RecordBatch) error {
		for b := range in {
			mu.Lock()
			rows[lane] += b.NumRows()
			mu.Unlock()
			b.Release()
		}
		return nil
	})
	for range 40 {
		if err := l.Send(context.Background(), laneBatch(mem, 512)); err != nil { // 4 KiB each
			t.Fatal(err)
		}
	}
	if err := l.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, n := range rows {
		total += n
	}
	if l.start != 3 || total != 40*512 {
		t.Errorf("%d lanes started, %d rows: want 3, %d", l.start, total, 40*512)
	}
}

// TestLanesFailure: a lane's error comes back from the next Send and from
// Close, and nothing queued leaks.
func TestLanesFailure(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	boom := errors.New("boom")
	l := NewLanes(context.Background(), 2, 1<<40, func(ctx context.Context, lane int, in <-chan arrow.RecordBatch) error {
		b := <-in
		b.Release()
		return boom
	})
	var err error
	for i := 0; err == nil && i < 100; i++ {
		err = l.Send(context.Background(), laneBatch(mem, 10))
	}
	if !errors.Is(err, boom) {
		t.Errorf("send after the lane failed: %v, want boom", err)
	}
	if err := l.Close(context.Background()); !errors.Is(err, boom) {
		t.Errorf("close: %v, want boom", err)
	}
}

// TestLanesCancel: a Send whose context has ended stops the lanes, whose
// context ends with the same cause.
func TestLanesCancel(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	stopped := make(chan error, 1)
	l := NewLanes(context.Background(), 1, 1<<40, func(ctx context.Context, lane int, in <-chan arrow.RecordBatch) error {
		<-ctx.Done() // a lane stuck in a call honouring ctx
		stopped <- context.Cause(ctx)
		return context.Cause(ctx)
	})
	ctx, cancel := context.WithCancel(context.Background())
	if err := l.Send(ctx, laneBatch(mem, 10)); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := l.Send(ctx, laneBatch(mem, 10)); !errors.Is(err, context.Canceled) {
		t.Errorf("send: %v, want context.Canceled", err)
	}
	if err := <-stopped; !errors.Is(err, context.Canceled) {
		t.Errorf("lane stopped with %v, want context.Canceled", err)
	}
	l.Abort()
}
