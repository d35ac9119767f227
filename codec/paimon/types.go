package paimon

import (
	"fmt"
	"strconv"
	"strings"
)

// Kind is the root of a Paimon data type, as far as the binary layout cares.
type Kind int

// Type kinds. CHAR/VARCHAR/STRING share KindString and BINARY/VARBINARY/BYTES share
// KindBytes: their lengths do not change the layout.
const (
	KindBoolean Kind = iota + 1
	KindTinyInt
	KindSmallInt
	KindInt
	KindBigInt
	KindFloat
	KindDouble
	KindDate
	KindTime
	KindString
	KindBytes
	KindDecimal
	KindTimestamp
	KindTimestampLTZ
	KindArray
	KindMap
	KindRow
)

// maxCompactPrecision is Decimal.MAX_COMPACT_PRECISION: up to it a decimal is an
// unscaled long inside its slot.
const maxCompactPrecision = 18

// Type is a Paimon data type: enough of it to read and write binary rows.
type Type struct {
	Kind      Kind
	Precision int    // DECIMAL, TIMESTAMP, TIMESTAMP_LTZ
	Scale     int    // DECIMAL
	Elem      *Type  // ARRAY
	Key, Val  *Type  // MAP
	Fields    []Type // ROW
}

var atomicNames = map[string]Kind{
	"BOOLEAN": KindBoolean, "TINYINT": KindTinyInt, "SMALLINT": KindSmallInt,
	"INT": KindInt, "INTEGER": KindInt, "BIGINT": KindBigInt, "FLOAT": KindFloat,
	"DOUBLE": KindDouble, "DATE": KindDate, "TIME": KindTime, "STRING": KindString,
	"CHAR": KindString, "VARCHAR": KindString, "BYTES": KindBytes, "BINARY": KindBytes,
	"VARBINARY": KindBytes, "DECIMAL": KindDecimal, "TIMESTAMP": KindTimestamp,
	"TIMESTAMP_LTZ": KindTimestampLTZ,
}

// ParseType parses a type in the SQL-like spelling used in the JSON model: INT, BIGINT,
// STRING, BYTES, DATE, DECIMAL(p, s), TIMESTAMP(p), TIMESTAMP_LTZ(p), ARRAY<T>,
// MAP<K, V>, ROW<T1, T2, ...>; a trailing NOT NULL is accepted and ignored.
func ParseType(s string) (Type, error) {
	p := typeParser{s: s}
	t, err := p.parse()
	if err != nil {
		return Type{}, err
	}
	p.space()
	if p.i != len(p.s) {
		return Type{}, fmt.Errorf("paimon: type %q: unexpected %q at %d", s, p.s[p.i:], p.i)
	}
	return t, nil
}

type typeParser struct {
	s string
	i int
}

func (p *typeParser) space() {
	for p.i < len(p.s) && p.s[p.i] == ' ' {
		p.i++
	}
}

func (p *typeParser) word() string {
	p.space()
	j := p.i
	for p.i < len(p.s) && (p.s[p.i] == '_' || p.s[p.i] >= 'A' && p.s[p.i] <= 'Z' || p.s[p.i] >= 'a' && p.s[p.i] <= 'z') {
		p.i++
	}
	return strings.ToUpper(p.s[j:p.i])
}

func (p *typeParser) eat(c byte) bool {
	p.space()
	if p.i < len(p.s) && p.s[p.i] == c {
		p.i++
		return true
	}
	return false
}

func (p *typeParser) num() (int, error) {
	p.space()
	j := p.i
	for p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
		p.i++
	}
	n, err := strconv.Atoi(p.s[j:p.i])
	if err != nil {
		return 0, fmt.Errorf("paimon: type %q: expected a number at %d", p.s, j)
	}
	return n, nil
}

func (p *typeParser) errf(format string, args ...any) error {
	return fmt.Errorf("paimon: type %q: %s", p.s, fmt.Sprintf(format, args...))
}

func (p *typeParser) parse() (Type, error) {
	w := p.word()
	var t Type
	switch w {
	case "ARRAY":
		if !p.eat('<') {
			return t, p.errf("ARRAY needs <element>")
		}
		e, err := p.parse()
		if err != nil {
			return t, err
		}
		if !p.eat('>') {
			return t, p.errf("ARRAY needs a closing >")
		}
		t = Type{Kind: KindArray, Elem: &e}
	case "MAP":
		if !p.eat('<') {
			return t, p.errf("MAP needs <key, value>")
		}
		k, err := p.parse()
		if err != nil {
			return t, err
		}
		if !p.eat(',') {
			return t, p.errf("MAP needs a value type")
		}
		v, err := p.parse()
		if err != nil {
			return t, err
		}
		if !p.eat('>') {
			return t, p.errf("MAP needs a closing >")
		}
		t = Type{Kind: KindMap, Key: &k, Val: &v}
	case "ROW":
		if !p.eat('<') {
			return t, p.errf("ROW needs <fields>")
		}
		t = Type{Kind: KindRow, Fields: []Type{}}
		if !p.eat('>') {
			for {
				f, err := p.parse()
				if err != nil {
					return t, err
				}
				t.Fields = append(t.Fields, f)
				if p.eat('>') {
					break
				}
				if !p.eat(',') {
					return t, p.errf("ROW fields need , or >")
				}
			}
		}
	default:
		k, ok := atomicNames[w]
		if !ok {
			return t, p.errf("unknown type %q", w)
		}
		t = Type{Kind: k}
		switch k {
		case KindDecimal:
			t.Precision, t.Scale = 10, 0
			if p.eat('(') {
				var err error
				if t.Precision, err = p.num(); err != nil {
					return t, err
				}
				if p.eat(',') {
					if t.Scale, err = p.num(); err != nil {
						return t, err
					}
				}
				if !p.eat(')') {
					return t, p.errf("DECIMAL needs a closing )")
				}
			}
			if t.Precision < 1 || t.Precision > 38 || t.Scale < 0 || t.Scale > t.Precision {
				return t, p.errf("DECIMAL(%d, %d) out of range", t.Precision, t.Scale)
			}
		case KindTimestamp, KindTimestampLTZ:
			t.Precision = 6
			if p.eat('(') {
				var err error
				if t.Precision, err = p.num(); err != nil {
					return t, err
				}
				if !p.eat(')') {
					return t, p.errf("TIMESTAMP needs a closing )")
				}
			}
			if t.Precision > 9 {
				return t, p.errf("TIMESTAMP(%d) out of range", t.Precision)
			}
		case KindString, KindBytes, KindTime:
			if p.eat('(') { // lengths and time precision do not change the layout
				if _, err := p.num(); err != nil {
					return t, err
				}
				if !p.eat(')') {
					return t, p.errf("%s needs a closing )", w)
				}
			}
		}
	}
	save := p.i
	if p.word() == "NOT" && p.word() == "NULL" {
		return t, nil
	}
	p.i = save
	return t, nil
}

// String spells the type as ParseType reads it.
func (t Type) String() string {
	switch t.Kind {
	case KindBoolean:
		return "BOOLEAN"
	case KindTinyInt:
		return "TINYINT"
	case KindSmallInt:
		return "SMALLINT"
	case KindInt:
		return "INT"
	case KindBigInt:
		return "BIGINT"
	case KindFloat:
		return "FLOAT"
	case KindDouble:
		return "DOUBLE"
	case KindDate:
		return "DATE"
	case KindTime:
		return "TIME"
	case KindString:
		return "STRING"
	case KindBytes:
		return "BYTES"
	case KindDecimal:
		return fmt.Sprintf("DECIMAL(%d, %d)", t.Precision, t.Scale)
	case KindTimestamp:
		return fmt.Sprintf("TIMESTAMP(%d)", t.Precision)
	case KindTimestampLTZ:
		return fmt.Sprintf("TIMESTAMP_LTZ(%d)", t.Precision)
	case KindArray:
		return "ARRAY<" + t.Elem.String() + ">"
	case KindMap:
		return "MAP<" + t.Key.String() + ", " + t.Val.String() + ">"
	case KindRow:
		parts := make([]string, len(t.Fields))
		for i, f := range t.Fields {
			parts[i] = f.String()
		}
		return "ROW<" + strings.Join(parts, ", ") + ">"
	}
	return fmt.Sprintf("UNKNOWN(%d)", int(t.Kind))
}

// elemSize is BinaryArray.calculateFixLengthPartSize: the width of an element slot.
func (t Type) elemSize() int {
	switch t.Kind {
	case KindBoolean, KindTinyInt:
		return 1
	case KindSmallInt:
		return 2
	case KindInt, KindFloat, KindDate, KindTime:
		return 4
	}
	return 8
}

// compact reports whether a value of this type lives wholly in its slot, so that a null
// needs no space in the variable part (RowHelper's writeNulls is the negation).
func (t Type) compact() bool {
	switch t.Kind {
	case KindDecimal:
		return t.Precision <= maxCompactPrecision
	case KindTimestamp, KindTimestampLTZ:
		return t.Precision <= 3
	}
	return true
}
