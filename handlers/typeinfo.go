package handlers

import (
	"context"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql/schema_ref"

	"github.com/flightgw/flightgw/engine"
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

// Result and parameter schemas carry the Flight SQL column metadata
// (ARROW:FLIGHT:SQL:*): the JDBC driver answers ResultSetMetaData's
// getPrecision, getScale, getColumnTypeName and getTableName from it
// alone, so without it a DECIMAL(10,2) has precision 0 and no column has
// a table. Every column gets its type's name, precision and scale (a
// computed decimal has its real precision); a column the engine traced to
// a table (engine.Origin) also gets the table, schema and catalog.

// columnSchema is s with the column metadata, origins[i] being the origin
// of column i (nil: none known). The fields' own metadata is kept.
func columnSchema(s *arrow.Schema, origins []engine.Origin) *arrow.Schema {
	if s == nil {
		return nil
	}
	fields := s.Fields()
	for i := range fields {
		var o engine.Origin
		if i < len(origins) {
			o = origins[i]
		}
		fields[i].Metadata = columnMetadata(fields[i], o)
	}
	md := s.Metadata()
	return arrow.NewSchema(fields, &md)
}

// paramSchema is columnSchema for a parameter schema, with every time
// and timestamp declared in milliseconds: the Arrow Flight SQL JDBC driver
// writes setTimestamp and setTime values, in milliseconds, into whatever
// vector the declared type makes, unscaled, so that a microsecond
// timestamp lands 1000 times too early (apache/arrow-java#838). In
// milliseconds they are exact; a client binding its own types is not
// affected, every unit is bound as it comes.
func paramSchema(s *arrow.Schema, origins []engine.Origin) *arrow.Schema {
	if s == nil {
		return nil
	}
	fields := s.Fields()
	for i, f := range fields {
		switch t := f.Type.(type) {
		case *arrow.TimestampType:
			fields[i].Type = &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: t.TimeZone}
		case *arrow.Time32Type, *arrow.Time64Type:
			fields[i].Type = arrow.FixedWidthTypes.Time32ms
		}
	}
	md := s.Metadata()
	return columnSchema(arrow.NewSchema(fields, &md), origins)
}

// columnMetadata is f's metadata with the Flight SQL column keys set.
func columnMetadata(f arrow.Field, o engine.Origin) arrow.Metadata {
	b := flightsql.NewColumnMetadataBuilder()
	if o.Known() {
		b.CatalogName(o.Table.Catalog).SchemaName(strings.Join(o.Table.Namespace, ".")).TableName(o.Table.Name)
	}
	name, prec, scale := columnType(f.Type)
	if name != "" {
		b.TypeName(name)
	}
	if prec > 0 {
		b.Precision(prec).Scale(scale)
	}
	b.IsAutoIncrement(false).IsCaseSensitive(name == "VARCHAR").IsSearchable(true).
		// A computed column cannot be written back; a table's can (INSERT).
		IsReadOnly(!o.Known())
	keys, vals := f.Metadata.Keys(), f.Metadata.Values()
	ours := b.Metadata()
	for i, k := range ours.Keys() {
		if f.Metadata.FindKey(k) < 0 {
			keys, vals = append(keys, k), append(vals, ours.Values()[i])
		}
	}
	return arrow.NewMetadata(keys, vals)
}

// columnType is an Arrow type's SQL name (as GetXdbcTypeInfo lists it),
// precision and scale: a decimal's own, the fractional digits of a time
// or timestamp of its unit, else the type's column size in xdbcTypes.
// The name is empty and the precision 0 for a type flightgw does not
// list.
func columnType(dt arrow.DataType) (name string, prec, scale int32) {
	switch t := dt.(type) {
	case arrow.DecimalType:
		return "DECIMAL", t.GetPrecision(), t.GetScale()
	case *arrow.Time32Type:
		return "TIME", 8 + fraction(t.Unit), digits(t.Unit)
	case *arrow.Time64Type:
		return "TIME", 8 + fraction(t.Unit), digits(t.Unit)
	case *arrow.TimestampType:
		// "2006-01-02 15:04:05", the fraction, and "+00:00" with a zone.
		if t.TimeZone != "" {
			return "TIMESTAMP WITH TIME ZONE", 19 + fraction(t.Unit) + 6, digits(t.Unit)
		}
		return "TIMESTAMP", 19 + fraction(t.Unit), digits(t.Unit)
	}
	switch dt.ID() {
	case arrow.INT8:
		name = "TINYINT"
	case arrow.INT16:
		name = "SMALLINT"
	case arrow.INT32:
		name = "INTEGER"
	case arrow.INT64:
		name = "BIGINT"
	case arrow.FLOAT32:
		name = "FLOAT"
	case arrow.FLOAT64:
		name = "DOUBLE"
	case arrow.STRING, arrow.LARGE_STRING, arrow.STRING_VIEW:
		name = "VARCHAR"
	case arrow.BINARY, arrow.LARGE_BINARY, arrow.BINARY_VIEW, arrow.FIXED_SIZE_BINARY:
		name = "VARBINARY"
	case arrow.BOOL:
		name = "BOOLEAN"
	case arrow.DATE32, arrow.DATE64:
		name = "DATE"
	case arrow.STRUCT:
		name = "STRUCT"
	case arrow.LIST, arrow.LARGE_LIST, arrow.LIST_VIEW, arrow.FIXED_SIZE_LIST:
		name = "ARRAY"
	default:
		return "", 0, 0
	}
	for _, x := range xdbcTypes {
		if x.name == name {
			return name, x.columnSize, 0
		}
	}
	return name, 0, 0
}

// digits is the fractional second digits of a time unit.
func digits(u arrow.TimeUnit) int32 {
	return [...]int32{arrow.Second: 0, arrow.Millisecond: 3, arrow.Microsecond: 6, arrow.Nanosecond: 9}[u]
}

// fraction is the width of a time unit's fraction: the point and digits.
func fraction(u arrow.TimeUnit) int32 {
	if d := digits(u); d > 0 {
		return d + 1
	}
	return 0
}
