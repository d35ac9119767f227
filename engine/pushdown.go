package engine

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightgw/flightgw/catalogs"
)

// pushFilters finds, in one SELECT node, the WHERE conjuncts that compare
// a column of one scanned table with literals, and adds them to that
// table's scan. It only does so when the node's FROM is a tree of inner
// joins: under an outer join a pre-filtered side would change the result.
// The pushed filters only prune; DuckDB still evaluates the whole WHERE.
func pushFilters(node map[string]any, refs []*scanRef) {
	where, ok := node["where_clause"].(map[string]any)
	if !ok {
		return
	}
	in, ok := innerRefs(node["from_table"], refs)
	if !ok || len(in) == 0 {
		return
	}
	for _, c := range conjuncts(where) {
		ref, f, ok := simpleFilter(c, in)
		if ok {
			ref.filters = append(ref.filters, f)
		}
	}
}

// innerRefs returns the scans joined by inner joins in a FROM tree; ok is
// false when the tree has another kind of join.
func innerRefs(v any, refs []*scanRef) ([]*scanRef, bool) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, true
	}
	switch m["type"] {
	case "BASE_TABLE":
		for _, r := range refs {
			if sameMap(r.node, m) {
				return []*scanRef{r}, true
			}
		}
		return nil, true
	case "JOIN":
		if m["join_type"] != "INNER" {
			return nil, false
		}
		switch m["ref_type"] {
		case "REGULAR", "CROSS", "NATURAL":
		default:
			return nil, false
		}
		l, ok := innerRefs(m["left"], refs)
		if !ok {
			return nil, false
		}
		r, ok := innerRefs(m["right"], refs)
		return append(l, r...), ok
	}
	return nil, true
}

func sameMap(a, b map[string]any) bool {
	return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}

// conjuncts flattens nested ANDs.
func conjuncts(e map[string]any) []map[string]any {
	if e["type"] != "CONJUNCTION_AND" {
		return []map[string]any{e}
	}
	var out []map[string]any
	for _, c := range anyList(e["children"]) {
		if cm, ok := c.(map[string]any); ok {
			out = append(out, conjuncts(cm)...)
		}
	}
	return out
}

var compareOps = map[string]catalogs.FilterOp{
	"COMPARE_EQUAL":                catalogs.OpEq,
	"COMPARE_NOTEQUAL":             catalogs.OpNotEq,
	"COMPARE_LESSTHAN":             catalogs.OpLt,
	"COMPARE_LESSTHANOREQUALTO":    catalogs.OpLtEq,
	"COMPARE_GREATERTHAN":          catalogs.OpGt,
	"COMPARE_GREATERTHANOREQUALTO": catalogs.OpGtEq,
}

// flipped is the operator with its operands swapped (5 < x is x > 5).
var flipped = map[catalogs.FilterOp]catalogs.FilterOp{
	catalogs.OpEq: catalogs.OpEq, catalogs.OpNotEq: catalogs.OpNotEq,
	catalogs.OpLt: catalogs.OpGt, catalogs.OpGt: catalogs.OpLt,
	catalogs.OpLtEq: catalogs.OpGtEq, catalogs.OpGtEq: catalogs.OpLtEq,
}

// simpleFilter matches column-op-literal, literal-op-column, column IN
// (literals), column IS [NOT] NULL.
func simpleFilter(e map[string]any, in []*scanRef) (*scanRef, catalogs.Filter, bool) {
	t := str(e["type"])
	if op, ok := compareOps[t]; ok {
		l, _ := e["left"].(map[string]any)
		r, _ := e["right"].(map[string]any)
		if l == nil || r == nil {
			return nil, catalogs.Filter{}, false
		}
		if l["type"] != "COLUMN_REF" {
			l, r, op = r, l, flipped[op]
		}
		ref, field, ok := column(l, in)
		if !ok {
			return nil, catalogs.Filter{}, false
		}
		v, ok := literal(r, field.Type)
		if !ok {
			return nil, catalogs.Filter{}, false
		}
		return ref, catalogs.Filter{Column: field.Name, Op: op, Values: []any{v}}, true
	}
	children := anyList(e["children"])
	if len(children) == 0 {
		return nil, catalogs.Filter{}, false
	}
	colExpr, _ := children[0].(map[string]any)
	ref, field, ok := column(colExpr, in)
	if !ok {
		return nil, catalogs.Filter{}, false
	}
	switch t {
	case "OPERATOR_IS_NULL":
		return ref, catalogs.Filter{Column: field.Name, Op: catalogs.OpIsNull}, true
	case "OPERATOR_IS_NOT_NULL":
		return ref, catalogs.Filter{Column: field.Name, Op: catalogs.OpNotNull}, true
	case "COMPARE_IN":
		var vals []any
		for _, c := range children[1:] {
			cm, _ := c.(map[string]any)
			v, ok := literal(cm, field.Type)
			if !ok {
				return nil, catalogs.Filter{}, false
			}
			vals = append(vals, v)
		}
		return ref, catalogs.Filter{Column: field.Name, Op: catalogs.OpIn, Values: vals}, true
	}
	return nil, catalogs.Filter{}, false
}

// column resolves a column reference to the one scan that has it: a
// qualified name by the scan's alias, a bare name when exactly one scan
// has such a column.
func column(e map[string]any, in []*scanRef) (*scanRef, arrow.Field, bool) {
	if e == nil || e["type"] != "COLUMN_REF" {
		return nil, arrow.Field{}, false
	}
	names := strList(e["column_names"])
	var (
		found *scanRef
		field arrow.Field
	)
	for _, r := range in {
		var col string
		switch len(names) {
		case 1:
			col = names[0]
		case 2:
			if !strings.EqualFold(names[0], r.alias) {
				continue
			}
			col = names[1]
		default:
			return nil, arrow.Field{}, false
		}
		for _, f := range r.table.Schema.Fields() {
			if strings.EqualFold(f.Name, col) && included(r.columns, f.Name) {
				if found != nil {
					return nil, arrow.Field{}, false // ambiguous
				}
				found, field = r, f
			}
		}
	}
	return found, field, found != nil
}

func included(cols []string, name string) bool {
	for _, c := range cols {
		if c == name {
			return true
		}
	}
	return false
}

// literal converts a constant (or a cast of a constant) to the Go value
// catalogs.Filter expects for a column of type dt. ok is false when the
// conversion would not be exact.
func literal(e map[string]any, dt arrow.DataType) (any, bool) {
	if e == nil {
		return nil, false
	}
	castTo := ""
	if e["type"] == "OPERATOR_CAST" {
		if e["try_cast"] == true {
			return nil, false
		}
		ct, _ := e["cast_type"].(map[string]any)
		castTo = str(ct["id"])
		e, _ = e["child"].(map[string]any)
		if e == nil {
			return nil, false
		}
	}
	if e["type"] != "VALUE_CONSTANT" {
		return nil, false
	}
	val, _ := e["value"].(map[string]any)
	if val == nil || val["is_null"] == true {
		return nil, false
	}
	vt, _ := val["type"].(map[string]any)
	kind := str(vt["id"])
	raw := val["value"]
	switch kind {
	case "TINYINT", "SMALLINT", "INTEGER", "BIGINT", "UTINYINT", "USMALLINT", "UINTEGER":
		n, ok := raw.(json.Number)
		if !ok || (castTo != "" && !isIntType(castTo)) {
			return nil, false
		}
		i, err := n.Int64()
		if err != nil {
			return nil, false
		}
		return intFor(i, dt)
	case "DOUBLE", "FLOAT":
		n, ok := raw.(json.Number)
		if !ok || castTo != "" {
			return nil, false
		}
		f, err := n.Float64()
		if err != nil {
			return nil, false
		}
		switch dt.ID() {
		case arrow.FLOAT64:
			return f, true
		case arrow.FLOAT32:
			if float64(float32(f)) == f {
				return float32(f), true
			}
		}
		return nil, false
	case "DECIMAL":
		n, ok := raw.(json.Number)
		info, _ := vt["type_info"].(map[string]any)
		scale, err := json.Number(fmt.Sprint(info["scale"])).Int64()
		if !ok || err != nil || castTo != "" {
			return nil, false
		}
		return decimalFor(string(n), int(scale), dt)
	case "BOOLEAN":
		b, ok := raw.(bool)
		if ok && dt.ID() == arrow.BOOL && castTo == "" {
			return b, true
		}
		return nil, false
	case "VARCHAR":
		s, ok := raw.(string)
		if !ok {
			return nil, false
		}
		return stringFor(s, castTo, dt)
	}
	return nil, false
}

// decimalFor converts a decimal literal, given as its unscaled digits and
// scale, for a floating-point or decimal column.
func decimalFor(unscaled string, scale int, dt arrow.DataType) (any, bool) {
	neg := strings.HasPrefix(unscaled, "-")
	digits := strings.TrimPrefix(unscaled, "-")
	for len(digits) <= scale {
		digits = "0" + digits
	}
	text := digits[:len(digits)-scale]
	if scale > 0 {
		text += "." + digits[len(digits)-scale:]
	}
	if neg {
		text = "-" + text
	}
	switch dt.ID() {
	case arrow.FLOAT64:
		f, err := strconv.ParseFloat(text, 64)
		return f, err == nil
	case arrow.DECIMAL128, arrow.DECIMAL256:
		return text, true
	}
	return nil, false
}

func isIntType(t string) bool {
	switch t {
	case "TINYINT", "SMALLINT", "INTEGER", "BIGINT":
		return true
	}
	return false
}

func intFor(i int64, dt arrow.DataType) (any, bool) {
	switch dt.ID() {
	case arrow.INT64:
		return i, true
	case arrow.INT32:
		if i >= math.MinInt32 && i <= math.MaxInt32 {
			return int32(i), true
		}
	case arrow.DECIMAL128, arrow.DECIMAL256:
		return strconv.FormatInt(i, 10), true
	case arrow.FLOAT64:
		if math.Abs(float64(i)) < 1<<53 {
			return float64(i), true
		}
	}
	return nil, false
}

// stringFor converts a string literal, compared with (or cast to the type
// of) a column: strings, dates and timestamps.
func stringFor(s, castTo string, dt arrow.DataType) (any, bool) {
	switch dt.ID() {
	case arrow.STRING, arrow.LARGE_STRING:
		if castTo == "" || castTo == "VARCHAR" {
			return s, true
		}
	case arrow.DATE32:
		if castTo == "" || castTo == "DATE" {
			if t, err := time.Parse("2006-01-02", s); err == nil {
				return t, true
			}
		}
	case arrow.TIMESTAMP:
		if castTo == "" || castTo == "TIMESTAMP" || castTo == "TIMESTAMP WITH TIME ZONE" || castTo == "TIMESTAMP_TZ" {
			for _, layout := range []string{"2006-01-02 15:04:05.999999", "2006-01-02T15:04:05.999999", "2006-01-02"} {
				if t, err := time.ParseInLocation(layout, s, time.UTC); err == nil {
					return t, true
				}
			}
		}
	}
	return nil, false
}
