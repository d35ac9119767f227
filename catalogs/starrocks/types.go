package starrocks

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightgw/flightgw/catalogs"
)

// columnType is the StarRocks type CreateTable gives an Arrow column, or
// an error naming the column when StarRocks cannot store it exactly.
func columnType(table catalogs.TableIdent, f arrow.Field) (string, error) {
	refuse := func(why string) (string, error) {
		return "", catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: column %q: %s cannot be stored in StarRocks%s", table, f.Name, f.Type, why)
	}
	switch t := f.Type.(type) {
	case *arrow.BooleanType:
		return "BOOLEAN", nil
	case *arrow.Int8Type:
		return "TINYINT", nil
	case *arrow.Int16Type, *arrow.Uint8Type:
		return "SMALLINT", nil
	case *arrow.Int32Type, *arrow.Uint16Type:
		return "INT", nil
	case *arrow.Int64Type, *arrow.Uint32Type:
		return "BIGINT", nil
	case *arrow.Uint64Type:
		return "LARGEINT", nil
	case *arrow.Float32Type:
		return "FLOAT", nil
	case *arrow.Float64Type:
		return "DOUBLE", nil
	case *arrow.Decimal128Type:
		return fmt.Sprintf("DECIMAL(%d,%d)", t.Precision, t.Scale), nil
	case *arrow.StringType, *arrow.LargeStringType, *arrow.StringViewType:
		return "STRING", nil
	case *arrow.Date32Type, *arrow.Date64Type:
		return "DATE", nil
	case *arrow.TimestampType:
		if t.Unit == arrow.Nanosecond {
			return refuse(" (DATETIME keeps microseconds; cast to timestamp[us])")
		}
		return "DATETIME", nil
	case *arrow.BinaryType, *arrow.LargeBinaryType, *arrow.BinaryViewType, *arrow.FixedSizeBinaryType:
		return refuse(" through Stream Load's CSV or JSON (no binary encoding)")
	}
	return refuse("")
}

// column is one StarRocks column as information_schema describes it.
type column struct {
	name     string
	dataType string // lower case DATA_TYPE: bigint, varchar, decimal...
	colType  string // lower case COLUMN_TYPE: bigint(20), decimal(10,2)...
	nullable bool
}

var decimalArgs = regexp.MustCompile(`\((\d+)\s*,\s*(\d+)\)`)

// arrowType maps a StarRocks column to Arrow. A type with no exact Arrow
// form (ARRAY, MAP, STRUCT, JSON, HLL, BITMAP, a DECIMAL wider than 38
// digits) reads as its text, a string.
func (c column) arrowType() arrow.DataType {
	switch c.dataType {
	case "boolean", "bool":
		return arrow.FixedWidthTypes.Boolean
	case "tinyint":
		if c.colType == "tinyint(1)" {
			return arrow.FixedWidthTypes.Boolean
		}
		return arrow.PrimitiveTypes.Int8
	case "smallint":
		return arrow.PrimitiveTypes.Int16
	case "int", "integer", "mediumint":
		return arrow.PrimitiveTypes.Int32
	case "bigint":
		return arrow.PrimitiveTypes.Int64
	case "float":
		return arrow.PrimitiveTypes.Float32
	case "double":
		return arrow.PrimitiveTypes.Float64
	case "decimal", "decimalv2", "decimal32", "decimal64", "decimal128":
		if m := decimalArgs.FindStringSubmatch(c.colType); m != nil {
			p, _ := strconv.Atoi(m[1])
			s, _ := strconv.Atoi(m[2])
			if p >= 1 && p <= 38 {
				return &arrow.Decimal128Type{Precision: int32(p), Scale: int32(s)}
			}
		}
		return arrow.BinaryTypes.String
	case "date":
		return arrow.FixedWidthTypes.Date32
	case "datetime", "timestamp":
		return &arrow.TimestampType{Unit: arrow.Microsecond}
	case "varbinary", "binary", "blob", "tinyblob", "mediumblob", "longblob":
		return arrow.BinaryTypes.Binary
	}
	return arrow.BinaryTypes.String
}

// family groups types that load into each other.
type family int

const (
	famOther family = iota
	famBool
	famInt
	famFloat
	famDecimal
	famString
	famDate
	famDatetime
)

// intBits is the width of a StarRocks integer column (LARGEINT: 128).
func (c column) intBits() int {
	switch c.dataType {
	case "tinyint":
		return 8
	case "smallint":
		return 16
	case "int", "integer", "mediumint":
		return 32
	case "bigint":
		return 64
	case "largeint":
		return 128
	}
	return 0
}

func (c column) family() family {
	switch {
	case c.arrowType().ID() == arrow.BOOL:
		return famBool
	case c.intBits() > 0:
		return famInt
	case c.dataType == "float" || c.dataType == "double":
		return famFloat
	case strings.HasPrefix(c.dataType, "decimal"):
		return famDecimal
	case c.dataType == "date":
		return famDate
	case c.dataType == "datetime" || c.dataType == "timestamp":
		return famDatetime
	case c.arrowType().ID() == arrow.STRING:
		return famString
	}
	return famOther
}

// loadsInto reports whether values of Arrow type t load into column c
// without loss: integers into integer columns wide enough (or decimals,
// floats), floats into floats, decimals into decimals, strings into text,
// dates into DATE or DATETIME, timestamps into DATETIME.
func loadsInto(t arrow.DataType, c column) bool {
	fam := c.family()
	switch t.ID() {
	case arrow.BOOL:
		return fam == famBool || fam == famInt
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64, arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64:
		if fam == famDecimal || fam == famFloat || (c.dataType == "decimal" && c.colType == "decimal(39,0)") {
			return true
		}
		bits := t.(arrow.FixedWidthDataType).BitWidth()
		if isUnsigned(t) {
			bits++
		}
		return fam == famInt && bits <= c.intBits()
	case arrow.FLOAT32, arrow.FLOAT64:
		return fam == famFloat
	case arrow.DECIMAL128:
		return fam == famDecimal || fam == famFloat
	case arrow.STRING, arrow.LARGE_STRING, arrow.STRING_VIEW:
		return fam == famString
	case arrow.DATE32, arrow.DATE64:
		return fam == famDate || fam == famDatetime
	case arrow.TIMESTAMP:
		return fam == famDatetime && t.(*arrow.TimestampType).Unit != arrow.Nanosecond
	}
	return false
}

func isUnsigned(t arrow.DataType) bool {
	switch t.ID() {
	case arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64:
		return true
	}
	return false
}

// keyable reports whether a StarRocks type can be a sort (DUPLICATE KEY)
// or distribution column: not FLOAT, DOUBLE or STRING.
func keyable(sr string) bool {
	switch sr {
	case "FLOAT", "DOUBLE", "STRING":
		return false
	}
	return true
}
