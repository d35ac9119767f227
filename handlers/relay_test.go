package handlers

import (
	"errors"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// fakeRelayed is a relayed batch whose columns decode, or not.
type fakeRelayed struct {
	arrow.RecordBatch
	bad     error
	decoded bool
	retyped *arrow.Schema
}

func (f *fakeRelayed) WithSchema(s *arrow.Schema) arrow.RecordBatch { f.retyped = s; return f }
func (f *fakeRelayed) Decode() error                                { f.decoded = true; return f.bad }

// TestWithSchema: a relayed batch stays one, retyped, for a writer that
// relays; for any other it is decoded first, and one that does not
// decode is the query's error, not a panic in the writer.
func TestWithSchema(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{{Name: "v", Type: arrow.PrimitiveTypes.Int64}}, nil)
	out := arrow.NewSchema([]arrow.Field{{Name: "v", Type: arrow.PrimitiveTypes.Int64, Metadata: arrow.NewMetadata([]string{"k"}, []string{"x"})}}, nil)
	b := array.NewInt64Builder(memory.DefaultAllocator)
	b.Append(7)
	col := b.NewArray()
	defer col.Release()
	rec := array.NewRecordBatch(schema, []arrow.Array{col}, 1)
	defer rec.Release()
	for _, c := range []struct {
		name    string
		relay   bool
		bad     error
		relayed bool
		fails   bool
	}{
		{"relayed", true, nil, true, false},
		{"decoded", false, nil, false, false},
		{"does not decode", false, errors.New("truncated body"), false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := &fakeRelayed{RecordBatch: rec, bad: c.bad}
			got, err := withSchema(f, out, c.relay)
			if (err != nil) != c.fails {
				t.Fatalf("error %v, want one: %v", err, c.fails)
			}
			if c.fails {
				return
			}
			defer func() {
				if got != arrow.RecordBatch(f) {
					got.Release()
				}
			}()
			if relayed := got == arrow.RecordBatch(f); relayed != c.relayed || (c.relayed && f.retyped != out) {
				t.Fatalf("relayed %v (retyped %v), want %v", relayed, f.retyped != nil, c.relayed)
			}
			if !c.relayed && (!f.decoded || !got.Schema().Equal(out)) {
				t.Fatalf("decoded %v, schema %s", f.decoded, got.Schema())
			}
		})
	}
}
