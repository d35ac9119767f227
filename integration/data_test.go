package integration

import (
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
)

// peopleSchema is the schema most tests write.
var peopleSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "score", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
}, nil)

// people builds n rows with ids from..from+n-1.
func people(t *testing.T, from, n int) arrow.RecordBatch {
	t.Helper()
	return batchFromJSON(t, peopleSchema, func(i int) string {
		return fmt.Sprintf(`{"id": %d, "name": "p%d", "score": %d.5}`, from+i, from+i, i)
	}, n)
}

func batchFromJSON(t *testing.T, schema *arrow.Schema, row func(int) string, n int) arrow.RecordBatch {
	t.Helper()
	var b strings.Builder
	b.WriteByte('[')
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(row(i))
	}
	b.WriteByte(']')
	rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, schema, strings.NewReader(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rec.Release)
	return rec
}

func ids(from, n int) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = int64(from + i)
	}
	return out
}

func containsFold(s, sub string) bool {
	return strings.Contains(strings.ToLower(s), strings.ToLower(sub))
}

func mustAny(t *testing.T, m proto.Message) []byte {
	t.Helper()
	var a anypb.Any
	if err := a.MarshalFrom(m); err != nil {
		t.Fatal(err)
	}
	b, err := proto.Marshal(&a)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
