package engine

import "strings"

// A reserved word cannot start a qualified name in DuckDB's grammar:
// `default.people` is a syntax error, while `lake.default.people` and
// `"default".people` parse (after a dot any keyword is a name). Iceberg's
// default namespace is called default, and Spark and pyiceberg users
// write `default.t` all day, so a query that DuckDB refuses is parsed
// once more with every reserved word that starts a dotted name quoted.
// Only a text that does not parse is retried, so no query that parses
// changes meaning (`CASE ... END.upper()` is valid DuckDB); the retried
// text goes through every check a query written with the quotes would.

// quoteQualifiers returns query with each reserved word (by reserved,
// lower case) that is followed by a dot and a name quoted, and whether
// it quoted any. String literals, quoted names, dollar quotes and
// comments are left as they are.
func quoteQualifiers(query string, reserved map[string]bool) (string, bool) {
	var b strings.Builder
	at := 0
	for i := 0; i < len(query); {
		if j := skipLiteral(query, i); j != i {
			i = j
			continue
		}
		switch c := query[i]; {
		case identByte(c) && !(c >= '0' && c <= '9'):
			j := i
			for j < len(query) && (identByte(query[j]) || query[j] == '$') {
				j++
			}
			word := query[i:j]
			// After a dot a keyword is already a name.
			prev := strings.TrimRight(query[:i], " \t\r\n\f")
			if reserved[strings.ToLower(word)] && !strings.HasSuffix(prev, ".") && startsQualified(query[j:]) {
				b.WriteString(query[at:i])
				b.WriteString(`"` + word + `"`)
				at = j
			}
			i = j
		default:
			i++
		}
	}
	if at == 0 {
		return query, false
	}
	b.WriteString(query[at:])
	return b.String(), true
}

// startsQualified reports whether s starts with a dot and then a name (or
// a star): the rest of a qualified name.
func startsQualified(s string) bool {
	s = strings.TrimLeft(s, " \t\r\n\f")
	if !strings.HasPrefix(s, ".") {
		return false
	}
	s = strings.TrimLeft(s[1:], " \t\r\n\f")
	return s != "" && (s[0] == '"' || s[0] == '*' || identByte(s[0]) && !(s[0] >= '0' && s[0] <= '9'))
}
