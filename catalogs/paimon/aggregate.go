package paimon

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightgw/flightgw/catalogs"
)

// The aggregation merge engine on read, as Paimon's
// AggregateMergeFunction merges a key's rows in merge order: each value
// field by its fields.<name>.aggregate-function (else
// fields.default-aggregate-function, else last_non_null_value). The
// functions implemented: sum (integer and floating-point columns, Java's
// wrapping arithmetic), min, max, last_value, last_non_null_value,
// first_value, first_non_null_value. A retraction is skipped with
// ignore-delete and otherwise refused (the functions' retract is not
// implemented here).

var aggFunctions = []string{"sum", "min", "max", "last_value", "last_non_null_value", "first_value", "first_non_null_value"}

func aggregation(s *tableSchema) bool {
	return len(s.PrimaryKeys) > 0 && strings.EqualFold(strings.TrimSpace(s.Options[optMergeEngine]), "aggregation")
}

// aggFunction is the aggregate function of value column c.
func aggFunction(s *tableSchema, c column) string {
	if v := strings.TrimSpace(s.Options["fields."+c.name+".aggregate-function"]); v != "" {
		return strings.ToLower(v)
	}
	if v := strings.TrimSpace(s.Options["fields.default-aggregate-function"]); v != "" {
		return strings.ToLower(v)
	}
	return "last_non_null_value"
}

// aggregationUnsupported is the first option of an aggregation table this
// backend does not read as Java does, or "".
func aggregationUnsupported(s *tableSchema) string {
	for _, k := range sortedKeys(s.Options) {
		if strings.HasPrefix(k, "fields.") && (strings.HasSuffix(k, ".sequence-group") || strings.HasSuffix(k, ".nested-key") || strings.HasSuffix(k, ".distinct")) {
			return k
		}
	}
	for _, c := range s.cols {
		if slices.Contains(s.PrimaryKeys, c.name) {
			continue
		}
		f := aggFunction(s, c)
		key := "fields." + c.name + ".aggregate-function"
		if _, ok := s.Options[key]; !ok {
			key = "fields.default-aggregate-function"
		}
		if !slices.Contains(aggFunctions, f) {
			return key
		}
		if f == "sum" {
			switch c.arrow.ID() {
			case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64, arrow.FLOAT32, arrow.FLOAT64:
			default:
				return key
			}
		}
	}
	return ""
}

// mergeAggregate merges the rows of all (columns: sequence number, value
// kind, then read's) by key.
func (p *Provider) mergeAggregate(ctx context.Context, st *tableState, all arrow.RecordBatch, read, want *arrow.Schema, keyOf func(int) string, after func(i, j int) bool) (arrow.RecordBatch, error) {
	ignoreDelete := strings.EqualFold(strings.TrimSpace(st.schema.Options[optIgnoreDelete]), "true")
	kinds := all.Column(1).(*array.Int8)
	order, groups := mergeGroups(int(all.NumRows()), keyOf, after)
	for _, k := range order {
		rows := groups[k][:0]
		for _, r := range groups[k] {
			if kd := kinds.Value(r); kd == 1 || kd == 3 {
				if !ignoreDelete {
					return nil, catalogs.Errorf(catalogs.ErrFailedPrecondition, "table %s: an aggregation table holds a retraction (option %q, %q unset): this backend does not retract aggregates and refuses to read it", st.ident, optMergeEngine, optIgnoreDelete)
				}
				continue
			}
			rows = append(rows, r)
		}
		groups[k] = rows
	}
	out := make([]arrow.Array, want.NumFields())
	defer func() {
		for _, a := range out {
			if a != nil {
				a.Release()
			}
		}
	}()
	var live []string
	for _, k := range order {
		if len(groups[k]) > 0 {
			live = append(live, k)
		}
	}
	for c, f := range want.Fields() {
		a := all.Column(2 + read.FieldIndices(f.Name)[0])
		fn := "last_value"
		if !slices.Contains(st.schema.PrimaryKeys, f.Name) {
			fn = aggFunction(st.schema, st.schema.cols[st.schema.index(f.Name)])
		}
		var err error
		if fn == "sum" {
			out[c], err = sumColumn(a, live, groups)
		} else {
			src := make([]int, 0, len(live))
			for _, k := range live {
				src = append(src, pick(a, fn, groups[k]))
			}
			var b arrow.RecordBatch
			b, err = takeColumns(ctx, st, arrow.NewSchema([]arrow.Field{f}, nil), []arrow.Array{a}, [][]int{src})
			if err == nil {
				out[c] = b.Column(0)
				out[c].Retain()
				b.Release()
			}
		}
		if err != nil {
			return nil, catalogs.Wrap(catalogs.ErrUnavailable, err, fmt.Sprintf("table %s: aggregate column %q", st.ident, f.Name))
		}
	}
	return array.NewRecordBatch(want, out, int64(len(live))), nil
}

// pick is the row whose value an order-based aggregate keeps (-1: null).
func pick(a arrow.Array, fn string, rows []int) int {
	best := -1
	for _, r := range rows {
		null := a.IsNull(r)
		switch fn {
		case "last_value":
			best = r
		case "last_non_null_value":
			if !null {
				best = r
			}
		case "first_value":
			if r == rows[0] {
				best = r
			}
		case "first_non_null_value":
			if !null && best < 0 {
				best = r
			}
		case "min", "max":
			if null {
				continue
			}
			if best < 0 {
				best = r
				continue
			}
			d := compare(value(a, r), value(a, best))
			if (fn == "min" && d < 0) || (fn == "max" && d > 0) {
				best = r
			}
		}
	}
	return best
}

// sumColumn sums each group's non-null values (null when all are null),
// in the column's type with Java's wrapping arithmetic.
func sumColumn(a arrow.Array, order []string, groups map[string][]int) (arrow.Array, error) {
	b := array.NewBuilder(memory.DefaultAllocator, a.DataType())
	defer b.Release()
	for _, k := range order {
		var i int64
		var f float64
		seen := false
		for _, r := range groups[k] {
			if a.IsNull(r) {
				continue
			}
			seen = true
			switch x := a.(type) {
			case *array.Int8:
				i = int64(int8(i) + x.Value(r))
			case *array.Int16:
				i = int64(int16(i) + x.Value(r))
			case *array.Int32:
				i = int64(int32(i) + x.Value(r))
			case *array.Int64:
				i += x.Value(r)
			case *array.Float32:
				f = float64(float32(f) + x.Value(r))
			case *array.Float64:
				f += x.Value(r)
			default:
				return nil, fmt.Errorf("sum of %s", a.DataType())
			}
		}
		if !seen {
			b.AppendNull()
			continue
		}
		switch bb := b.(type) {
		case *array.Int8Builder:
			bb.Append(int8(i))
		case *array.Int16Builder:
			bb.Append(int16(i))
		case *array.Int32Builder:
			bb.Append(int32(i))
		case *array.Int64Builder:
			bb.Append(i)
		case *array.Float32Builder:
			bb.Append(float32(f))
		case *array.Float64Builder:
			bb.Append(f)
		}
	}
	return b.NewArray(), nil
}
