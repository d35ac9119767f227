package engine

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/flightgw/flightgw/catalogs"
)

// A query goes to its backend whole (catalogs.QueryPusher) when every
// table it reads is in one catalog whose backend runs SQL, and when its
// text means the same to DuckDB and to a MySQL-dialect database such as
// StarRocks. The text is sent as the client wrote it, only its table
// references replaced, so the rule is about the text and its parse tree:
//
//   - one SELECT (no set operations, CTEs, QUALIFY, SAMPLE, GROUP BY ALL,
//     GROUPING SETS / ROLLUP / CUBE, DISTINCT ON, column alias lists, FULL
//     or SEMI/ANTI joins, subqueries in FROM without an alias);
//   - no ORDER BY: DuckDB sorts NULLs last in ascending order, MySQL and
//     StarRocks first;
//   - expressions: columns (at most table.column), literals, comparisons,
//     AND / OR / NOT, IS [NOT] NULL, [NOT] IN, BETWEEN, CASE, COALESCE,
//     subqueries, + - *, [NOT] LIKE, and the functions count, sum, min,
//     max, abs, lower, upper: no casts, no / or % (the dialects type and
//     round them differently), no other function;
//   - in the text: no double-quoted name but in a table reference (a
//     string to MySQL), no backslash in a string literal (an escape to
//     MySQL), no comments, and none of :: || ~ ! (but !=) # $ ? ` ; or a
//     prefixed string (E'...', X'...').
//
// Parameters, a part of a split query, and tables with writes staged in
// the caller's transaction are read by the engine. A query the backend
// refuses as SQL (ErrInvalidArgument, ErrFailedPrecondition) is run by the
// engine too; the result is typed as the engine types the query either way.

// pushFunctions are the functions (and operators) a pushed query may call.
var pushFunctions = map[string]bool{
	"count_star": true, "count": true, "sum": true, "min": true, "max": true,
	"+": true, "-": true, "*": true, "~~": true, "!~~": true, "abs": true, "lower": true, "upper": true,
}

// pushable finds the backend that can run p whole, and the query's text
// around its table references; ok is false when the query is the
// engine's to run.
func pushable(query string, p *plan) (catalogs.QueryPusher, catalogs.PushedQuery, bool) {
	var q catalogs.PushedQuery
	if len(p.refs) == 0 || StatementKind(query) != "SELECT" || !strings.HasPrefix(skipSpace(query), "S") && !strings.HasPrefix(skipSpace(query), "s") {
		return nil, q, false
	}
	pusher, ok := p.refs[0].table.Scanner.(catalogs.QueryPusher)
	if !ok {
		return nil, q, false
	}
	for _, r := range p.refs {
		if r.table.Staged != nil || r.table.Ident.Catalog != p.refs[0].table.Ident.Catalog {
			return nil, q, false
		}
		if _, ok := r.table.Scanner.(catalogs.QueryPusher); !ok {
			return nil, q, false
		}
	}
	if !portableTree(p.tree) {
		return nil, q, false
	}
	refs := slices.Clone(p.refs)
	locs := make([]int, len(refs))
	for i, r := range refs {
		n, ok := r.node["query_location"].(json.Number)
		if !ok {
			return nil, q, false
		}
		l, err := n.Int64()
		if err != nil || l < 0 || int(l) >= len(query) {
			return nil, q, false
		}
		locs[i] = int(l)
	}
	order := make([]int, len(refs))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return locs[a] - locs[b] })
	at := 0
	for _, i := range order {
		end, ok := refSpan(query, locs[i], refs[i].written)
		if !ok || locs[i] < at || !portableText(query[at:locs[i]]) {
			return nil, q, false
		}
		q.Fragments = append(q.Fragments, query[at:locs[i]])
		q.Tables = append(q.Tables, refs[i].table.Ident)
		at = end
	}
	if !portableText(query[at:]) {
		return nil, q, false
	}
	q.Fragments = append(q.Fragments, query[at:])
	return pusher, q, true
}

// refSpan checks that the table reference written at loc is the name the
// plan resolved, and returns where it ends.
func refSpan(q string, loc int, written [3]string) (int, bool) {
	var want []string
	for _, w := range written {
		if w != "" {
			want = append(want, w)
		}
	}
	i := loc
	for k, w := range want {
		if k > 0 {
			if i >= len(q) || q[i] != '.' {
				return 0, false
			}
			i++
		}
		if i < len(q) && q[i] == '"' {
			var b strings.Builder
			j := i + 1
			for ; j < len(q); j++ {
				if q[j] == '"' {
					if j+1 < len(q) && q[j+1] == '"' {
						b.WriteByte('"')
						j++
						continue
					}
					break
				}
				b.WriteByte(q[j])
			}
			if j >= len(q) || b.String() != w {
				return 0, false
			}
			i = j + 1
			continue
		}
		j := i
		for j < len(q) && (q[j] == '_' || q[j] >= 'a' && q[j] <= 'z' || q[j] >= 'A' && q[j] <= 'Z' || q[j] >= '0' && q[j] <= '9' || q[j] >= 0x80) {
			j++
		}
		if !strings.EqualFold(q[i:j], w) {
			return 0, false
		}
		i = j
	}
	if i < len(q) && q[i] == '.' {
		return 0, false
	}
	return i, true
}

// portableText checks query text outside the table references.
func portableText(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\'':
			if i > 0 && isWordByte(s[i-1]) {
				return false // E'...', X'...', a typed literal such as DATE'...'
			}
			j := i + 1
			for ; j < len(s); j++ {
				if s[j] == '\\' {
					return false
				}
				if s[j] == '\'' {
					if j+1 < len(s) && s[j+1] == '\'' {
						j++
						continue
					}
					break
				}
			}
			if j >= len(s) {
				return false
			}
			i = j
		case c == '!':
			if i+1 >= len(s) || s[i+1] != '=' {
				return false
			}
		case c == '-' && i+1 < len(s) && s[i+1] == '-', c == '/' && i+1 < len(s) && s[i+1] == '*',
			c == ':' && i+1 < len(s) && s[i+1] == ':', c == '|' && i+1 < len(s) && s[i+1] == '|':
			return false
		case strings.IndexByte("\"~#$?`;\\", c) >= 0:
			return false
		}
	}
	return true
}

func isWordByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80
}

// portableTree checks the parse tree against the rule above.
func portableTree(v any) bool {
	switch t := v.(type) {
	case []any:
		for _, c := range t {
			if !portableTree(c) {
				return false
			}
		}
		return true
	case map[string]any:
		if !portableNode(t) {
			return false
		}
		for k, c := range t {
			if k == "value" && t["class"] == "CONSTANT" {
				continue // the literal itself; its text is checked
			}
			if !portableTree(c) {
				return false
			}
		}
		return true
	}
	return true
}

// portableNode checks one node of the tree (not its children).
func portableNode(m map[string]any) bool {
	if cm, ok := m["cte_map"].(map[string]any); ok && len(anyList(cm["map"])) > 0 {
		return false
	}
	if m["sample"] != nil || len(anyList(m["column_name_alias"])) > 0 || len(anyList(m["named_param_map"])) > 0 {
		return false
	}
	typ := str(m["type"])
	if class, ok := m["class"].(string); ok {
		return portableExpr(class, typ, m)
	}
	switch typ {
	case "":
		return true // a wrapper (the statement, a CTE map) or a type
	case "SELECT_NODE":
		return str(m["aggregate_handling"]) == "STANDARD_HANDLING" && m["qualify"] == nil && len(anyList(m["group_sets"])) <= 1
	case "LIMIT_MODIFIER", "EMPTY":
		return true
	case "ORDER_MODIFIER":
		return len(anyList(m["orders"])) == 0
	case "DISTINCT_MODIFIER":
		return len(anyList(m["distinct_on_targets"])) == 0
	case "BASE_TABLE":
		return m["at_clause"] == nil
	case "JOIN":
		jt, rt := str(m["join_type"]), str(m["ref_type"])
		return (jt == "INNER" || jt == "LEFT" || jt == "RIGHT") && (rt == "REGULAR" || rt == "CROSS")
	case "SUBQUERY":
		return str(m["alias"]) != ""
	}
	return false
}

// portableExpr checks one expression node.
func portableExpr(class, typ string, m map[string]any) bool {
	switch class {
	case "COLUMN_REF":
		return len(anyList(m["column_names"])) <= 2
	case "CONSTANT", "BETWEEN", "CASE", "SUBQUERY":
		return true
	case "COMPARISON":
		switch typ {
		case "COMPARE_EQUAL", "COMPARE_NOTEQUAL", "COMPARE_LESSTHAN", "COMPARE_GREATERTHAN",
			"COMPARE_LESSTHANOREQUALTO", "COMPARE_GREATERTHANOREQUALTO":
			return true
		}
	case "CONJUNCTION":
		return typ == "CONJUNCTION_AND" || typ == "CONJUNCTION_OR"
	case "OPERATOR":
		switch typ {
		case "OPERATOR_NOT", "OPERATOR_IS_NULL", "OPERATOR_IS_NOT_NULL", "COMPARE_IN", "COMPARE_NOT_IN", "OPERATOR_COALESCE":
			return true
		}
	case "FUNCTION":
		ob, _ := m["order_bys"].(map[string]any)
		return pushFunctions[strings.ToLower(str(m["function_name"]))] && m["filter"] == nil && ob != nil &&
			len(anyList(ob["orders"])) == 0 && m["export_state"] != true && str(m["schema"]) == "" && str(m["catalog"]) == ""
	case "STAR":
		return len(anyList(m["exclude_list"])) == 0 && len(anyList(m["replace_list"])) == 0 &&
			len(anyList(m["rename_list"])) == 0 && m["columns"] != true && m["expr"] == nil
	}
	return false
}
