package engine

import "strings"

// Statements splits a SQL text into its statements at the semicolons
// that are outside string literals, quoted identifiers, dollar quotes and
// comments; statements that are empty (white space and comments only) are
// left out. It names statements in refusals ("multiple statements are not
// supported: SELECT; ATTACH"): what runs is decided by DuckDB's parser,
// which sees the same statements.
func Statements(query string) []string {
	var out []string
	start := 0
	add := func(end int) {
		if s := query[start:end]; skipSpace(s) != "" {
			out = append(out, s)
		}
	}
	for i := 0; i < len(query); {
		if j := skipLiteral(query, i); j != i {
			i = j
			continue
		}
		if query[i] == ';' {
			add(i)
			start = i + 1
		}
		i++
	}
	add(len(query))
	return out
}

// StatementKinds is the kind (StatementKind) of each statement of query.
func StatementKinds(query string) []string {
	stmts := Statements(query)
	kinds := make([]string, len(stmts))
	for i, s := range stmts {
		if kinds[i] = StatementKind(s); kinds[i] == "" {
			kinds[i] = "?"
		}
	}
	return kinds
}

func identByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80
}

// skipLiteral returns where the string literal, quoted name, comment or
// dollar-quoted text that starts at query[i] ends, or i when none starts
// there: the one rule by which Statements and quoteQualifiers step over
// what is not SQL code.
func skipLiteral(query string, i int) int {
	switch c := query[i]; {
	case c == '\'':
		// E'...' takes backslash escapes; '' is a quote in any string.
		escapes := i > 0 && (query[i-1] == 'e' || query[i-1] == 'E') && (i < 2 || !identByte(query[i-2]))
		return skipQuoted(query, i, '\'', escapes)
	case c == '"':
		return skipQuoted(query, i, '"', false)
	case c == '-' && strings.HasPrefix(query[i:], "--"):
		if j := strings.IndexByte(query[i:], '\n'); j >= 0 {
			return i + j + 1
		}
		return len(query)
	case c == '/' && strings.HasPrefix(query[i:], "/*"):
		return skipBlockComment(query, i)
	case c == '$' && (i == 0 || !identByte(query[i-1])):
		return skipDollar(query, i)
	}
	return i
}

// skipQuoted returns the index past the literal opening at i, which is
// closed by q (a doubled q is part of it).
func skipQuoted(s string, i int, q byte, escapes bool) int {
	for j := i + 1; j < len(s); j++ {
		switch {
		case escapes && s[j] == '\\':
			j++
		case s[j] == q:
			if j+1 < len(s) && s[j+1] == q {
				j++
				continue
			}
			return j + 1
		}
	}
	return len(s)
}

// skipBlockComment returns the index past the comment opening at i;
// comments nest, as in DuckDB's (PostgreSQL's) parser.
func skipBlockComment(s string, i int) int {
	depth := 0
	for j := i; j+1 < len(s); {
		switch {
		case s[j] == '/' && s[j+1] == '*':
			depth++
			j += 2
		case s[j] == '*' && s[j+1] == '/':
			depth--
			j += 2
			if depth == 0 {
				return j
			}
		default:
			j++
		}
	}
	return len(s)
}

// skipDollar returns the index past a dollar-quoted string ($$...$$,
// $tag$...$tag$) opening at i, or past the '$' when none opens there (a
// parameter such as $1).
func skipDollar(s string, i int) int {
	j := i + 1
	for j < len(s) && (identByte(s[j]) && !(j == i+1 && s[j] >= '0' && s[j] <= '9')) {
		j++
	}
	if j >= len(s) || s[j] != '$' {
		return i + 1
	}
	tag := s[i : j+1]
	if k := strings.Index(s[j+1:], tag); k >= 0 {
		return j + 1 + k + len(tag)
	}
	return len(s)
}
