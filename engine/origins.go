package engine

import (
	"reflect"
	"strings"
)

// A BI tool shows, for each result column, the table it comes from
// (JDBC's getTableName, getSchemaName, getCatalogName). DuckDB does not
// say where a result column comes from, so the origins are read from the
// query's own tree: a column reference, through aliases, joins, subqueries
// and CTEs, to a column of a table the query scans. Anything computed has
// no origin. When the tree cannot say which columns a node returns (a star
// with EXCLUDE or over a USING join, a set operation, a table function),
// no column of that node has one.

// scope is what a SELECT's FROM clause makes visible.
type scope []scopeEntry

// scopeEntry is one relation of a FROM clause.
type scopeEntry struct {
	alias string
	// cols are its columns in order; nil when they are not known.
	cols []outCol
	// noStar is true when a star over it does not return cols as they
	// are (a USING or NATURAL join merges columns).
	noStar bool
}

// outCol is one output column of a relation: its name and origin.
type outCol struct {
	name   string
	origin Origin
}

// originWalker computes the origins of a plan's result columns.
type originWalker struct {
	refs map[uintptr]*scanRef
	// depth bounds the recursion through subqueries and CTEs.
	depth int
}

// origins returns the origin of each result column of p, or nil when the
// query's tree does not tell which columns it returns.
func (p *plan) origins() []Origin {
	w := &originWalker{refs: map[uintptr]*scanRef{}}
	for _, r := range p.refs {
		w.refs[reflect.ValueOf(r.node).Pointer()] = r
	}
	node, _ := p.tree["node"].(map[string]any)
	cols, ok := w.node(node, nil)
	if !ok {
		return nil
	}
	out := make([]Origin, len(cols))
	for i, c := range cols {
		out[i] = c.origin
	}
	return out
}

// ctes are the CTEs in scope, innermost last.
type ctes []cteEntry

func (c ctes) find(name string) (cteEntry, bool) {
	for i := len(c) - 1; i >= 0; i-- {
		if strings.EqualFold(c[i].name, name) {
			return c[i], true
		}
	}
	return cteEntry{}, false
}

// maxOriginDepth bounds the nesting the walker follows; deeper columns
// have no origin.
const maxOriginDepth = 64

// node returns the output columns of a query node; ok is false when they
// cannot be told.
func (w *originWalker) node(n map[string]any, outer ctes) ([]outCol, bool) {
	if n == nil || w.depth > maxOriginDepth {
		return nil, false
	}
	w.depth++
	defer func() { w.depth-- }()
	inScope := outer
	for _, e := range cteEntries(n) {
		inScope = append(inScope[:len(inScope):len(inScope)], e)
	}
	if n["type"] != "SELECT_NODE" {
		return nil, false
	}
	sc, ok := w.from(asMap(n["from_table"]), inScope)
	if !ok {
		return nil, false
	}
	var out []outCol
	for _, e := range anyList(n["select_list"]) {
		m := asMap(e)
		switch m["type"] {
		case "STAR":
			cols, ok := sc.star(m)
			if !ok {
				return nil, false
			}
			out = append(out, cols...)
		case "COLUMN_REF":
			names := strList(m["column_names"])
			c := sc.lookup(names)
			if a := str(m["alias"]); a != "" {
				c.name = a
			} else if len(names) > 0 {
				c.name = names[len(names)-1]
			}
			out = append(out, c)
		default:
			out = append(out, outCol{name: str(m["alias"])})
		}
	}
	return out, true
}

// from returns the scope of a FROM clause; ok is false when a relation's
// columns cannot be told.
func (w *originWalker) from(t map[string]any, in ctes) (scope, bool) {
	if t == nil {
		return nil, true
	}
	switch t["type"] {
	case "EMPTY", "EMPTY_FROM", nil:
		return nil, true
	case "BASE_TABLE":
		name := str(t["table_name"])
		e := scopeEntry{alias: str(t["alias"])}
		if e.alias == "" {
			e.alias = name
		}
		if r, ok := w.refs[reflect.ValueOf(t).Pointer()]; ok {
			for _, f := range r.table.Schema.Fields() {
				e.cols = append(e.cols, outCol{name: f.Name, origin: Origin{Table: r.table.Ident, Column: f.Name}})
			}
		} else if c, ok := in.find(name); ok && str(t["schema_name"]) == "" && str(t["catalog_name"]) == "" {
			// A CTE sees the CTEs before it only.
			before := in[:0:0]
			for _, x := range in {
				if x.name == c.name {
					break
				}
				before = append(before, x)
			}
			cols, ok := w.node(cteQuery(c.value), before)
			if !ok {
				return nil, false
			}
			e.cols = renamed(cols, strList(c.value["aliases"]))
		} else {
			return nil, false
		}
		e.cols = renamed(e.cols, strList(t["column_name_alias"]))
		return scope{e}, true
	case "SUBQUERY":
		sub := asMap(t["subquery"])
		cols, ok := w.node(asMap(sub["node"]), in)
		if !ok {
			return nil, false
		}
		return scope{{alias: str(t["alias"]), cols: renamed(cols, strList(t["column_name_alias"]))}}, true
	case "JOIN":
		l, ok := w.from(asMap(t["left"]), in)
		if !ok {
			return nil, false
		}
		r, ok := w.from(asMap(t["right"]), in)
		if !ok {
			return nil, false
		}
		sc := append(l[:len(l):len(l)], r...)
		if t["ref_type"] != "REGULAR" && t["ref_type"] != "CROSS" || len(anyList(t["using_columns"])) > 0 ||
			t["join_type"] == "SEMI" || t["join_type"] == "ANTI" {
			for i := range sc {
				sc[i].noStar = true
			}
		}
		return sc, true
	}
	return nil, false
}

// renamed applies a column alias list (t AS x(a, b)) to cols.
func renamed(cols []outCol, aliases []string) []outCol {
	if len(aliases) == 0 {
		return cols
	}
	out := append([]outCol(nil), cols...)
	for i, a := range aliases {
		if i < len(out) {
			out[i].name = a
		}
	}
	return out
}

// star expands a STAR expression; ok is false for one whose columns the
// tree does not tell (EXCLUDE, REPLACE, RENAME, COLUMNS(...), or over a
// merging join).
func (sc scope) star(m map[string]any) ([]outCol, bool) {
	for _, k := range []string{"exclude_list", "replace_list", "qualified_exclude_list", "rename_list"} {
		if len(anyList(m[k])) > 0 {
			return nil, false
		}
	}
	if b, _ := m["columns"].(bool); b || m["expr"] != nil {
		return nil, false
	}
	rel := str(m["relation_name"])
	var out []outCol
	found := false
	for _, e := range sc {
		if rel != "" && !strings.EqualFold(e.alias, rel) {
			continue
		}
		found = true
		if e.cols == nil || e.noStar && rel == "" {
			return nil, false
		}
		out = append(out, e.cols...)
	}
	return out, found || rel == ""
}

// lookup resolves a column reference (col, rel.col or longer) in sc: the
// column's origin when exactly one relation has it and all are known.
func (sc scope) lookup(names []string) outCol {
	if len(names) == 0 {
		return outCol{}
	}
	col := names[len(names)-1]
	rel := ""
	if len(names) > 1 {
		rel = names[len(names)-2]
	}
	var hit outCol
	hits := 0
	for _, e := range sc {
		if rel != "" && !strings.EqualFold(e.alias, rel) {
			continue
		}
		if e.cols == nil {
			return outCol{}
		}
		for _, c := range e.cols {
			if strings.EqualFold(c.name, col) {
				hit = c
				hits++
			}
		}
	}
	if hits != 1 {
		return outCol{}
	}
	return hit
}

// cteQuery is the query node of a CTE: "query"."node" in the DuckDB the
// engine embeds, "query_node" in later ones.
func cteQuery(v map[string]any) map[string]any {
	if n := asMap(v["query_node"]); n != nil {
		return n
	}
	return asMap(asMap(v["query"])["node"])
}

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}
