package engine

import (
	"encoding/json"
	"math"
	"strings"
)

// pushLimit sets the scan's limit (catalogs.ScanRequest.Limit) when the
// query is one SELECT that only projects (and filters) the rows of its one
// table and keeps LIMIT n [OFFSET m] of them: then any n+m of the table's
// rows that pass the WHERE give a right answer, and a backend may stop
// there. It is not set when anything between the scan and the LIMIT could
// drop, merge, reorder or multiply rows: ORDER BY, DISTINCT, GROUP BY,
// HAVING, QUALIFY, SAMPLE, an aggregate or any function but a few scalar
// ones, a subquery, a CTE, a set operation, a join, or a WHERE with a
// conjunct the scan's filters do not hold (the backend may not apply it,
// and rows it lets through would count against the limit).
func (p *plan) pushLimit() {
	node, _ := p.tree["node"].(map[string]any)
	if len(p.refs) != 1 || node == nil || node["type"] != "SELECT_NODE" {
		return
	}
	ref := p.refs[0]
	if from, ok := node["from_table"].(map[string]any); !ok || !sameMap(from, ref.node) {
		return
	}
	if cm, ok := node["cte_map"].(map[string]any); ok && len(anyList(cm["map"])) > 0 {
		return
	}
	if str(node["aggregate_handling"]) != "STANDARD_HANDLING" || len(anyList(node["group_expressions"])) > 0 ||
		len(anyList(node["group_sets"])) > 0 || node["having"] != nil || node["qualify"] != nil || node["sample"] != nil {
		return
	}
	mods := anyList(node["modifiers"])
	if len(mods) != 1 {
		return
	}
	mod, _ := mods[0].(map[string]any)
	if mod == nil || mod["type"] != "LIMIT_MODIFIER" {
		return
	}
	n, ok := constCount(mod["limit"])
	if !ok || n == 0 {
		return
	}
	var off int64
	if mod["offset"] != nil {
		if off, ok = constCount(mod["offset"]); !ok || off > math.MaxInt64-n {
			return
		}
	}
	for _, e := range anyList(node["select_list"]) {
		if !rowWise(e) {
			return
		}
	}
	if w, ok := node["where_clause"].(map[string]any); ok && len(conjuncts(w)) != len(ref.filters) {
		return
	}
	ref.limit = n + off
}

// constCount is a non-negative integer constant of a LIMIT or OFFSET.
func constCount(v any) (int64, bool) {
	e, _ := v.(map[string]any)
	if e == nil || e["type"] != "VALUE_CONSTANT" {
		return 0, false
	}
	val, _ := e["value"].(map[string]any)
	if val == nil || val["is_null"] == true {
		return 0, false
	}
	vt, _ := val["type"].(map[string]any)
	if !isIntType(str(vt["id"])) {
		return 0, false
	}
	num, ok := val["value"].(json.Number)
	if !ok {
		return 0, false
	}
	i, err := num.Int64()
	return i, err == nil && i >= 0
}

// rowFunctions are the functions a select list may call and still give
// exactly one row for each row it reads.
var rowFunctions = map[string]bool{
	"+": true, "-": true, "*": true, "abs": true, "lower": true, "upper": true, "~~": true, "!~~": true,
}

// rowWise tells whether a select-list expression maps each row to one row:
// columns, constants, casts, comparisons, AND/OR/NOT, CASE, COALESCE and
// rowFunctions. Any other function may aggregate (count), multiply rows
// (unnest) or be a window.
func rowWise(v any) bool {
	e, ok := v.(map[string]any)
	if !ok {
		return false
	}
	switch str(e["class"]) {
	case "COLUMN_REF", "CONSTANT":
		return true
	case "STAR":
		return len(anyList(e["replace_list"])) == 0 && e["columns"] != true && e["expr"] == nil
	case "CAST":
		return e["try_cast"] != true && rowWise(e["child"])
	case "FUNCTION":
		if !rowFunctions[strings.ToLower(str(e["function_name"]))] || e["filter"] != nil || e["distinct"] == true {
			return false
		}
	case "COMPARISON":
		return rowWise(e["left"]) && rowWise(e["right"])
	case "CONJUNCTION", "OPERATOR", "CASE":
	default:
		return false
	}
	for _, c := range anyList(e["children"]) {
		if !rowWise(c) {
			return false
		}
	}
	if e["class"] == "CASE" {
		for _, c := range anyList(e["case_checks"]) {
			cm, _ := c.(map[string]any)
			if cm == nil || !rowWise(cm["when_expr"]) || !rowWise(cm["then_expr"]) {
				return false
			}
		}
		return rowWise(e["else_expr"])
	}
	return true
}
