package iceberg

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	ice "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/flightgw/flightgw/catalogs"
)

// storedType maps an Arrow type to the Arrow type an Iceberg table stores
// for it, or returns an ErrInvalidArgument naming the column at path.
//
// The mapping: bool; int8, int16, int32, uint8, uint16 → int (int32);
// int64, uint32 → long (int64); float32, float64; utf8 and large_utf8 →
// string; binary and large_binary → binary; fixed_size_binary → fixed;
// decimal (precision ≤ 38) → decimal; date32 and date64 → date;
// time64[us] → time; timestamp in s, ms or us → timestamp in us, with a
// zone → timestamptz; timestamp in ns → timestamp_ns (timestamptz_ns) on a
// table of format version 3 (nanos), and timestamp in us below it, where a
// write refuses a value with sub-microsecond digits (internal/arrowconv);
// list, large_list, fixed_size_list → list; struct; map. Everything else
// (uint64, float16, durations, intervals, unions, dictionaries, null) is
// rejected, since Iceberg cannot hold it without losing values.
func storedType(path string, dt arrow.DataType, nanos bool) (arrow.DataType, error) {
	bad := func(why string) error {
		return catalogs.Errorf(catalogs.ErrInvalidArgument, "column %q: arrow type %s %s", path, dt, why)
	}
	switch t := dt.(type) {
	case *arrow.BooleanType, *arrow.Int32Type, *arrow.Int64Type, *arrow.Float32Type, *arrow.Float64Type,
		*arrow.StringType, *arrow.BinaryType, *arrow.Date32Type:
		return dt, nil
	case *arrow.Int8Type, *arrow.Int16Type, *arrow.Uint8Type, *arrow.Uint16Type:
		return arrow.PrimitiveTypes.Int32, nil
	case *arrow.Uint32Type:
		return arrow.PrimitiveTypes.Int64, nil
	case *arrow.LargeStringType:
		return arrow.BinaryTypes.String, nil
	case *arrow.LargeBinaryType:
		return arrow.BinaryTypes.Binary, nil
	case *arrow.FixedSizeBinaryType:
		return dt, nil
	case *arrow.Date64Type:
		return arrow.FixedWidthTypes.Date32, nil
	case *arrow.Time64Type:
		if t.Unit != arrow.Microsecond {
			return nil, bad("is not supported: Iceberg time is in microseconds")
		}
		return dt, nil
	case *arrow.TimestampType:
		unit := arrow.Microsecond
		if nanos && t.Unit == arrow.Nanosecond {
			unit = arrow.Nanosecond
		}
		if t.TimeZone == "" {
			return &arrow.TimestampType{Unit: unit}, nil
		}
		return &arrow.TimestampType{Unit: unit, TimeZone: "UTC"}, nil
	case arrow.DecimalType:
		if t.GetPrecision() > 38 || t.GetPrecision() < 1 {
			return nil, bad("has a precision Iceberg cannot hold (at most 38)")
		}
		return &arrow.Decimal128Type{Precision: t.GetPrecision(), Scale: t.GetScale()}, nil
	case *arrow.ListType:
		return storedList(path, t.ElemField(), nanos)
	case *arrow.LargeListType:
		return storedList(path, t.ElemField(), nanos)
	case *arrow.FixedSizeListType:
		return storedList(path, t.ElemField(), nanos)
	case *arrow.StructType:
		if t.NumFields() == 0 {
			return nil, bad("has no fields")
		}
		fields := make([]arrow.Field, t.NumFields())
		seen := map[string]bool{}
		for i, f := range t.Fields() {
			if f.Name == "" || seen[f.Name] {
				return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "column %q: field name %q is empty or repeated", path, f.Name)
			}
			seen[f.Name] = true
			ft, err := storedType(path+"."+f.Name, f.Type, nanos)
			if err != nil {
				return nil, err
			}
			fields[i] = arrow.Field{Name: f.Name, Type: ft, Nullable: f.Nullable}
		}
		return arrow.StructOf(fields...), nil
	case *arrow.MapType:
		kt, err := storedType(path+".key", t.KeyType(), nanos)
		if err != nil {
			return nil, err
		}
		vt, err := storedType(path+".value", t.ItemField().Type, nanos)
		if err != nil {
			return nil, err
		}
		m := arrow.MapOf(kt, vt)
		m.SetItemNullable(t.ItemField().Nullable)
		return m, nil
	case arrow.ExtensionType:
		if t.ExtensionName() == "arrow.uuid" {
			return dt, nil
		}
		return nil, bad("is an extension type Iceberg cannot hold")
	default:
		return nil, bad("cannot be stored in an Iceberg table")
	}
}

func storedList(path string, elem arrow.Field, nanos bool) (arrow.DataType, error) {
	et, err := storedType(path+".element", elem.Type, nanos)
	if err != nil {
		return nil, err
	}
	return arrow.ListOfField(arrow.Field{Name: "element", Type: et, Nullable: elem.Nullable}), nil
}

// icebergSchema converts an Arrow schema to a fresh Iceberg schema with
// field ids assigned, for a table of the given format version, naming the
// first column that cannot be stored.
func icebergSchema(sc *arrow.Schema, formatVersion int) (*ice.Schema, error) {
	if sc == nil || sc.NumFields() == 0 {
		return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "schema has no columns")
	}
	fields := make([]arrow.Field, sc.NumFields())
	seen := map[string]bool{}
	for i, f := range sc.Fields() {
		if f.Name == "" {
			return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "column %d: name is empty", i)
		}
		if seen[f.Name] {
			return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "column %q: appears twice", f.Name)
		}
		seen[f.Name] = true
		t, err := storedType(f.Name, f.Type, formatVersion >= 3)
		if err != nil {
			return nil, err
		}
		fields[i] = arrow.Field{Name: f.Name, Type: t, Nullable: f.Nullable, Metadata: docOnly(f.Metadata)}
	}
	var out *ice.Schema
	err := protect(catalogs.ErrInvalidArgument, "convert schema", func() (err error) {
		out, err = table.ArrowSchemaToIcebergWithFreshIDs(arrow.NewSchema(fields, nil), false)
		return err
	})
	if err != nil {
		return nil, mapErr(err, "convert schema")
	}
	return out, nil
}

// docOnly keeps a column comment, dropping field ids a client may have set
// (the table assigns its own).
func docOnly(md arrow.Metadata) arrow.Metadata {
	if i := md.FindKey("doc"); i >= 0 {
		return arrow.NewMetadata([]string{"doc"}, []string{md.Values()[i]})
	}
	return arrow.Metadata{}
}

// arrowSchema renders an Iceberg schema as Arrow, with or without the
// Parquet field-id metadata on every field.
func arrowSchema(sc *ice.Schema, withIDs bool) (*arrow.Schema, error) {
	var out *arrow.Schema
	err := protect(catalogs.ErrInvalidArgument, "convert schema", func() (err error) {
		out, err = table.SchemaToArrowSchema(sc, nil, withIDs, false)
		return err
	})
	return out, err
}

// tableSpec describes a loaded table.
func tableSpec(tbl *table.Table) (catalogs.TableSpec, error) {
	meta := tbl.Metadata()
	sc := meta.CurrentSchema()
	asc, err := arrowSchema(sc, false)
	if err != nil {
		return catalogs.TableSpec{}, mapErr(err, fmt.Sprintf("table %s: schema", tbl.Identifier()))
	}
	spec := catalogs.TableSpec{
		Schema: asc,
		SchemaSpec: catalogs.SchemaSpec{
			SchemaVersion: uint64(max(0, sc.ID)),
			TimestampMs:   meta.LastUpdatedMillis(),
		},
		Properties: map[string]string{},
	}
	for i, f := range sc.Fields() {
		fm := catalogs.FieldMetadata{ID: int32(f.ID), Name: f.Name, DataType: asc.Field(i).Type, Nullable: !f.Required}
		if f.Doc != "" {
			doc := f.Doc
			fm.Doc = &doc
		}
		spec.SchemaSpec.Fields = append(spec.SchemaSpec.Fields, fm)
	}
	ps := meta.PartitionSpec()
	spec.PartitionSpec = catalogs.PartitionSpec{SpecID: int32(ps.ID()), Fields: []catalogs.PartitionField{}}
	for _, f := range ps.Fields() {
		src := 0
		if len(f.SourceIDs) > 0 {
			src = f.SourceIDs[0]
		}
		spec.PartitionSpec.Fields = append(spec.PartitionSpec.Fields, catalogs.PartitionField{
			SourceID: int32(src), Name: f.Name, Transform: transformOf(f.Transform),
		})
	}
	for k, v := range meta.Properties() {
		spec.Properties[k] = v
	}
	if s := meta.CurrentSnapshot(); s != nil {
		id := s.SnapshotID
		spec.CurrentSnapshotID = &id
	}
	return spec, nil
}

func transformOf(t ice.Transform) catalogs.PartitionTransform {
	switch t := t.(type) {
	case ice.IdentityTransform:
		return catalogs.PartitionTransform{Kind: catalogs.TransformIdentity}
	case ice.BucketTransform:
		return catalogs.PartitionTransform{Kind: catalogs.TransformBucket, Param: uint32(max(0, t.NumBuckets))}
	case ice.TruncateTransform:
		return catalogs.PartitionTransform{Kind: catalogs.TransformTruncate, Param: uint32(max(0, t.Width))}
	case ice.YearTransform:
		return catalogs.PartitionTransform{Kind: catalogs.TransformYear}
	case ice.MonthTransform:
		return catalogs.PartitionTransform{Kind: catalogs.TransformMonth}
	case ice.DayTransform:
		return catalogs.PartitionTransform{Kind: catalogs.TransformDay}
	case ice.HourTransform:
		return catalogs.PartitionTransform{Kind: catalogs.TransformHour}
	default:
		name := "unknown"
		if t != nil {
			name = t.String()
		}
		return catalogs.PartitionTransform{Kind: catalogs.TransformUnknown, Name: name}
	}
}

// fieldID reads the Parquet field id of an Arrow field, -1 when absent.
func fieldID(f arrow.Field) int {
	if i := f.Metadata.FindKey(table.ArrowParquetFieldIDKey); i >= 0 {
		if id, err := strconv.Atoi(f.Metadata.Values()[i]); err == nil {
			return id
		}
	}
	return -1
}

// columnNames lists the top-level column names of a schema.
func columnNames(sc *arrow.Schema) []string {
	out := make([]string, 0, sc.NumFields())
	for _, f := range sc.Fields() {
		out = append(out, f.Name)
	}
	return slices.Clip(out)
}
