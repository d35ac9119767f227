package handlers

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql/schema_ref"
)

// xdbcType is one row of GetXdbcTypeInfo: a SQL type the gateway stores,
// with its JDBC/ODBC type code.
type xdbcType struct {
	name       string
	code       int32 // java.sql.Types
	columnSize int32 // 0: not applicable
	prefix     string
	params     []string
	minScale   int32
	maxScale   int32
	radix      int32
	subcode    int32 // datetime subcode, 0 for none
}

// xdbcTypes lists the types every table-format backend can hold, in
// java.sql.Types order as JDBC's getTypeInfo expects.
var xdbcTypes = []xdbcType{
	{name: "TINYINT", code: -6, columnSize: 3, radix: 10},
	{name: "BIGINT", code: -5, columnSize: 19, radix: 10},
	{name: "VARBINARY", code: -3, columnSize: 2147483647, prefix: "X'"},
	{name: "DECIMAL", code: 3, columnSize: 38, params: []string{"precision", "scale"}, maxScale: 38, radix: 10},
	{name: "INTEGER", code: 4, columnSize: 10, radix: 10},
	{name: "SMALLINT", code: 5, columnSize: 5, radix: 10},
	{name: "FLOAT", code: 6, columnSize: 7, radix: 2},
	{name: "DOUBLE", code: 8, columnSize: 15, radix: 2},
	{name: "VARCHAR", code: 12, columnSize: 2147483647, prefix: "'"},
	{name: "BOOLEAN", code: 16, columnSize: 1},
	{name: "DATE", code: 91, columnSize: 10, prefix: "DATE '", subcode: 1},
	{name: "TIME", code: 92, columnSize: 15, prefix: "TIME '", subcode: 2},
	{name: "TIMESTAMP", code: 93, columnSize: 26, prefix: "TIMESTAMP '", maxScale: 6, subcode: 3},
	{name: "STRUCT", code: 2002},
	{name: "ARRAY", code: 2003},
	{name: "TIMESTAMP WITH TIME ZONE", code: 2014, columnSize: 32, prefix: "TIMESTAMP '", maxScale: 6, subcode: 3},
}

// GetFlightInfoXdbcTypeInfo answers CommandGetXdbcTypeInfo.
func (h *Handler) GetFlightInfoXdbcTypeInfo(_ context.Context, _ flightsql.GetXdbcTypeInfo, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return flightInfoFor(desc, schema_ref.XdbcTypeInfo, h.Alloc), nil
}

// DoGetXdbcTypeInfo lists the SQL types, or the one asked for.
func (h *Handler) DoGetXdbcTypeInfo(_ context.Context, cmd flightsql.GetXdbcTypeInfo) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	var rows []map[string]any
	for _, t := range xdbcTypes {
		if dt := cmd.GetDataType(); dt != nil && *dt != t.code {
			continue
		}
		row := map[string]any{
			"type_name":        t.name,
			"data_type":        t.code,
			"nullable":         1, // columnNullable
			"case_sensitive":   t.code == 12,
			"searchable":       3, // searchable in any WHERE clause
			"fixed_prec_scale": false,
			"local_type_name":  t.name,
			"sql_data_type":    t.code,
		}
		if t.columnSize > 0 {
			row["column_size"] = t.columnSize
		}
		if t.prefix != "" {
			row["literal_prefix"] = t.prefix
			row["literal_suffix"] = "'"
		}
		if t.params != nil {
			row["create_params"] = t.params
		}
		if t.radix > 0 {
			row["num_prec_radix"] = t.radix
			row["unsigned_attribute"] = false
			row["auto_increment"] = false
		}
		if t.maxScale > 0 {
			row["minimum_scale"] = t.minScale
			row["maximum_scale"] = t.maxScale
		}
		if t.subcode > 0 {
			row["datetime_subcode"] = t.subcode
		}
		rows = append(rows, row)
	}
	return rowsResult(h.Alloc, schema_ref.XdbcTypeInfo, rows)
}
