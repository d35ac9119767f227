package delta

import (
	"fmt"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
)

// Names says which names ArrowSchema gives fields.
type Names int

const (
	// LogicalNames are the names users see (the `name` of each field).
	LogicalNames Names = iota
	// PhysicalNames are the names in data files: delta.columnMapping.physicalName when column
	// mapping is on (modes name and id), the logical name otherwise.
	PhysicalNames
)

// FieldIDKey is the Arrow field metadata key pqarrow reads and writes as the Parquet
// field_id; column mapping writes delta.columnMapping.id there.
const FieldIDKey = "PARQUET:field_id"

// ArrowSchema maps a Delta schema to Arrow. Every field whose Delta metadata carries
// delta.columnMapping.id and physicalName keeps them in its Arrow metadata (the id also as
// PARQUET:field_id), so a reader can resolve columns by id or by physical name. Types with
// no Arrow reading here (variant) are refused, naming the column.
//
//	string→utf8, long→int64, integer→int32, short→int16, byte→int8, float→float32,
//	double→float64, boolean→bool, binary→binary, date→date32, timestamp→timestamp[us, UTC],
//	timestamp_ntz→timestamp[us], decimal(p,s)→decimal128(p,s), void→null,
//	struct→struct, array→list, map→map.
func ArrowSchema(s *StructType, names Names) (*arrow.Schema, error) {
	fields, err := arrowFields(s, names, "")
	if err != nil {
		return nil, err
	}
	return arrow.NewSchema(fields, nil), nil
}

func arrowFields(s *StructType, names Names, prefix string) ([]arrow.Field, error) {
	out := make([]arrow.Field, 0, len(s.Fields))
	for _, f := range s.Fields {
		af, err := arrowField(f, names, prefix+f.Name)
		if err != nil {
			return nil, err
		}
		out = append(out, af)
	}
	return out, nil
}

func arrowField(f *StructField, names Names, path string) (arrow.Field, error) {
	name := f.Name
	phys, err := f.PhysicalName()
	if err != nil {
		return arrow.Field{}, err
	}
	if names == PhysicalNames {
		name = phys
	}
	t, err := arrowType(f.Type, names, path)
	if err != nil {
		return arrow.Field{}, err
	}
	var keys, vals []string
	id, hasID, err := f.ColumnMappingID()
	if err != nil {
		return arrow.Field{}, err
	}
	if hasID {
		keys = append(keys, FieldIDKey, MetaColumnMappingID)
		vals = append(vals, strconv.Itoa(int(id)), strconv.Itoa(int(id)))
	}
	if _, ok := f.Metadata[MetaColumnMappingPhysicalName]; ok {
		keys = append(keys, MetaColumnMappingPhysicalName)
		vals = append(vals, phys)
	}
	af := arrow.Field{Name: name, Type: t, Nullable: f.Nullable}
	if len(keys) > 0 {
		af.Metadata = arrow.NewMetadata(keys, vals)
	}
	return af, nil
}

func arrowType(t DataType, names Names, path string) (arrow.DataType, error) {
	switch t := t.(type) {
	case *PrimitiveType:
		switch t.Name {
		case "string":
			return arrow.BinaryTypes.String, nil
		case "long":
			return arrow.PrimitiveTypes.Int64, nil
		case "integer":
			return arrow.PrimitiveTypes.Int32, nil
		case "short":
			return arrow.PrimitiveTypes.Int16, nil
		case "byte":
			return arrow.PrimitiveTypes.Int8, nil
		case "float":
			return arrow.PrimitiveTypes.Float32, nil
		case "double":
			return arrow.PrimitiveTypes.Float64, nil
		case "boolean":
			return arrow.FixedWidthTypes.Boolean, nil
		case "binary":
			return arrow.BinaryTypes.Binary, nil
		case "date":
			return arrow.FixedWidthTypes.Date32, nil
		case "timestamp":
			return &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, nil
		case "timestamp_ntz":
			return &arrow.TimestampType{Unit: arrow.Microsecond}, nil
		case "decimal":
			return &arrow.Decimal128Type{Precision: int32(t.Precision), Scale: int32(t.Scale)}, nil
		case "void":
			return arrow.Null, nil
		}
		return nil, fmt.Errorf("column %q: delta type %s has no Arrow mapping here", path, t)
	case *StructType:
		fs, err := arrowFields(t, names, path+".")
		if err != nil {
			return nil, err
		}
		return arrow.StructOf(fs...), nil
	case *ArrayType:
		e, err := arrowType(t.ElementType, names, path+".element")
		if err != nil {
			return nil, err
		}
		return arrow.ListOfField(arrow.Field{Name: "element", Type: e, Nullable: t.ContainsNull}), nil
	case *MapType:
		k, err := arrowType(t.KeyType, names, path+".key")
		if err != nil {
			return nil, err
		}
		v, err := arrowType(t.ValueType, names, path+".value")
		if err != nil {
			return nil, err
		}
		m := arrow.MapOf(k, v)
		m.SetItemNullable(t.ValueContainsNull)
		return m, nil
	}
	return nil, fmt.Errorf("column %q: unknown delta type %T", path, t)
}

// FromArrow maps an Arrow schema to a Delta schema for a new table. Conversions are those
// that lose nothing: unsigned integers widen (uint8→short, uint16→integer, uint32→long),
// timestamps in seconds or milliseconds widen to microseconds, large and view strings and
// binaries map like their small forms. Refused, naming the column: uint64 (no lossless Delta
// type), nanosecond timestamps (Delta has none; convert first), decimals wider than 38
// digits, and types Delta has no counterpart for.
func FromArrow(s *arrow.Schema) (*StructType, error) {
	return fromArrowFields(s.Fields(), "")
}

func fromArrowFields(fields []arrow.Field, prefix string) (*StructType, error) {
	st := &StructType{Fields: make([]*StructField, 0, len(fields))}
	for _, f := range fields {
		t, err := fromArrowType(f.Type, prefix+f.Name)
		if err != nil {
			return nil, err
		}
		st.Fields = append(st.Fields, &StructField{Name: f.Name, Type: t, Nullable: f.Nullable})
	}
	return st, nil
}

func prim(name string) *PrimitiveType { return &PrimitiveType{Name: name} }

func fromArrowType(t arrow.DataType, path string) (DataType, error) {
	switch t := t.(type) {
	case *arrow.Int8Type:
		return prim("byte"), nil
	case *arrow.Int16Type, *arrow.Uint8Type:
		return prim("short"), nil
	case *arrow.Int32Type, *arrow.Uint16Type:
		return prim("integer"), nil
	case *arrow.Int64Type, *arrow.Uint32Type:
		return prim("long"), nil
	case *arrow.Float32Type:
		return prim("float"), nil
	case *arrow.Float64Type:
		return prim("double"), nil
	case *arrow.BooleanType:
		return prim("boolean"), nil
	case *arrow.StringType, *arrow.LargeStringType, *arrow.StringViewType:
		return prim("string"), nil
	case *arrow.BinaryType, *arrow.LargeBinaryType, *arrow.BinaryViewType, *arrow.FixedSizeBinaryType:
		return prim("binary"), nil
	case *arrow.Date32Type:
		return prim("date"), nil
	case *arrow.NullType:
		return prim("void"), nil
	case *arrow.TimestampType:
		if t.Unit == arrow.Nanosecond {
			return nil, fmt.Errorf("column %q: %s: Delta timestamps are microseconds; nanoseconds would be cut", path, t)
		}
		if t.TimeZone == "" {
			return prim("timestamp_ntz"), nil
		}
		return prim("timestamp"), nil
	case *arrow.Decimal128Type:
		return decimalType(t.Precision, t.Scale, path, t)
	case *arrow.Decimal256Type:
		return decimalType(t.Precision, t.Scale, path, t)
	case *arrow.StructType:
		return fromArrowFields(t.Fields(), path+".")
	case *arrow.MapType: // before ListType: a map is a list of entries
		k, err := fromArrowType(t.KeyType(), path+".key")
		if err != nil {
			return nil, err
		}
		v, err := fromArrowType(t.ItemType(), path+".value")
		if err != nil {
			return nil, err
		}
		return &MapType{KeyType: k, ValueType: v, ValueContainsNull: t.ItemField().Nullable}, nil
	case arrow.ListLikeType:
		e, err := fromArrowType(t.Elem(), path+".element")
		if err != nil {
			return nil, err
		}
		return &ArrayType{ElementType: e, ContainsNull: t.ElemField().Nullable}, nil
	}
	return nil, fmt.Errorf("column %q: Arrow type %s has no lossless Delta type", path, t)
}

func decimalType(p, s int32, path string, t arrow.DataType) (DataType, error) {
	if p < 1 || p > 38 || s < 0 || s > p {
		return nil, fmt.Errorf("column %q: %s: Delta decimals have precision 1..38 and scale 0..precision", path, t)
	}
	return &PrimitiveType{Name: "decimal", Precision: int(p), Scale: int(s)}, nil
}
