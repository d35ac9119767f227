package delta

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Schema serialization format (PROTOCOL.md appendix): a subset of Spark SQL's JSON schema.

// DataType is a Delta type: a *PrimitiveType, *StructType, *ArrayType or *MapType.
type DataType interface {
	isDataType()
	// String is the type as Spark prints it in messages, e.g. `array<decimal(10,2)>`.
	String() string
}

// PrimitiveType is a named primitive: string, long, integer, short, byte, float, double,
// boolean, binary, date, timestamp, timestamp_ntz, void, variant, or decimal(p,s).
type PrimitiveType struct {
	Name      string // "decimal" for decimals
	Precision int    // decimals only
	Scale     int
}

// StructType is a struct; the table schema is one.
type StructType struct {
	Fields []*StructField
}

// StructField is one column or nested field. Metadata holds the column metadata as raw
// JSON values (delta.columnMapping.id is a number, physicalName a string, ...).
type StructField struct {
	Name     string
	Type     DataType
	Nullable bool
	Metadata map[string]json.RawMessage
}

// ArrayType is an array.
type ArrayType struct {
	ElementType  DataType
	ContainsNull bool
}

// MapType is a map.
type MapType struct {
	KeyType           DataType
	ValueType         DataType
	ValueContainsNull bool
}

func (*PrimitiveType) isDataType() {}
func (*StructType) isDataType()    {}
func (*ArrayType) isDataType()     {}
func (*MapType) isDataType()       {}

func (p *PrimitiveType) String() string {
	if p.Name == "decimal" {
		return fmt.Sprintf("decimal(%d,%d)", p.Precision, p.Scale)
	}
	return p.Name
}

func (s *StructType) String() string {
	parts := make([]string, len(s.Fields))
	for i, f := range s.Fields {
		parts[i] = f.Name + ":" + f.Type.String()
	}
	return "struct<" + strings.Join(parts, ",") + ">"
}

func (a *ArrayType) String() string { return "array<" + a.ElementType.String() + ">" }
func (m *MapType) String() string {
	return "map<" + m.KeyType.String() + "," + m.ValueType.String() + ">"
}

// Column metadata keys the protocol defines for column mapping.
const (
	MetaColumnMappingID           = "delta.columnMapping.id"
	MetaColumnMappingPhysicalName = "delta.columnMapping.physicalName"
)

// ColumnMappingID is the field's delta.columnMapping.id, if it has one.
func (f *StructField) ColumnMappingID() (int32, bool, error) {
	raw, ok := f.Metadata[MetaColumnMappingID]
	if !ok || isNull(raw) {
		return 0, false, nil
	}
	var id int32
	if err := json.Unmarshal(raw, &id); err != nil {
		return 0, false, fmt.Errorf("%w: field %q: %s is not a 32-bit integer: %s", ErrMalformed, f.Name, MetaColumnMappingID, raw)
	}
	return id, true, nil
}

// PhysicalName is the field's delta.columnMapping.physicalName, or its name when it has none.
func (f *StructField) PhysicalName() (string, error) {
	raw, ok := f.Metadata[MetaColumnMappingPhysicalName]
	if !ok || isNull(raw) {
		return f.Name, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil || s == "" {
		return "", fmt.Errorf("%w: field %q: %s is not a non-empty string: %s", ErrMalformed, f.Name, MetaColumnMappingPhysicalName, raw)
	}
	return s, nil
}

// Field returns the top-level field named name (exactly), or nil.
func (s *StructType) Field(name string) *StructField {
	for _, f := range s.Fields {
		if f.Name == name {
			return f
		}
	}
	return nil
}

// maxSchemaDepth bounds nesting, so a hostile schema cannot exhaust the stack.
const maxSchemaDepth = 64

var decimalRe = regexp.MustCompile(`^decimal\(\s*(\d+)\s*,\s*(-?\d+)\s*\)$`)

var primitives = map[string]bool{
	"string": true, "long": true, "integer": true, "short": true, "byte": true,
	"float": true, "double": true, "boolean": true, "binary": true, "date": true,
	"timestamp": true, "timestamp_ntz": true, "void": true, "variant": true,
}

// ParseSchema decodes a metaData.schemaString. Column names must be unique regardless of
// case within each struct, as the protocol requires.
func ParseSchema(schemaString string) (*StructType, error) {
	t, err := parseType(json.RawMessage(schemaString), 0)
	if err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	st, ok := t.(*StructType)
	if !ok {
		return nil, fmt.Errorf("schema: %w: the table schema is a %s, not a struct", ErrMalformed, t)
	}
	return st, nil
}

func parseType(raw json.RawMessage, depth int) (DataType, error) {
	if depth > maxSchemaDepth {
		return nil, fmt.Errorf("%w: types nested deeper than %d", ErrMalformed, maxSchemaDepth)
	}
	var name string
	if json.Unmarshal(raw, &name) == nil {
		return parsePrimitive(name)
	}
	o := newObj("type", raw)
	kind := o.str("type", true)
	if o.err != nil {
		return nil, o.err
	}
	switch kind {
	case "struct":
		var fields []json.RawMessage
		if r := o.field("fields", true); r != nil {
			o.decode("fields", r, &fields)
		}
		if o.err != nil {
			return nil, o.err
		}
		st := &StructType{Fields: make([]*StructField, 0, len(fields))}
		seen := map[string]bool{}
		for i, fr := range fields {
			f, err := parseField(fr, depth)
			if err != nil {
				return nil, fmt.Errorf("field %d: %w", i, err)
			}
			low := strings.ToLower(f.Name)
			if seen[low] {
				return nil, fmt.Errorf("%w: column %q appears twice (names are unique regardless of case)", ErrMalformed, f.Name)
			}
			seen[low] = true
			st.Fields = append(st.Fields, f)
		}
		return st, nil
	case "array":
		et := o.field("elementType", true)
		cn := o.boolean("containsNull", true)
		if o.err != nil {
			return nil, o.err
		}
		e, err := parseType(et, depth+1)
		if err != nil {
			return nil, fmt.Errorf("array element: %w", err)
		}
		return &ArrayType{ElementType: e, ContainsNull: cn}, nil
	case "map":
		kt := o.field("keyType", true)
		vt := o.field("valueType", true)
		vn := o.boolean("valueContainsNull", true)
		if o.err != nil {
			return nil, o.err
		}
		k, err := parseType(kt, depth+1)
		if err != nil {
			return nil, fmt.Errorf("map key: %w", err)
		}
		v, err := parseType(vt, depth+1)
		if err != nil {
			return nil, fmt.Errorf("map value: %w", err)
		}
		return &MapType{KeyType: k, ValueType: v, ValueContainsNull: vn}, nil
	default:
		// {"type":"variant"} and other primitives written as objects.
		return parsePrimitive(kind)
	}
}

func parsePrimitive(name string) (*PrimitiveType, error) {
	if primitives[name] {
		return &PrimitiveType{Name: name}, nil
	}
	if name == "decimal" { // Spark's default decimal
		return &PrimitiveType{Name: "decimal", Precision: 10, Scale: 0}, nil
	}
	if m := decimalRe.FindStringSubmatch(name); m != nil {
		p, err1 := strconv.Atoi(m[1])
		s, err2 := strconv.Atoi(m[2])
		if err1 != nil || err2 != nil || p < 1 || p > 38 || s < 0 || s > p {
			return nil, fmt.Errorf("%w: %s: precision must be 1..38 and scale 0..precision", ErrMalformed, name)
		}
		return &PrimitiveType{Name: "decimal", Precision: p, Scale: s}, nil
	}
	return nil, fmt.Errorf("%w: unknown type %q", ErrMalformed, name)
}

func parseField(raw json.RawMessage, depth int) (*StructField, error) {
	o := newObj("field", raw)
	f := &StructField{
		Name:     o.str("name", true),
		Nullable: o.boolean("nullable", true),
	}
	tr := o.field("type", true)
	if r := o.field("metadata", false); r != nil {
		o.decode("metadata", r, &f.Metadata)
	}
	if o.err != nil {
		return nil, o.err
	}
	if f.Metadata == nil {
		f.Metadata = map[string]json.RawMessage{}
	}
	// Compacted, so that the schema written back reads as the same value.
	for k, v := range f.Metadata {
		var b bytes.Buffer
		if err := json.Compact(&b, v); err != nil {
			return nil, fmt.Errorf("%w: column %q metadata %q: %v", ErrMalformed, f.Name, k, err)
		}
		f.Metadata[k] = b.Bytes()
	}
	t, err := parseType(tr, depth+1)
	if err != nil {
		return nil, fmt.Errorf("column %q: %w", f.Name, err)
	}
	f.Type = t
	return f, nil
}

// MarshalJSON writes the schema serialization format.
func (s *StructType) MarshalJSON() ([]byte, error) {
	type field struct {
		Name     string                     `json:"name"`
		Type     json.RawMessage            `json:"type"`
		Nullable bool                       `json:"nullable"`
		Metadata map[string]json.RawMessage `json:"metadata"`
	}
	fs := make([]field, len(s.Fields))
	for i, f := range s.Fields {
		t, err := marshalType(f.Type)
		if err != nil {
			return nil, err
		}
		md := f.Metadata
		if md == nil {
			md = map[string]json.RawMessage{}
		}
		fs[i] = field{f.Name, t, f.Nullable, md}
	}
	return marshalPlain(struct {
		Type   string  `json:"type"`
		Fields []field `json:"fields"`
	}{"struct", fs})
}

func marshalType(t DataType) (json.RawMessage, error) {
	switch t := t.(type) {
	case *PrimitiveType:
		return marshalPlain(t.String())
	case *StructType:
		return t.MarshalJSON()
	case *ArrayType:
		e, err := marshalType(t.ElementType)
		if err != nil {
			return nil, err
		}
		return marshalPlain(struct {
			Type         string          `json:"type"`
			ElementType  json.RawMessage `json:"elementType"`
			ContainsNull bool            `json:"containsNull"`
		}{"array", e, t.ContainsNull})
	case *MapType:
		k, err := marshalType(t.KeyType)
		if err != nil {
			return nil, err
		}
		v, err := marshalType(t.ValueType)
		if err != nil {
			return nil, err
		}
		return marshalPlain(struct {
			Type              string          `json:"type"`
			KeyType           json.RawMessage `json:"keyType"`
			ValueType         json.RawMessage `json:"valueType"`
			ValueContainsNull bool            `json:"valueContainsNull"`
		}{"map", k, v, t.ValueContainsNull})
	default:
		return nil, fmt.Errorf("delta: unknown data type %T", t)
	}
}

// SchemaString encodes the schema for metaData.schemaString.
func (s *StructType) SchemaString() (string, error) {
	b, err := s.MarshalJSON()
	return string(b), err
}
