//go:build duckdb_arrow

package engine

import (
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
		if !strings.Contains(f.Name, "__flightgw_") {
			continue
		}
		if fields == nil {
			fields = s.Fields()
		}
		name := f.Name
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
				name = strings.ReplaceAll(name, r.view+" AS "+e.quoteName(r.alias), written)
			}
			name = strings.ReplaceAll(name, r.view, written)
		}
		fields[i].Name = name
	}
	if fields == nil {
		return s
	}
	md := s.Metadata()
	return arrow.NewSchema(fields, &md)
}
