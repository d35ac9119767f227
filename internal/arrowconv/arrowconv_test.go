package arrowconv

import (
	"context"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestTimestampUnits: a finer timestamp converts to the table's unit only
// when no value has digits below it, unless TruncateTime.
func TestTimestampUnits(t *testing.T) {
	cases := []struct {
		name     string
		have     arrow.TimeUnit
		want     arrow.TimeUnit
		values   []int64
		truncate bool
		err      string // "" when the conversion succeeds
		out      []int64
	}{
		{"ns whole microseconds", arrow.Nanosecond, arrow.Microsecond, []int64{1_000, -2_000, 0}, false, "", []int64{1, -2, 0}},
		{"ns digits refused", arrow.Nanosecond, arrow.Microsecond, []int64{1_000, 1_001}, false, "(row 1)", nil},
		{"negative ns digits refused", arrow.Nanosecond, arrow.Microsecond, []int64{-1}, false, "(row 0)", nil},
		{"ns digits truncated when allowed", arrow.Nanosecond, arrow.Microsecond, []int64{1_999}, true, "", []int64{1}},
		{"ms to s refused", arrow.Millisecond, arrow.Second, []int64{1_500}, false, "precision", nil},
		{"ns to s whole", arrow.Nanosecond, arrow.Second, []int64{3_000_000_000}, false, "", []int64{3}},
		{"coarser to finer", arrow.Second, arrow.Microsecond, []int64{2}, false, "", []int64{2_000_000}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ht := &arrow.TimestampType{Unit: c.have}
			b := array.NewTimestampBuilder(memory.DefaultAllocator, ht)
			for _, v := range c.values {
				b.Append(arrow.Timestamp(v))
			}
			b.AppendNull()
			col := b.NewArray()
			defer col.Release()
			in := array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "ts", Type: ht, Nullable: true}}, nil), []arrow.Array{col}, int64(col.Len()))
			defer in.Release()
			target := arrow.NewSchema([]arrow.Field{{Name: "ts", Type: &arrow.TimestampType{Unit: c.want}, Nullable: true}}, nil)
			out, err := ConformWith(context.Background(), target, in, nil, Options{TruncateTime: c.truncate})
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), `column "ts"`) || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err = %v, want one naming column ts and %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer out.Release()
			got := out.Column(0).(*array.Timestamp)
			for i, w := range c.out {
				if int64(got.Value(i)) != w {
					t.Errorf("value %d = %d, want %d", i, got.Value(i), w)
				}
			}
			if !got.IsNull(len(c.out)) {
				t.Error("the null became a value")
			}
		})
	}
}
