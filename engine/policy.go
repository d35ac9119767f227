package engine

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/flightgw/flightgw/catalogs"
)

// policy is what the planner refuses or bounds beyond table names: it is
// read from the engine's DuckDB when it opens (policyQueries), so that it
// follows the DuckDB version linked in.
type policy struct {
	// systemViews are the names of DuckDB's views in main and pg_catalog
	// (duckdb_tables, sqlite_master, pg_settings, ...), which DuckDB also
	// finds unqualified.
	systemViews map[string]bool
	// catalogMacros are the scalar macros that read DuckDB's catalog
	// (pg_get_viewdef reads duckdb_views(), ...).
	catalogMacros map[string]bool
	// serverMacros are the macros that call one of serverFunctions
	// (pg_catalog.current_query calls current_query()).
	serverMacros map[string]bool
	// volatile are the functions whose value changes from call to call.
	volatile map[string]bool
	// reserved are the keywords that cannot start a name unquoted
	// (default, order, left, ...): see qualifiers.go.
	reserved map[string]bool
	// maxString is the most bytes a guarded function may return.
	maxString int64
	// guards are the bounded functions, by guardKey.
	guards map[string]guard
}

// systemSchemas are DuckDB's schemas of catalog views; the views of
// information_schema are refused by schema (their names, such as
// "tables", are also plausible table names).
var systemSchemas = map[string]bool{"information_schema": true, "pg_catalog": true}

// InfoSchema is the schema of the information_schema views the gateway
// answers itself, from its catalogs: a reference to one of InfoSchemaViews
// in it (information_schema.tables, lake.information_schema.columns) is
// resolved like any table, by the Resolver, and DuckDB's own
// information_schema stays unreachable.
const InfoSchema = "information_schema"

// InfoSchemaViews are the views of InfoSchema a Resolver may answer.
var InfoSchemaViews = []string{"schemata", "tables", "columns", "views"}

// systemCatalogs are DuckDB's catalogs other than the gateway's tables.
var systemCatalogs = map[string]bool{"system": true, "temp": true}

// checkTable refuses a table reference to a DuckDB system view, like the
// table functions outside the allowlist.
func (pol *policy) checkTable(cat, sch, name string) error {
	lc, ls, ln := strings.ToLower(cat), strings.ToLower(sch), strings.ToLower(name)
	if ls == InfoSchema && slices.Contains(InfoSchemaViews, ln) && !systemCatalogs[lc] {
		return nil // the resolver's, never DuckDB's (it is rewritten to a private view)
	}
	if systemCatalogs[lc] || systemSchemas[ls] || (ls == "" && systemSchemas[lc]) || pol.systemViews[ln] ||
		strings.HasPrefix(ln, privatePrefix) {
		return catalogs.Errorf(catalogs.ErrPermissionDenied,
			"%s is one of DuckDB's catalog views, which are disabled: queries read catalog tables only", qualified(cat, sch, name))
	}
	return nil
}

func qualified(parts ...string) string {
	var out []string
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, ".")
}

// serverFunctions are the scalar functions that tell a caller about the
// server rather than about its data: current_setting reads every setting,
// among them the data directory (temp_directory), the warehouse roots a
// native query may read (allowed_directories), the working directory
// (allowed_paths) and the home directory (secret_directory); version is
// DuckDB's, which GetSqlInfo does not tell; current_query is the query as
// the gateway rewrote it, with its private view names; getvariable reads
// DuckDB's variables; the transaction, query and connection counters are
// shared by every realm's statements, so they count the others'. They
// are refused by name, however the call is spelled (case, quotes, a
// schema such as main. or pg_catalog., a method call 'x'.f()), and so is
// every macro that calls one (loadPolicy).
var serverFunctions = map[string]bool{
	"current_setting": true, "version": true, "current_query": true, "getvariable": true,
	"txid_current": true, "current_transaction_id": true, "current_query_id": true, "current_connection_id": true,
}

// checkFunction refuses a scalar function that reads DuckDB's catalog or
// reveals the server.
func (pol *policy) checkFunction(m map[string]any) error {
	name := strings.ToLower(str(m["function_name"]))
	if serverFunctions[name] || pol.serverMacros[name] {
		return catalogs.Errorf(catalogs.ErrPermissionDenied,
			"function %s reveals the server (its settings, paths, version or activity), which is disabled: queries read catalog tables only", name)
	}
	if pol.catalogMacros[name] || strings.HasPrefix(name, "duckdb_") || strings.HasPrefix(name, "pragma_") {
		return catalogs.Errorf(catalogs.ErrPermissionDenied,
			"function %s reads DuckDB's catalog, which is disabled: queries read catalog tables only", name)
	}
	return nil
}

// A guard bounds what one function returns. DuckDB's memory_limit does
// not cover the strings and lists scalar functions build (a chunk of
// 2048 results, each as large as the arguments say), and it checks an
// interrupt only between chunks; repeat('x', 1000000000) held 2 GB for
// 10 s under a 512 MB limit, and len(range(1000000000)) had the process
// killed. So the argument that sets the size is replaced by
//
//	CASE WHEN <size> > maxString THEN error(...) ELSE <argument> END
//
// where <size> is computed from copies of the arguments: DuckDB folds it
// while it prepares a constant call, and evaluates it per row otherwise,
// before the function runs.
type guard struct {
	arg  int            // the argument wrapped
	size map[string]any // the size expression, over __a0, __a1, ...
}

// guardSQL are the bounded functions' size expressions in bytes, by name
// and number of arguments, and the argument wrapped. range and
// generate_series are the scalar ones (lists); as table functions they
// stream rows and are not bounded.
var guardSQL = map[string]map[int]struct {
	arg  int
	size string
}{
	"repeat": {2: {1, "CAST(__a1 AS HUGEINT) * greatest(strlen(CAST(__a0 AS VARCHAR)), 1)"}},
	"lpad":   {3: {1, "CAST(__a1 AS HUGEINT) * 4"}},
	"rpad":   {3: {1, "CAST(__a1 AS HUGEINT) * 4"}},
	"list_resize": {2: {1, "CAST(__a1 AS HUGEINT) * 16"},
		3: {1, "CAST(__a1 AS HUGEINT) * (16 + strlen(CAST(__a2 AS VARCHAR)))"}},
	"range": {1: {0, "8 * abs(TRY_CAST(__a0 AS HUGEINT))"},
		2: {1, "8 * coalesce(abs(TRY_CAST(__a1 AS HUGEINT) - TRY_CAST(__a0 AS HUGEINT)), " +
			"abs(epoch_us(TRY_CAST(__a1 AS TIMESTAMP)) - epoch_us(TRY_CAST(__a0 AS TIMESTAMP))), 0)"},
		3: {1, "8 * coalesce(abs(TRY_CAST(__a1 AS HUGEINT) - TRY_CAST(__a0 AS HUGEINT)) // greatest(abs(TRY_CAST(__a2 AS HUGEINT)), 1), " +
			"abs(epoch_us(TRY_CAST(__a1 AS TIMESTAMP)) - epoch_us(TRY_CAST(__a0 AS TIMESTAMP))) // " +
			"greatest(abs(epoch_us(TRY_CAST(__a2 AS INTERVAL))), 1), 0)"}},
}

func init() {
	guardSQL["array_resize"] = guardSQL["list_resize"]
	guardSQL["generate_series"] = guardSQL["range"]
}

// guardKey is a guard's key in policy.guards.
func guardKey(name string, args int) string { return fmt.Sprintf("%s/%d", name, args) }

// stringBoundMarker is in the message of a guard's error, which classify
// reports as ErrResourceExhausted.
const stringBoundMarker = "over the engine's bound for one value"

// maxStringDivisor divides the engine's memory limit into the bound of
// one guarded value: a chunk of 2048 of them on each of a few threads
// stays within the limit.
const maxStringDivisor = 8192

// bound rewrites the bounded function calls of tree (guards). A call
// whose arguments hold a volatile function or a subquery is refused: its
// copies in the guard would not be the values the function gets (or
// would scan a table twice).
func (pol *policy) bound(tree map[string]any) error {
	tableFns := refSet{}
	walk(tree, func(m map[string]any) {
		if f, ok := m["function"].(map[string]any); ok && m["type"] == "TABLE_FUNCTION" {
			tableFns[reflect.ValueOf(f).Pointer()] = true
		}
	})
	var err error
	walk(tree, func(m map[string]any) {
		if err != nil || m["class"] != "FUNCTION" || tableFns.has(m) {
			return
		}
		name := strings.ToLower(str(m["function_name"]))
		args := anyList(m["children"])
		g, ok := pol.guards[guardKey(name, len(args))]
		if !ok {
			return
		}
		if v := pol.volatileIn(args); v != "" {
			err = errInvalid("%s with an argument computed by %s is not supported (its size could not be bounded)", name, v)
			return
		}
		size := copyTree(g.size)
		walk(size, func(n map[string]any) {
			if cols := strList(n["column_names"]); n["class"] == "COLUMN_REF" && len(cols) == 1 && strings.HasPrefix(cols[0], "__a") {
				var i int
				if _, e := fmt.Sscanf(cols[0], "__a%d", &i); e == nil && i < len(args) {
					clear(n)
					maps.Copy(n, copyTree(args[i]).(map[string]any))
				}
			}
		})
		msg := fmt.Sprintf("%s would return more than %d bytes, %s (engine.memory_limit / %d)", name, pol.maxString, stringBoundMarker, maxStringDivisor)
		args[g.arg] = map[string]any{
			"class": "CASE", "type": "CASE_EXPR", "alias": "",
			"case_checks": []any{map[string]any{
				"when_expr": map[string]any{"class": "COMPARISON", "type": "COMPARE_GREATERTHAN", "alias": "",
					"left": size, "right": constant("BIGINT", pol.maxString)},
				"then_expr": map[string]any{"class": "FUNCTION", "type": "FUNCTION", "alias": "", "function_name": "error",
					"schema": "", "catalog": "", "children": []any{constant("VARCHAR", msg)}, "filter": nil,
					"order_bys": map[string]any{"type": "ORDER_MODIFIER", "orders": []any{}},
					"distinct":  false, "is_operator": false, "export_state": false},
			}},
			"else_expr": args[g.arg],
		}
	})
	return err
}

// volatileIn names a volatile function called in the trees, or "".
func (pol *policy) volatileIn(trees []any) string {
	var found string
	walk(trees, func(m map[string]any) {
		if n := strings.ToLower(str(m["function_name"])); found == "" && m["class"] == "FUNCTION" && pol.volatile[n] {
			found = n + "()"
		}
		if found == "" && m["class"] == "SUBQUERY" {
			found = "a subquery"
		}
	})
	return found
}

func constant(typ string, v any) map[string]any {
	return map[string]any{"class": "CONSTANT", "type": "VALUE_CONSTANT", "alias": "",
		"value": map[string]any{"type": map[string]any{"id": typ, "type_info": nil}, "is_null": false, "value": v}}
}

// copyTree is a deep copy of a parse tree.
func copyTree(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, c := range t {
			out[k] = copyTree(c)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, c := range t {
			out[i] = copyTree(c)
		}
		return out
	}
	return v
}

// parseBytes reads a size as DuckDB prints it ("488.2 MiB", "2.0 GB",
// "512 bytes").
func parseBytes(s string) (int64, error) {
	num, unit, _ := strings.Cut(strings.TrimSpace(s), " ")
	var v float64
	if _, err := fmt.Sscanf(num, "%g", &v); err != nil {
		return 0, err
	}
	mult := map[string]float64{"": 1, "bytes": 1, "b": 1,
		"kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12, "pb": 1e15,
		"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40, "pib": 1 << 50}[strings.ToLower(unit)]
	if mult == 0 {
		return 0, fmt.Errorf("unknown unit %q", unit)
	}
	return int64(v * mult), nil
}
