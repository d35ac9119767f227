package iceberg

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// NaN counts: Iceberg's manifests carry, per float and double column, the
// number of NaN values of each data file (nan_value_counts), which readers
// use to prune files for isnan predicates and to trust the bounds (which
// never include NaN). Parquet footers written by arrow-go carry no NaN
// count, so the lane writer (parquet.go) counts them from the batches.

// nanColumn is a path from a top-level column to the float leaves it
// holds; only columns that hold one are listed.
type nanColumn struct {
	index int
	field arrow.Field
}

// nanColumns lists the columns of sc (an Arrow schema with field ids)
// that hold a float or double, at any depth.
func nanColumns(sc *arrow.Schema) []nanColumn {
	var out []nanColumn
	for i, f := range sc.Fields() {
		if holdsFloat(f.Type) {
			out = append(out, nanColumn{index: i, field: f})
		}
	}
	return out
}

func holdsFloat(dt arrow.DataType) bool {
	switch t := dt.(type) {
	case *arrow.Float32Type, *arrow.Float64Type:
		return true
	case *arrow.StructType:
		for _, f := range t.Fields() {
			if holdsFloat(f.Type) {
				return true
			}
		}
	case *arrow.ListType:
		return holdsFloat(t.Elem())
	case *arrow.MapType:
		return holdsFloat(t.KeyType()) || holdsFloat(t.ItemType())
	}
	return false
}

// countNaNs adds the NaN values of b's float leaves to counts, by field
// id. A value counts only where it is stored: under no null struct or
// list.
func countNaNs(cols []nanColumn, b arrow.RecordBatch, counts map[int]int64) {
	for _, c := range cols {
		countArray(c.field, b.Column(c.index), nil, counts)
	}
}

// countArray counts arr's NaNs; present, when set, says which of its
// slots lie under present parents.
func countArray(f arrow.Field, arr arrow.Array, present []bool, counts map[int]int64) {
	reach := func(i int) bool { return arr.IsValid(i) && (present == nil || present[i]) }
	switch a := arr.(type) {
	case *array.Float64:
		n := 0
		for i, v := range a.Float64Values() {
			if v != v && reach(i) {
				n++
			}
		}
		add(f, counts, n)
	case *array.Float32:
		n := 0
		for i, v := range a.Float32Values() {
			if v != v && reach(i) {
				n++
			}
		}
		add(f, counts, n)
	case *array.Struct:
		var kids []bool
		if a.NullN() > 0 || present != nil {
			kids = make([]bool, a.Len())
			for i := range kids {
				kids[i] = reach(i)
			}
		}
		st := a.DataType().(*arrow.StructType)
		for i := range a.NumField() {
			if holdsFloat(st.Field(i).Type) {
				countArray(st.Field(i), a.Field(i), kids, counts)
			}
		}
	case *array.Map:
		mt := a.DataType().(*arrow.MapType)
		lo, hi, kids := elements(a, reach)
		for _, kv := range []struct {
			f   arrow.Field
			arr arrow.Array
		}{{mt.KeyField(), a.Keys()}, {mt.ItemField(), a.Items()}} {
			if holdsFloat(kv.f.Type) {
				vals := array.NewSlice(kv.arr, lo, hi)
				countArray(kv.f, vals, kids, counts)
				vals.Release()
			}
		}
	case *array.List:
		lt := a.DataType().(*arrow.ListType)
		lo, hi, kids := elements(a, reach)
		vals := array.NewSlice(a.ListValues(), lo, hi)
		defer vals.Release()
		countArray(lt.ElemField(), vals, kids, counts)
	}
}

// elements returns the range of child values a's slots span and which of
// them lie in a present slot.
func elements(a array.ListLike, reach func(int) bool) (lo, hi int64, present []bool) {
	if a.Len() == 0 {
		return 0, 0, nil
	}
	lo, _ = a.ValueOffsets(0)
	_, hi = a.ValueOffsets(a.Len() - 1)
	present = make([]bool, hi-lo)
	for i := range a.Len() {
		if !reach(i) {
			continue
		}
		s, e := a.ValueOffsets(i)
		for j := s; j < e; j++ {
			present[j-lo] = true
		}
	}
	return lo, hi, present
}

// add records n NaNs of field f (its id from the field-id metadata
// arrowSchema sets). A float column with no NaN counts zero: readers may
// then skip the file for isnan.
func add(f arrow.Field, counts map[int]int64, n int) {
	if id := fieldID(f); id >= 0 {
		counts[id] += int64(n)
	}
}
