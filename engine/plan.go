package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightgw/flightgw/catalogs"
)

// Table is a table resolved for one caller.
type Table struct {
	Ident   catalogs.TableIdent
	Scanner catalogs.Scanner
	// Schema is the table's Arrow schema.
	Schema *arrow.Schema
	// Staged, when set, holds the writes the caller's open transaction
	// staged for the table: a query in the transaction reads them with
	// the committed data.
	Staged *Staged
}

// Staged are a transaction's uncommitted writes to a table.
type Staged struct {
	Receipts []catalogs.WriteReceipt
	// Overwrite is true when they replace the table's data.
	Overwrite bool
	// Create is set when the transaction creates the table (a staged
	// create): it exists nowhere else, and is read through
	// catalogs.CreateScanner.
	Create *Create
}

// Create is the staged create of a table: what it is created from.
type Create struct {
	Schema *arrow.Schema
	Opts   map[string]string
}

// streamScanned reports whether the stream path can read t with its
// staged writes.
func (t Table) streamScanned() bool {
	if t.Staged != nil && t.Staged.Create != nil {
		_, ok := t.Scanner.(catalogs.CreateScanner)
		return ok
	}
	_, ok := t.Scanner.(catalogs.StagedScanner)
	return ok
}

// Resolver resolves a table name as written in a query (catalog and
// schema may be empty) for the caller. It returns an error wrapping
// catalogs.ErrNotFound for a table the caller cannot see, so that a table
// of another realm does not exist for it.
type Resolver func(catalog, schema, table string) (Table, error)

// scanRef is one table reference of a query: one scan.
type scanRef struct {
	table   Table
	view    string // the private name it is registered under
	columns []string
	filters []catalogs.Filter
	limit   int64  // catalogs.ScanRequest.Limit (limit.go); 0 for none
	alias   string // how the query qualifies its columns
	node    map[string]any
	// written is the reference as the query wrote it (catalog and schema
	// may be empty); explicitAlias tells whether it had an alias.
	written       [3]string
	explicitAlias bool
}

// plan is a parsed query whose table references are resolved.
type plan struct {
	tree map[string]any
	refs []*scanRef
	// fileSafe is true when the query names nothing DuckDB could take
	// for a file: it may then run where the planned files are readable
	// (see native.go).
	fileSafe bool
	// text is the query the tree was parsed from: the client's, or it
	// with reserved qualifiers quoted (qualifiers.go).
	text string
}

// parsed is json_serialize_sql's answer.
type parsed struct {
	Error        bool             `json:"error"`
	ErrorType    string           `json:"error_type"`
	ErrorMessage string           `json:"error_message"`
	Statements   []map[string]any `json:"statements"`
}

// decodeParse turns json_serialize_sql's answer into a tree, or the error
// it reports. A statement other than a query is refused by its first word.
func decodeParse(query, js string) (map[string]any, error) {
	var p parsed
	dec := json.NewDecoder(strings.NewReader(js))
	dec.UseNumber()
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("engine: parse tree: %w", err)
	}
	if kinds := StatementKinds(query); len(kinds) > 1 || len(p.Statements) > 1 {
		// Before the statement kind: the first statement may be a query
		// and a later one what DuckDB refused to serialize.
		return nil, errMultiple(kinds)
	}
	if p.Error {
		if strings.Contains(p.ErrorMessage, "Only SELECT statements") {
			return nil, errUnsupported("%s statements are not supported (only queries and INSERT)", StatementKind(query))
		}
		return nil, errInvalid("%s", p.ErrorMessage)
	}
	if len(p.Statements) != 1 {
		return nil, errInvalid("expected exactly one statement, got %d", len(p.Statements))
	}
	return p.Statements[0], nil
}

// errMultiple refuses a text of several statements, naming each.
func errMultiple(kinds []string) error {
	return errInvalid("multiple statements are not supported: %s (send one statement per request)", strings.Join(kinds, "; "))
}

// StatementKind is the first keyword of a statement, upper-cased ("SELECT",
// "INSERT", "DROP"), skipping comments and parentheses.
func StatementKind(query string) string {
	s := skipSpace(query)
	for strings.HasPrefix(s, "(") {
		s = skipSpace(s[1:])
	}
	end := strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '_')
	})
	if end < 0 {
		end = len(s)
	}
	return strings.ToUpper(s[:end])
}

// skipSpace skips white space and SQL comments.
func skipSpace(s string) string {
	for {
		s = strings.TrimLeft(s, " \t\r\n\f")
		switch {
		case strings.HasPrefix(s, "--"):
			if i := strings.IndexByte(s, '\n'); i >= 0 {
				s = s[i+1:]
			} else {
				return ""
			}
		case strings.HasPrefix(s, "/*"):
			s = s[skipBlockComment(s, 0):]
		default:
			return s
		}
	}
}

// newPlan resolves every table reference of tree and works out each
// scan's projection and filters. views names the private view of the
// i-th reference; pol says what else is refused or bounded.
func newPlan(tree map[string]any, resolve Resolver, views func(i int) string, pol *policy) (*plan, error) {
	p := &plan{tree: tree, fileSafe: true}
	star := false
	cols := map[string]bool{}
	var walkErr error
	fail := func(err error) {
		if walkErr == nil {
			walkErr = err
		}
	}
	walk(tree, func(m map[string]any) {
		switch m["type"] {
		case "RECURSIVE_CTE_NODE":
			fail(errUnsupported("recursive CTEs are not supported"))
		case "TABLE_FUNCTION":
			if err := checkTableFunction(m); err != nil {
				fail(err)
			}
		case "SHOW_REF":
			// DESCRIBE/SUMMARIZE/SHOW look names up in DuckDB's catalog
			// themselves, outside any table reference.
			fail(errIntrospection(showKind(m)))
		case "FUNCTION":
			if err := pol.checkFunction(m); err != nil {
				fail(err)
			}
		case "STAR":
			star = true
		case "COLUMN_REF":
			for _, n := range strList(m["column_names"]) {
				cols[strings.ToLower(n)] = true
			}
		case "JOIN":
			if m["ref_type"] == "NATURAL" {
				star = true
			}
			for _, n := range strList(m["using_columns"]) {
				cols[strings.ToLower(n)] = true
			}
		}
		for _, e := range cteEntries(m) {
			if strings.HasPrefix(strings.ToLower(e.name), privatePrefix) || pol.systemViews[strings.ToLower(e.name)] {
				fail(errInvalid("CTE name %s is reserved (a DuckDB system view or the gateway's own)", e.name))
			}
			// A stream can be read once: a CTE named twice must be
			// materialized, not inlined twice.
			e.value["materialized"] = "CTE_MATERIALIZE_ALWAYS"
		}
	})
	if walkErr != nil {
		return nil, walkErr
	}
	// The references that name a CTE in scope are left to DuckDB; every
	// other one is a table of the caller's, or refused.
	ctes := cteRefs(tree)
	walk(tree, func(m map[string]any) {
		if walkErr != nil || m["type"] != "BASE_TABLE" {
			return
		}
		if _, ok := m["table_name"].(string); !ok {
			return
		}
		cat, sch, name := str(m["catalog_name"]), str(m["schema_name"]), str(m["table_name"])
		if ctes.has(m) {
			// Out of the CTE's scope DuckDB would look the name up
			// itself, and a name like 'x.parquet' is a file to it: only
			// identifiers may run where files are readable.
			if !isIdentifier(name) {
				p.fileSafe = false
			}
			return
		}
		if err := pol.checkTable(cat, sch, name); err != nil {
			walkErr = err
			return
		}
		if at, ok := m["at_clause"]; ok && at != nil {
			walkErr = errUnsupported("time travel (AT) on %s is not supported", name)
			return
		}
		t, err := resolve(cat, sch, name)
		if err != nil {
			walkErr = err
			return
		}
		ref := &scanRef{table: t, view: views(len(p.refs)), alias: str(m["alias"]), node: m,
			written: [3]string{cat, sch, name}, explicitAlias: str(m["alias"]) != ""}
		if ref.alias == "" {
			ref.alias = name
		}
		ref.columns = projection(t.Schema, star, cols)
		p.refs = append(p.refs, ref)
	})
	if walkErr != nil {
		return nil, walkErr
	}
	walk(tree, func(m map[string]any) {
		if m["type"] == "SELECT_NODE" {
			pushFilters(m, p.refs)
		}
	})
	p.pushLimit()
	for _, r := range p.refs {
		r.node["table_name"] = r.view
		r.node["schema_name"] = ""
		r.node["catalog_name"] = ""
		r.node["alias"] = r.alias
	}
	if err := pol.bound(tree); err != nil {
		return nil, err
	}
	return p, nil
}

// privatePrefix starts the names of the gateway's own views.
const privatePrefix = "__flightgw_"

// cteEntry is one CTE of a WITH.
type cteEntry struct {
	name  string
	value map[string]any // its CommonTableExpressionInfo
}

// cteEntries are the CTEs a query node defines, in the order written.
func cteEntries(m map[string]any) []cteEntry {
	cm, ok := m["cte_map"].(map[string]any)
	if !ok {
		return nil
	}
	var out []cteEntry
	for _, e := range anyList(cm["map"]) {
		em, _ := e.(map[string]any)
		k, ok1 := em["key"].(string)
		v, ok2 := em["value"].(map[string]any)
		if ok1 && ok2 {
			out = append(out, cteEntry{name: k, value: v})
		}
	}
	return out
}

// refSet is a set of nodes of a tree, by identity.
type refSet map[uintptr]bool

func (s refSet) has(m map[string]any) bool { return s[reflect.ValueOf(m).Pointer()] }

// cteRefs finds the table references that name a CTE in scope, by SQL's
// rules: a CTE is visible in the body of the query its WITH belongs to,
// in the subqueries nested there, and in the CTEs written after it in the
// same WITH; not in an outer query, a sibling query, or itself (recursive
// CTEs are refused). DuckDB binds the same way, so a name outside every
// CTE's scope is resolved as a table of the caller's and never reaches
// DuckDB's own catalog.
func cteRefs(tree map[string]any) refSet {
	set := refSet{}
	var visit func(v any, scope map[string]bool)
	visit = func(v any, scope map[string]bool) {
		switch t := v.(type) {
		case []any:
			for _, c := range t {
				visit(c, scope)
			}
		case map[string]any:
			if t["type"] == "BASE_TABLE" && str(t["catalog_name"]) == "" && str(t["schema_name"]) == "" &&
				scope[strings.ToLower(str(t["table_name"]))] {
				set[reflect.ValueOf(t).Pointer()] = true
			}
			entries := cteEntries(t)
			inner := scope
			if len(entries) > 0 {
				inner = maps.Clone(scope)
				for _, e := range entries {
					visit(e.value, inner) // sees the CTEs before it
					inner[strings.ToLower(e.name)] = true
				}
			}
			for k, c := range t {
				if k != "cte_map" {
					visit(c, inner)
				}
			}
		}
	}
	visit(tree, map[string]bool{})
	return set
}

// showKind names the statement of a SHOW_REF.
func showKind(m map[string]any) string {
	switch m["show_type"] {
	case "SUMMARY":
		return "SUMMARIZE"
	case "DESCRIBE":
		return "DESCRIBE"
	}
	return "SHOW"
}

// errIntrospection refuses a statement that reads DuckDB's catalog.
func errIntrospection(what string) error {
	return errInvalid("%s is not supported: DuckDB's catalog is not readable from SQL "+
		"(use the Flight SQL metadata calls: GetCatalogs, GetDbSchemas, GetTables with schemas)", what)
}

// tableFunctions are the table functions a query may call: they make
// rows from their arguments and read nothing. Every other one (read_parquet,
// read_csv, glob, read_text, parquet_metadata, query, ...) is refused, so
// no file can be named from SQL even where DuckDB may read files.
var tableFunctions = map[string]bool{"range": true, "generate_series": true, "unnest": true}

// checkTableFunction refuses a table function that is not allowed.
func checkTableFunction(m map[string]any) error {
	fn, _ := m["function"].(map[string]any)
	name := strings.ToLower(str(fn["function_name"]))
	sch := strings.ToLower(str(fn["schema"]))
	if fn == nil || fn["type"] != "FUNCTION" || name == "" {
		return catalogs.Errorf(catalogs.ErrPermissionDenied, "this table function is disabled: queries read catalog tables only")
	}
	if !tableFunctions[name] || str(fn["catalog"]) != "" || (sch != "" && sch != "main") {
		return catalogs.Errorf(catalogs.ErrPermissionDenied,
			"table function %s is disabled: queries read catalog tables only (file access is disabled)", name)
	}
	return nil
}

// isIdentifier reports whether s is a plain SQL identifier.
func isIdentifier(s string) bool {
	for i, r := range s {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return s != ""
}

// projection is the table's columns that the query may use: every column
// when it has a star, else those whose name appears in a column
// reference. At least one column is read, so that rows can be counted.
func projection(s *arrow.Schema, star bool, used map[string]bool) []string {
	var out []string
	for _, f := range s.Fields() {
		if star || used[strings.ToLower(f.Name)] {
			out = append(out, f.Name)
		}
	}
	if len(out) == 0 && s.NumFields() > 0 {
		out = []string{s.Field(0).Name}
	}
	return out
}

// marshal renders the rewritten tree for json_deserialize_sql.
func (p *plan) marshal() (string, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	doc := map[string]any{"error": false, "statements": []any{p.tree}}
	if err := enc.Encode(doc); err != nil {
		return "", fmt.Errorf("engine: rewrite: %w", err)
	}
	return buf.String(), nil
}

// walk calls fn on every object of a JSON tree, parents first.
func walk(v any, fn func(map[string]any)) {
	switch t := v.(type) {
	case map[string]any:
		fn(t)
		for _, c := range t {
			walk(c, fn)
		}
	case []any:
		for _, c := range t {
			walk(c, fn)
		}
	}
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

func anyList(v any) []any {
	l, _ := v.([]any)
	return l
}

func strList(v any) []string {
	var out []string
	for _, e := range anyList(v) {
		if s, ok := e.(string); ok {
			out = append(out, s)
		}
	}
	return out
}
