package paimon

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightgw/flightgw/catalogs"
	pcodec "github.com/flightgw/flightgw/codec/paimon"
)

// tableSchema is Paimon's TableSchema as it is stored in schema/schema-N
// (JSON, version 3).
type tableSchema struct {
	Version        int               `json:"version"`
	ID             int64             `json:"id"`
	Fields         []dataField       `json:"fields"`
	HighestFieldID int32             `json:"highestFieldId"`
	PartitionKeys  []string          `json:"partitionKeys"`
	PrimaryKeys    []string          `json:"primaryKeys"`
	Options        map[string]string `json:"options"`
	Comment        *string           `json:"comment,omitempty"`
	TimeMillis     int64             `json:"timeMillis"`

	cols []column // parsed Fields
}

// dataField is one column of a TableSchema. Type is a string for atomic
// types ("BIGINT NOT NULL") and an object for ARRAY, MAP and ROW, which
// this backend does not write.
type dataField struct {
	ID          int32           `json:"id"`
	Name        string          `json:"name"`
	Type        json.RawMessage `json:"type"`
	Description *string         `json:"description,omitempty"`
}

// column is a parsed field: its Paimon type (for binary rows), its Arrow
// type (what the table reads and writes as) and its nullability.
type column struct {
	id       int32
	name     string
	typ      pcodec.Type
	sql      string // the type's spelling without NOT NULL
	arrow    arrow.DataType
	nullable bool
}

// schemaVersion is the TableSchema version Paimon 1.x writes.
const schemaVersion = 3

// parseSchema decodes schema-N and checks that this backend can read its
// columns.
func parseSchema(table string, b []byte) (*tableSchema, error) {
	var s tableSchema
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: schema is not Paimon schema JSON: %v", table, err)
	}
	for _, f := range s.Fields {
		var spelled string
		if err := json.Unmarshal(f.Type, &spelled); err != nil {
			return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: column %q: nested type %s is not supported by this backend", table, f.Name, string(f.Type))
		}
		c, err := columnFromSQL(f.ID, f.Name, spelled)
		if err != nil {
			return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: %w", table, err)
		}
		s.cols = append(s.cols, c)
	}
	for _, k := range append(slices.Clone(s.PartitionKeys), s.PrimaryKeys...) {
		if s.index(k) < 0 {
			return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: key column %q is not in the schema", table, k)
		}
	}
	return &s, nil
}

// index returns the position of the column called name, or -1.
func (s *tableSchema) index(name string) int {
	return slices.IndexFunc(s.cols, func(c column) bool { return c.name == name })
}

// arrowSchema is the table's schema as Arrow, with the Paimon field ids in
// the field metadata (PARQUET:field_id, which the Parquet writer writes).
func (s *tableSchema) arrowSchema() *arrow.Schema {
	fs := make([]arrow.Field, len(s.cols))
	for i, c := range s.cols {
		fs[i] = arrowField(c.name, c.arrow, c.nullable, c.id)
	}
	return arrow.NewSchema(fs, nil)
}

func arrowField(name string, dt arrow.DataType, nullable bool, id int32) arrow.Field {
	return arrow.Field{Name: name, Type: dt, Nullable: nullable,
		Metadata: arrow.NewMetadata([]string{"PARQUET:field_id"}, []string{strconv.Itoa(int(id))})}
}

// columnFromSQL parses a Paimon atomic type spelling.
func columnFromSQL(id int32, name, spelled string) (column, error) {
	sql := strings.TrimSpace(spelled)
	nullable := true
	if up := strings.ToUpper(sql); strings.HasSuffix(up, " NOT NULL") {
		sql, nullable = strings.TrimSpace(sql[:len(sql)-len(" NOT NULL")]), false
	}
	up := strings.ToUpper(sql)
	c := column{id: id, name: name, sql: sql, nullable: nullable}
	bad := func() (column, error) {
		return column{}, fmt.Errorf("column %q: Paimon type %s is not supported by this backend", name, spelled)
	}
	switch {
	case up == "BOOLEAN":
		c.arrow = arrow.FixedWidthTypes.Boolean
	case up == "TINYINT":
		c.arrow = arrow.PrimitiveTypes.Int8
	case up == "SMALLINT":
		c.arrow = arrow.PrimitiveTypes.Int16
	case up == "INT" || up == "INTEGER":
		c.arrow = arrow.PrimitiveTypes.Int32
	case up == "BIGINT":
		c.arrow = arrow.PrimitiveTypes.Int64
	case up == "FLOAT":
		c.arrow = arrow.PrimitiveTypes.Float32
	case up == "DOUBLE":
		c.arrow = arrow.PrimitiveTypes.Float64
	case up == "DATE":
		c.arrow = arrow.FixedWidthTypes.Date32
	case up == "STRING" || strings.HasPrefix(up, "VARCHAR") || strings.HasPrefix(up, "CHAR"):
		c.arrow = arrow.BinaryTypes.String
	case up == "BYTES" || strings.HasPrefix(up, "VARBINARY"):
		c.arrow = arrow.BinaryTypes.Binary
	case strings.HasPrefix(up, "BINARY("):
		n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(up, "BINARY("), ")"))
		if err != nil || n < 1 {
			return bad()
		}
		c.arrow = &arrow.FixedSizeBinaryType{ByteWidth: n}
	case strings.HasPrefix(up, "DECIMAL"):
		var p, sc int
		if _, err := fmt.Sscanf(strings.ReplaceAll(up, " ", ""), "DECIMAL(%d,%d)", &p, &sc); err != nil || p < 1 || p > 38 || sc < 0 || sc > p {
			return bad()
		}
		c.arrow = &arrow.Decimal128Type{Precision: int32(p), Scale: int32(sc)}
	case strings.HasPrefix(up, "TIMESTAMP"):
		ltz := strings.HasSuffix(up, "WITH LOCAL TIME ZONE") || strings.HasPrefix(up, "TIMESTAMP_LTZ")
		p := 6
		if i := strings.Index(up, "("); i >= 0 {
			j := strings.Index(up, ")")
			n, err := strconv.Atoi(up[i+1 : max(j, i+1)])
			if err != nil {
				return bad()
			}
			p = n
		}
		unit := arrow.Microsecond
		switch {
		case p <= 3:
			unit = arrow.Millisecond
		case p > 6:
			unit = arrow.Nanosecond
		}
		ts := &arrow.TimestampType{Unit: unit}
		if ltz {
			ts.TimeZone = "UTC"
		}
		c.arrow = ts
	default:
		return bad()
	}
	t, err := pcodec.ParseType(paimonCodecSpelling(up))
	if err != nil {
		return bad()
	}
	c.typ = t
	return c, nil
}

// paimonCodecSpelling turns a schema type spelling into one the codec's
// parser reads (it names TIMESTAMP WITH LOCAL TIME ZONE TIMESTAMP_LTZ).
func paimonCodecSpelling(up string) string {
	if strings.HasSuffix(up, "WITH LOCAL TIME ZONE") {
		up = strings.TrimSpace(strings.TrimSuffix(up, "WITH LOCAL TIME ZONE"))
		return strings.Replace(up, "TIMESTAMP", "TIMESTAMP_LTZ", 1)
	}
	return up
}

// paimonType maps an Arrow column type to the Paimon type the table
// stores it as, or returns an ErrInvalidArgument naming the column.
//
// The mapping: bool → BOOLEAN; int8 → TINYINT; int16, uint8 → SMALLINT;
// int32, uint16 → INT; int64, uint32 → BIGINT; float32 → FLOAT; float64
// → DOUBLE; utf8, large_utf8, utf8_view → STRING; binary, large_binary,
// binary_view → BYTES; fixed_size_binary(n) → BINARY(n); decimal32,
// decimal64, decimal128, decimal256 with precision ≤ 38 → DECIMAL(p, s)
// (written as decimal128, conform.go); date32, date64 → DATE; timestamp
// in s, ms → TIMESTAMP(3), in us and ns → TIMESTAMP(6) (sub-microsecond
// digits round down on write, as Paimon's Timestamp.toMicros does), with
// a zone → TIMESTAMP(p) WITH LOCAL TIME ZONE. docs/paimon.md has the
// table. The rest (uint64, float16,
// time of day, durations, intervals, lists, maps, structs, unions,
// dictionaries, null) is refused.
func paimonType(name string, dt arrow.DataType) (string, error) {
	bad := func(why string) (string, error) {
		return "", catalogs.Errorf(catalogs.ErrInvalidArgument, "column %q: arrow type %s %s", name, dt, why)
	}
	switch t := dt.(type) {
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
	case *arrow.Float32Type:
		return "FLOAT", nil
	case *arrow.Float64Type:
		return "DOUBLE", nil
	case *arrow.StringType, *arrow.LargeStringType, *arrow.StringViewType:
		return "STRING", nil
	case *arrow.BinaryType, *arrow.LargeBinaryType, *arrow.BinaryViewType:
		return "BYTES", nil
	case *arrow.FixedSizeBinaryType:
		return fmt.Sprintf("BINARY(%d)", t.ByteWidth), nil
	case arrow.DecimalType:
		if t.GetPrecision() < 1 || t.GetPrecision() > 38 {
			return bad("has a precision Paimon cannot hold (at most 38)")
		}
		return fmt.Sprintf("DECIMAL(%d, %d)", t.GetPrecision(), t.GetScale()), nil
	case *arrow.Date32Type, *arrow.Date64Type:
		return "DATE", nil
	case *arrow.TimestampType:
		p := 6
		switch t.Unit {
		case arrow.Second, arrow.Millisecond:
			p = 3
		}
		if t.TimeZone != "" {
			return fmt.Sprintf("TIMESTAMP(%d) WITH LOCAL TIME ZONE", p), nil
		}
		return fmt.Sprintf("TIMESTAMP(%d)", p), nil
	case *arrow.ListType, *arrow.LargeListType, *arrow.FixedSizeListType, *arrow.MapType, *arrow.StructType:
		return bad("is not supported by the Paimon backend yet (nested types)")
	}
	return bad("is not supported: Paimon has no type that holds it without losing values")
}

// newSchema builds schema-0 of a new table from an Arrow schema and the
// table options (bucket, bucket-key, primary-key, partition and any other
// Paimon option, kept in the schema's options).
func newSchema(table string, sc *arrow.Schema, opts map[string]string, now int64) (*tableSchema, error) {
	if sc == nil || sc.NumFields() == 0 {
		return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: schema has no columns", table)
	}
	s := &tableSchema{Version: schemaVersion, Options: map[string]string{}, PartitionKeys: []string{}, PrimaryKeys: []string{}, TimeMillis: now}
	seen := map[string]bool{}
	for i, f := range sc.Fields() {
		if f.Name == "" || seen[f.Name] {
			return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: column name %q is empty or repeated", table, f.Name)
		}
		seen[f.Name] = true
		typ, err := paimonType(f.Name, f.Type)
		if err != nil {
			return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: %w", table, err)
		}
		s.Fields = append(s.Fields, dataField{ID: int32(i), Name: f.Name})
		s.Fields[i].Type, _ = json.Marshal(typ + notNull(f.Nullable))
		s.HighestFieldID = int32(i)
	}
	for k, v := range opts {
		switch k {
		case optPrimaryKey, optPartition, optBucketKey:
			keys, err := keyColumns(table, k, v, seen)
			if err != nil {
				return nil, err
			}
			switch k {
			case optPrimaryKey:
				s.PrimaryKeys = keys
			case optPartition:
				s.PartitionKeys = keys
			default:
				// Stored as Java splits it: no blanks around the names.
				s.Options[k] = strings.Join(keys, ",")
			}
		default:
			s.Options[k] = v
		}
	}
	if _, ok := s.Options[optBucket]; !ok {
		s.Options[optBucket] = "-1"
		if len(s.PrimaryKeys) > 0 {
			// A primary-key table needs fixed buckets here (dynamic
			// bucket mode keeps an index this backend does not write).
			s.Options[optBucket] = "1"
		}
	}
	s.Options[optFileFormat] = "parquet"
	// Primary-key columns are NOT NULL in Paimon.
	for i, f := range s.Fields {
		if slices.Contains(s.PrimaryKeys, f.Name) {
			var spelled string
			_ = json.Unmarshal(f.Type, &spelled)
			if !strings.HasSuffix(spelled, " NOT NULL") {
				s.Fields[i].Type, _ = json.Marshal(spelled + " NOT NULL")
			}
		}
	}
	b, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	back, err := parseSchema(table, b)
	if err != nil {
		return nil, err
	}
	if err := back.checkOptions(table); err != nil {
		return nil, err
	}
	// A table this backend would then refuse to write (the catalog's
	// table-default.* may ask for deletion vectors, another merge engine…).
	if err := back.checkWritable(tableName(table)); err != nil {
		return nil, err
	}
	return back, nil
}

// keyColumns reads a column list option of a new table (primary-key,
// partition, bucket-key) strictly, as Paimon Java splits it on commas:
// every name a column of the table, none empty, none twice.
func keyColumns(table, option, v string, columns map[string]bool) ([]string, error) {
	var out []string
	for _, k := range strings.Split(v, ",") {
		k = strings.TrimSpace(k)
		switch {
		case k == "":
			return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: option %q: %q has an empty column name", table, option, v)
		case !columns[k]:
			return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: option %q: column %q is not in the schema", table, option, k)
		case slices.Contains(out, k):
			return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: option %q: column %q is listed twice", table, option, k)
		}
		out = append(out, k)
	}
	return out, nil
}

func notNull(nullable bool) string {
	if nullable {
		return ""
	}
	return " NOT NULL"
}

func splitList(v string) []string {
	out := []string{}
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// Table options this backend reads (Paimon's CoreOptions spelling).
const (
	optBucket     = "bucket"
	optBucketKey  = "bucket-key"
	optPrimaryKey = "primary-key"
	optPartition  = "partition"
	optFileFormat = "file.format"
	optZstdLevel  = "file.compression.zstd-level"
)

// layout is what the options decide about how rows are laid out.
type layout struct {
	buckets   int   // -1: unaware (append) ; > 0: fixed
	bucketKey []int // column positions hashed into the bucket
	partition []int // partition column positions
	primary   []int // primary key column positions
}

// layout reads the table's bucket, bucket key, partition and primary key.
func (s *tableSchema) layout() layout {
	l := layout{buckets: -1}
	if n, err := strconv.Atoi(s.Options[optBucket]); err == nil {
		l.buckets = n
	}
	for _, k := range s.PartitionKeys {
		l.partition = append(l.partition, s.index(k))
	}
	for _, k := range s.PrimaryKeys {
		l.primary = append(l.primary, s.index(k))
	}
	keys := splitList(s.Options[optBucketKey])
	if len(keys) == 0 {
		// Paimon's default bucket key: the primary key without the
		// partition columns.
		for _, k := range s.PrimaryKeys {
			if !slices.Contains(s.PartitionKeys, k) {
				keys = append(keys, k)
			}
		}
	}
	for _, k := range keys {
		l.bucketKey = append(l.bucketKey, s.index(k))
	}
	return l
}

// trimmedPrimary is the primary key without the partition columns: the
// key a primary-key table's files are sorted and merged by.
func (l layout) trimmedPrimary() []int {
	var out []int
	for _, p := range l.primary {
		if !slices.Contains(l.partition, p) {
			out = append(out, p)
		}
	}
	return out
}

// checkOptions refuses the layouts this backend cannot write: what Paimon
// Java would refuse too, and the bucket modes it does not implement.
func (s *tableSchema) checkOptions(table string) error {
	for _, k := range splitList(s.Options[optBucketKey]) {
		if s.index(k) < 0 {
			return catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: bucket-key column %q is not in the schema", table, k)
		}
	}
	b, err := strconv.Atoi(s.Options[optBucket])
	if err != nil || (b != -1 && b < 1) {
		return catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: option bucket %q must be -1 (unaware) or a positive bucket count", table, s.Options[optBucket])
	}
	for _, k := range s.PartitionKeys {
		switch s.cols[s.index(k)].typ.Kind {
		case pcodec.KindString, pcodec.KindBoolean, pcodec.KindTinyInt, pcodec.KindSmallInt, pcodec.KindInt, pcodec.KindBigInt, pcodec.KindDate:
		default:
			// Paimon names a partition directory after the value's Java
			// toString; only these types are spelled the same here.
			return catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: partition column %q: type %s cannot be a partition column here (string, integer, boolean or date)", table, k, s.cols[s.index(k)].sql)
		}
	}
	l := s.layout()
	if len(s.PrimaryKeys) > 0 && len(l.trimmedPrimary()) == 0 {
		// Paimon's Schema refuses it: a partition would hold one row.
		return catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: option %q %v has only partition columns (option %q %v): it needs a column besides them",
			table, optPrimaryKey, s.PrimaryKeys, optPartition, s.PartitionKeys)
	}
	if b > 0 && len(l.bucketKey) == 0 {
		return catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: a fixed bucket count needs a bucket-key (or a primary-key)", table)
	}
	if bk := splitList(s.Options[optBucketKey]); len(bk) > 0 && b == -1 {
		// Paimon's SchemaValidation.validateBucket refuses it too.
		return catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: option %q %v needs a fixed bucket count (option %q > 0), not bucket -1", table, optBucketKey, bk, optBucket)
	}
	for _, k := range splitList(s.Options[optBucketKey]) {
		if slices.Contains(s.PartitionKeys, k) {
			// Every row of a partition would hash to one bucket; Paimon's
			// TableSchema refuses it (its writers would fail on the table).
			return catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: option %q: column %q is a partition column", table, optBucketKey, k)
		}
	}
	if len(s.PrimaryKeys) > 0 && b == -1 {
		return catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: a primary-key table needs a fixed bucket count (option bucket > 0)", table)
	}
	if len(s.PrimaryKeys) > 0 {
		for _, p := range s.PartitionKeys {
			if !slices.Contains(s.PrimaryKeys, p) {
				return catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: primary key %v must contain partition column %q", table, s.PrimaryKeys, p)
			}
		}
		for _, k := range splitList(s.Options[optBucketKey]) {
			if !slices.Contains(s.PrimaryKeys, k) {
				return catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: bucket-key column %q must be part of the primary key", table, k)
			}
		}
	}
	if _, err := parseManifestOptions(s.Options); err != nil {
		return catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: %v", table, err)
	}
	if f := s.Options[optFileFormat]; f != "" && f != "parquet" {
		return catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: file.format %q: this backend reads and writes parquet only", table, f)
	}
	return nil
}

// fieldMetadata is the table's columns for TableSpec.SchemaSpec. Paimon
// numbers fields from 0; the spec's ids are the Paimon ids plus one, so
// that every id is non-zero as the contract wants.
func (s *tableSchema) fieldMetadata() []catalogs.FieldMetadata {
	out := make([]catalogs.FieldMetadata, len(s.cols))
	for i, c := range s.cols {
		out[i] = catalogs.FieldMetadata{ID: c.id + 1, Name: c.name, DataType: c.arrow, Nullable: c.nullable}
	}
	return out
}

// maxBuckets bounds a client's fixed bucket count: every bucket is a
// directory and a writer per upload.
const maxBuckets = 4096

// checkClientOptions refuses table options a client may not set. Options
// are stored in the table's schema, where every Paimon reader and writer
// (Paimon Java jobs included) obeys them: an option such as
// data-file.external-paths would send other writers' files outside the
// table. A client sets the table's layout only; everything else is the
// catalog's table-default.* (the operator's).
func checkClientOptions(t catalogs.TableIdent, opts map[string]string) error {
	for k, v := range opts {
		switch k {
		case optPrimaryKey, optPartition, optBucketKey:
		case optBucket:
			n, err := strconv.Atoi(v)
			if err != nil || n == 0 || n < -1 || n > maxBuckets {
				return catalogs.Errorf(catalogs.ErrInvalidArgument,
					"table %s: option %q: %q is not -1 or a bucket count from 1 to %d", t, k, v, maxBuckets)
			}
		default:
			return catalogs.Errorf(catalogs.ErrInvalidArgument,
				"table %s: option %q cannot be set by a client (allowed: %s, %s, %s, %s; others are the catalog's table-default.*)",
				t, k, optBucket, optBucketKey, optPrimaryKey, optPartition)
		}
	}
	return nil
}
