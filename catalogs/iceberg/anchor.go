package iceberg

import (
	ice "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// iceberg-go reads each data file with only the Parquet columns whose field
// ids the projection (and the row filter) names: arrowScan.prepareToRead
// prunes the file's schema with PrunedSchema, and when none of the ids is
// in the file (a projection of columns added after the file was written)
// the column list is empty and pqarrow's FileReader.GetRecordReader fails
// with "no leaf column readers matched col indices" instead of returning
// the file's rows as nulls. An empty projection reads every column
// instead (WithSelectedFields() selects "*").
//
// Scan avoids both by reading an anchor column along: one that is in every
// data file, so every file yields its rows, which ToRequestedSchema fills
// with nulls for the columns the file lacks. Scan drops the anchor from
// the batches.

// anchorColumn returns the name, in sc (the schema the scan reads with), of
// a column to read besides cols, or "" when cols need none: when one of
// their leaf fields is in every schema the table has had, and so in every
// data file written by a writer of the table. The anchor is the top-level
// column of sc present in the most schemas (all of them whenever one is),
// the cheapest to read among those.
func anchorColumn(md table.Metadata, sc *ice.Schema, cols []string) string {
	if sc == nil {
		return ""
	}
	schemas := md.Schemas()
	inAll := func(id int) bool {
		for _, s := range schemas {
			if _, ok := s.FindFieldByID(id); !ok {
				return false
			}
		}
		return true
	}
	requested := make(map[string]bool, len(cols))
	for _, c := range cols {
		f, ok := sc.FindFieldByName(c)
		if !ok {
			return "" // iceberg-go reports the missing column
		}
		// A nested path "a.b" reads column a: a is no anchor.
		requested[c] = true
		for i := range c {
			if c[i] == '.' {
				requested[c[:i]] = true
			}
		}
		for _, id := range leafIDs(f) {
			if inAll(id) {
				return ""
			}
		}
	}
	best, bestIn, bestCost := "", 0, 0
	for _, f := range sc.Fields() {
		if requested[f.Name] {
			continue
		}
		in := 0
		for _, s := range schemas {
			if _, ok := s.FindFieldByID(f.ID); ok {
				in++
			}
		}
		cost := readCost(f.Type)
		if in == 0 {
			continue
		}
		if best == "" || in > bestIn || (in == bestIn && cost < bestCost) {
			best, bestIn, bestCost = f.Name, in, cost
		}
	}
	return best
}

// leafIDs returns the field ids of f's primitive leaves (f's own id when
// it is primitive).
func leafIDs(f ice.NestedField) []int {
	var out []int
	var walk func(id int, t ice.Type)
	walk = func(id int, t ice.Type) {
		switch t := t.(type) {
		case *ice.StructType:
			for _, c := range t.FieldList {
				walk(c.ID, c.Type)
			}
		case *ice.ListType:
			walk(t.ElementID, t.Element)
		case *ice.MapType:
			walk(t.KeyID, t.KeyType)
			walk(t.ValueID, t.ValueType)
		default:
			out = append(out, id)
		}
	}
	walk(f.ID, f.Type)
	return out
}

// readCost ranks types by what reading a column of them costs: fixed-width
// primitives by width, then variable-width ones, then nested types.
func readCost(t ice.Type) int {
	switch t := t.(type) {
	case ice.BooleanType:
		return 1
	case ice.Int32Type, ice.Float32Type, ice.DateType:
		return 4
	case ice.Int64Type, ice.Float64Type, ice.TimeType, ice.TimestampType, ice.TimestampTzType,
		ice.TimestampNsType, ice.TimestampTzNsType:
		return 8
	case ice.DecimalType, ice.UUIDType:
		return 16
	case ice.FixedType:
		return 16 + t.Len()
	case ice.StringType, ice.BinaryType:
		return 1 << 16
	default:
		return 1 << 20
	}
}

// scanSchema is the schema iceberg-go projects with: the snapshot's own
// schema for a scan of a given snapshot (Scan.effectiveSchema), the
// current one otherwise.
func scanSchema(md table.Metadata, snap *table.Snapshot, snapshotScan bool) *ice.Schema {
	if snapshotScan && snap != nil && snap.SchemaID != nil {
		for _, s := range md.Schemas() {
			if s.ID == *snap.SchemaID {
				return s
			}
		}
	}
	return md.CurrentSchema()
}
