package handlers

import (
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/engine"
)

// insertStmt is a parsed INSERT INTO target [(columns)] source.
type insertStmt struct {
	catalog, schema, table string
	// columns lists the target columns; nil means all, in table order.
	columns []string
	// source is the rest of the statement: VALUES ... or a query.
	source string
	// placeholders is n when the source is exactly VALUES (?, ..., ?)
	// with n placeholders: the parameter batches are then the rows.
	placeholders int
}

// isInsert reports whether a statement starts with INSERT.
func isInsert(query string) bool { return engine.StatementKind(query) == "INSERT" }

// parseInsert parses the head of an INSERT statement. The source is left
// to the engine, which parses it as a query.
func parseInsert(query string) (*insertStmt, error) {
	s := skipSQLSpace(query)
	for _, kw := range []string{"INSERT", "INTO"} {
		if len(s) < len(kw) || !strings.EqualFold(s[:len(kw)], kw) || len(s) > len(kw) && isIdentChar(s[len(kw)]) {
			return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "INSERT: expected %s near %q", kw, clip(s))
		}
		s = skipSQLSpace(s[len(kw):])
	}
	var parts []string
	for {
		id, rest, err := identifier(s)
		if err != nil {
			return nil, err
		}
		parts = append(parts, id)
		s = skipSQLSpace(rest)
		if !strings.HasPrefix(s, ".") {
			break
		}
		s = skipSQLSpace(s[1:])
	}
	st := &insertStmt{}
	switch len(parts) {
	case 1:
		st.table = parts[0]
	case 2:
		st.schema, st.table = parts[0], parts[1]
	case 3:
		st.catalog, st.schema, st.table = parts[0], parts[1], parts[2]
	default:
		return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "INSERT: table name %q has too many parts", strings.Join(parts, "."))
	}
	// A column list, unless the parenthesis opens a query.
	if strings.HasPrefix(s, "(") && !startsQuery(skipSQLSpace(s[1:])) {
		s = skipSQLSpace(s[1:])
		for {
			id, rest, err := identifier(s)
			if err != nil {
				return nil, err
			}
			st.columns = append(st.columns, id)
			s = skipSQLSpace(rest)
			if strings.HasPrefix(s, ",") {
				s = skipSQLSpace(s[1:])
				continue
			}
			if !strings.HasPrefix(s, ")") {
				return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "INSERT: expected , or ) in the column list near %q", clip(s))
			}
			s = skipSQLSpace(s[1:])
			break
		}
	}
	st.source = strings.TrimRight(strings.TrimSpace(s), ";")
	if st.source == "" {
		return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "INSERT into %s: no VALUES or query", st.table)
	}
	st.placeholders = placeholderRow(st.source)
	return st, nil
}

func startsQuery(s string) bool {
	k := engine.StatementKind(s)
	return k == "SELECT" || k == "WITH" || k == "VALUES" || k == "FROM"
}

// placeholderRow returns n when src is VALUES (?, ..., ?) with n
// placeholders, else 0.
func placeholderRow(src string) int {
	s := skipSQLSpace(src)
	if len(s) < 6 || !strings.EqualFold(s[:6], "VALUES") {
		return 0
	}
	s = skipSQLSpace(s[6:])
	if !strings.HasPrefix(s, "(") {
		return 0
	}
	s = s[1:]
	n := 0
	for {
		s = skipSQLSpace(s)
		if !strings.HasPrefix(s, "?") {
			return 0
		}
		n++
		s = skipSQLSpace(s[1:])
		switch {
		case strings.HasPrefix(s, ","):
			s = s[1:]
		case strings.HasPrefix(s, ")"):
			if skipSQLSpace(s[1:]) != "" {
				return 0
			}
			return n
		default:
			return 0
		}
	}
}

// identifier reads a bare or double-quoted identifier.
func identifier(s string) (string, string, error) {
	if strings.HasPrefix(s, `"`) {
		var b strings.Builder
		for i := 1; i < len(s); i++ {
			if s[i] == '"' {
				if i+1 < len(s) && s[i+1] == '"' {
					b.WriteByte('"')
					i++
					continue
				}
				if b.Len() == 0 {
					return "", "", catalogs.Errorf(catalogs.ErrInvalidArgument, "INSERT: empty quoted identifier")
				}
				return b.String(), s[i+1:], nil
			}
			b.WriteByte(s[i])
		}
		return "", "", catalogs.Errorf(catalogs.ErrInvalidArgument, "INSERT: unterminated quoted identifier")
	}
	end := 0
	for end < len(s) && isIdentChar(s[end]) && (end > 0 || !(s[0] >= '0' && s[0] <= '9' || s[0] == '$')) {
		end++
	}
	if end == 0 {
		return "", "", catalogs.Errorf(catalogs.ErrInvalidArgument, "INSERT: expected a name near %q", clip(s))
	}
	return s[:end], s[end:], nil
}

// isIdentChar reports whether c can be part of a bare identifier.
func isIdentChar(c byte) bool {
	return c == '_' || c == '$' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func skipSQLSpace(s string) string {
	for {
		s = strings.TrimLeft(s, " \t\r\n\f")
		switch {
		case strings.HasPrefix(s, "--"):
			i := strings.IndexByte(s, '\n')
			if i < 0 {
				return ""
			}
			s = s[i+1:]
		case strings.HasPrefix(s, "/*"):
			i := strings.Index(s, "*/")
			if i < 0 {
				return ""
			}
			s = s[i+2:]
		default:
			return s
		}
	}
}

func clip(s string) string {
	if len(s) > 30 {
		return s[:30] + "..."
	}
	return s
}

// targetFields returns the table fields the INSERT writes, in its order.
func (st *insertStmt) targetFields(table catalogs.TableIdent, schema *arrow.Schema) ([]arrow.Field, error) {
	if st.columns == nil {
		return schema.Fields(), nil
	}
	out := make([]arrow.Field, 0, len(st.columns))
	seen := map[string]bool{}
	for _, c := range st.columns {
		idx := -1
		for i, f := range schema.Fields() {
			if strings.EqualFold(f.Name, c) {
				idx = i
			}
		}
		if idx < 0 {
			return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "INSERT into %s: column %q does not exist", table, c)
		}
		f := schema.Field(idx)
		if seen[f.Name] {
			return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "INSERT into %s: column %q listed twice", table, c)
		}
		seen[f.Name] = true
		out = append(out, f)
	}
	return out, nil
}

// castQuery wraps the INSERT's source into a query whose columns are the
// table's, by name and type: listed columns from the source in order,
// the others NULL.
func (st *insertStmt) castQuery(schema *arrow.Schema, fields []arrow.Field) string {
	var aliases, sel []string
	pos := map[string]int{}
	for i, f := range fields {
		aliases = append(aliases, fmt.Sprintf("c%d", i))
		pos[f.Name] = i
	}
	for _, f := range schema.Fields() {
		expr := "NULL"
		if i, ok := pos[f.Name]; ok {
			expr = fmt.Sprintf("__src.c%d", i)
		}
		if t := sqlType(f.Type); t != "" {
			expr = fmt.Sprintf("CAST(%s AS %s)", expr, t)
		}
		sel = append(sel, fmt.Sprintf("%s AS %s", expr, quoteIdent(f.Name)))
	}
	return fmt.Sprintf("SELECT %s FROM (%s) AS __src(%s)", strings.Join(sel, ", "), st.source, strings.Join(aliases, ", "))
}

func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// sqlType is DuckDB's name for an Arrow type a table can hold, or "" when
// the value is passed on uncast.
func sqlType(dt arrow.DataType) string {
	switch t := dt.(type) {
	case *arrow.BooleanType:
		return "BOOLEAN"
	case *arrow.Int8Type:
		return "TINYINT"
	case *arrow.Int16Type:
		return "SMALLINT"
	case *arrow.Int32Type:
		return "INTEGER"
	case *arrow.Int64Type:
		return "BIGINT"
	case *arrow.Float32Type:
		return "FLOAT"
	case *arrow.Float64Type:
		return "DOUBLE"
	case *arrow.StringType, *arrow.LargeStringType:
		return "VARCHAR"
	case *arrow.BinaryType, *arrow.LargeBinaryType, *arrow.FixedSizeBinaryType:
		return "BLOB"
	case *arrow.Date32Type:
		return "DATE"
	case *arrow.Time64Type:
		return "TIME"
	case *arrow.Decimal128Type:
		return fmt.Sprintf("DECIMAL(%d,%d)", t.Precision, t.Scale)
	case *arrow.TimestampType:
		if t.TimeZone != "" {
			return "TIMESTAMPTZ"
		}
		switch t.Unit {
		case arrow.Second:
			return "TIMESTAMP_S"
		case arrow.Millisecond:
			return "TIMESTAMP_MS"
		case arrow.Nanosecond:
			return "TIMESTAMP_NS"
		}
		return "TIMESTAMP"
	}
	return ""
}
