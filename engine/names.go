//go:build duckdb_arrow

package engine

import (
	"regexp"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
)

// DuckDB names a result column after its expression when it has no alias,
// printing the rewritten query: a scalar subquery's column would show the
// private view the table runs over ("(SELECT max(x) FROM __flightgw_…_0 AS
// t)"). The result schema is renamed to show each table as the query
// wrote it, as DuckDB would have printed it.

// loadKeywords reads DuckDB's keywords.
func (e *Engine) loadKeywords() (map[string]bool, error) {
	c, err := e.connect()
	if err != nil {
		return nil, err
	}
	defer c.close()
	list, err := c.queryString("SELECT string_agg(keyword_name, ' ') FROM duckdb_keywords() WHERE $1 <> ''", "x")
	if err != nil {
		return nil, err
	}
	kw := map[string]bool{}
	for _, k := range strings.Fields(list) {
		kw[strings.ToLower(k)] = true
	}
	return kw, nil
}

// quoteName prints a name as DuckDB does: bare when it is made of letters,
// digits (not first) and underscores and is no keyword, else in double
// quotes.
func (e *Engine) quoteName(s string) string {
	plain := s != "" && !e.keywords[strings.ToLower(s)]
	for i, r := range s {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9') {
			plain = false
			break
		}
	}
	if plain {
		return s
	}
	return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
}

// publicNames renames the columns of a result of p whose names show a
// private view.
func (e *Engine) publicNames(p *plan, s *arrow.Schema) *arrow.Schema {
	if p == nil || len(p.refs) == 0 {
		return s
	}
	var fields []arrow.Field
	for i, f := range s.Fields() {
		if !strings.Contains(f.Name, privatePrefix) {
			continue
		}
		if fields == nil {
			fields = s.Fields()
		}
		fields[i].Name = e.publicText(p, f.Name)
	}
	if fields == nil {
		return s
	}
	md := s.Metadata()
	return arrow.NewSchema(fields, &md)
}

// publicText is s, printed by DuckDB from the rewritten query, with each
// private view of p shown as the query wrote its table, as DuckDB would
// have printed it; a private name p does not know (none should be left)
// becomes "a table".
func (e *Engine) publicText(p *plan, s string) string {
	if !strings.Contains(s, privatePrefix) {
		return s
	}
	if p != nil {
		// Longest view names first: _1 is a prefix of _10.
		for j := len(p.refs) - 1; j >= 0; j-- {
			r := p.refs[j]
			var parts []string
			for _, w := range r.written {
				if w != "" {
					parts = append(parts, e.quoteName(w))
				}
			}
			written := strings.Join(parts, ".")
			if !r.explicitAlias {
				s = strings.ReplaceAll(s, r.view+" AS "+e.quoteName(r.alias), written)
			}
			s = strings.ReplaceAll(s, r.view, written)
		}
	}
	return privateName.ReplaceAllString(s, "a table")
}

// privateName matches the name of a private view (see plan).
var privateName = regexp.MustCompile(privatePrefix + `[0-9a-f]+_[0-9]+`)

// publicError is an error whose message shows no private view; it wraps
// the original, so its kind is kept.
type publicError struct {
	msg string
	err error
}

func (e *publicError) Error() string { return e.msg }
func (e *publicError) Unwrap() error { return e.err }

// publicErr is err with its message rewritten by publicText.
func (e *Engine) publicErr(p *plan, err error) error {
	if err == nil || !strings.Contains(err.Error(), privatePrefix) {
		return err
	}
	// DuckDB's "LINE 1: ..." context shows the rewritten query, and its
	// caret would point at the wrong place once the names are replaced:
	// both go.
	lines := strings.Split(err.Error(), "\n")
	var kept []string
	for i := 0; i < len(lines); i++ {
		if strings.HasPrefix(lines[i], "LINE ") && strings.Contains(lines[i], privatePrefix) {
			if i+1 < len(lines) && strings.Trim(lines[i+1], " ^") == "" {
				i++
			}
			continue
		}
		kept = append(kept, lines[i])
	}
	msg := strings.TrimRight(strings.Join(kept, "\n"), "\n")
	return &publicError{msg: e.publicText(p, msg), err: err}
}
