package flightsql

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightgw/flightgw/catalogs"
)

// TestWhereClause: the filters a scan writes, and whether the upstream's
// WHERE keeps only rows the engine keeps (the condition for pushing the
// scan's LIMIT): not when a filter is left out, nor when one compares
// strings under the upstream's collation. A decimal is a bare numeric
// literal (the engine gives it as text; quoted, an upstream compares it
// as a string or refuses it), unless it has more digits than a dialect
// that reads 1.5 as a double compares exactly.
func TestWhereClause(t *testing.T) {
	s := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "name", Type: arrow.BinaryTypes.String},
		{Name: "at", Type: arrow.FixedWidthTypes.Date32}, {Name: "price", Type: &arrow.Decimal128Type{Precision: 10, Scale: 2}},
		{Name: "wide", Type: &arrow.Decimal128Type{Precision: 38, Scale: 2}}}, nil)
	for _, c := range []struct {
		name    string
		filters []catalogs.Filter
		where   string
		all     bool
	}{
		{"none", nil, "", true},
		{"integers and nulls", []catalogs.Filter{{Column: "id", Op: catalogs.OpGt, Values: []any{int64(5)}}, {Column: "name", Op: catalogs.OpNotNull},
			{Column: "id", Op: catalogs.OpIn, Values: []any{int64(6), int64(7)}}}, ` WHERE "id" > 5 AND "name" IS NOT NULL AND "id" IN (6, 7)`, true},
		{"a string", []catalogs.Filter{{Column: "name", Op: catalogs.OpEq, Values: []any{"a"}}}, ` WHERE "name" = 'a'`, false},
		{"a date left out", []catalogs.Filter{{Column: "id", Op: catalogs.OpNotEq, Values: []any{int64(1)}},
			{Column: "at", Op: catalogs.OpLt, Values: []any{struct{}{}}}}, ` WHERE "id" <> 1`, false},
		{"a decimal", []catalogs.Filter{{Column: "price", Op: catalogs.OpGtEq, Values: []any{"-12.50"}}}, ` WHERE "price" >= -12.50`, true},
		{"decimals in a list", []catalogs.Filter{{Column: "price", Op: catalogs.OpIn, Values: []any{"1.05", "0.001", "7"}}}, ` WHERE "price" IN (1.05, 0.001, 7)`, true},
		{"a decimal too long for a double", []catalogs.Filter{{Column: "price", Op: catalogs.OpEq, Values: []any{"1234567890.1234567"}}}, "", false},
		{"a wide decimal column", []catalogs.Filter{{Column: "wide", Op: catalogs.OpLt, Values: []any{"1.5"}}}, "", false},
		{"a decimal that is no numeral", []catalogs.Filter{{Column: "price", Op: catalogs.OpEq, Values: []any{"1e5"}}}, "", false},
		{"an unknown column", []catalogs.Filter{{Column: "gone", Op: catalogs.OpIsNull}}, "", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			where, all := whereClause(s, `"`, c.filters)
			if where != c.where || all != c.all {
				t.Fatalf("got %q %v, want %q %v", where, all, c.where, c.all)
			}
		})
	}
}
