package handlers

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/flightgw/flightgw/auth"
	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/engine"
)

// The information_schema views (schemata, tables, columns, views) are the
// gateway's own: SQL editors, Superset, Metabase and dbt list tables and
// columns with them. DuckDB's own information_schema describes DuckDB's
// catalog, never the caller's, and stays refused (engine/policy.go). A
// reference to one of ours resolves to a table whose scan lists, when the
// query runs, the catalogs the caller may see (its realm's; only the one
// named when the reference names a catalog) through catalogs.Lister and
// GetTableSpec; DuckDB then filters, joins and sorts it like any table.

func infoString(name string) arrow.Field {
	return arrow.Field{Name: name, Type: arrow.BinaryTypes.String, Nullable: true}
}

func infoInt(name string) arrow.Field {
	return arrow.Field{Name: name, Type: arrow.PrimitiveTypes.Int32, Nullable: true}
}

// infoSchemas are the views' columns, those of the SQL standard (and of
// PostgreSQL and DuckDB) that flightgw can fill.
var infoSchemas = map[string]*arrow.Schema{
	"schemata": arrow.NewSchema([]arrow.Field{
		infoString("catalog_name"), infoString("schema_name"), infoString("schema_owner"),
		infoString("default_character_set_catalog"), infoString("default_character_set_schema"),
		infoString("default_character_set_name"), infoString("sql_path"),
	}, nil),
	"tables": arrow.NewSchema([]arrow.Field{
		infoString("table_catalog"), infoString("table_schema"), infoString("table_name"), infoString("table_type"),
		infoString("self_referencing_column_name"), infoString("reference_generation"),
		infoString("user_defined_type_catalog"), infoString("user_defined_type_schema"), infoString("user_defined_type_name"),
		infoString("is_insertable_into"), infoString("is_typed"), infoString("commit_action"), infoString("table_comment"),
	}, nil),
	"columns": arrow.NewSchema([]arrow.Field{
		infoString("table_catalog"), infoString("table_schema"), infoString("table_name"), infoString("column_name"),
		infoInt("ordinal_position"), infoString("column_default"), infoString("is_nullable"), infoString("data_type"),
		infoInt("character_maximum_length"), infoInt("character_octet_length"), infoInt("numeric_precision"),
		infoInt("numeric_precision_radix"), infoInt("numeric_scale"), infoInt("datetime_precision"),
		infoString("udt_name"), infoString("column_comment"),
	}, nil),
	"views": arrow.NewSchema([]arrow.Field{
		infoString("table_catalog"), infoString("table_schema"), infoString("table_name"), infoString("view_definition"),
		infoString("check_option"), infoString("is_updatable"), infoString("is_insertable_into"),
		infoString("is_trigger_updatable"), infoString("is_trigger_deletable"), infoString("is_trigger_insertable_into"),
	}, nil),
}

// infoTable resolves information_schema.name (in catalog cat, "" for
// every catalog of the caller's) for p.
func (h *Handler) infoTable(p auth.Principal, cat, name, written string) (engine.Table, error) {
	view := strings.ToLower(name)
	schema, ok := infoSchemas[view]
	if !ok {
		return engine.Table{}, catalogs.Errorf(catalogs.ErrNotFound, "table %s not found (information_schema has %s)",
			written, strings.Join(engine.InfoSchemaViews, ", "))
	}
	if cat != "" {
		c, ok, err := h.findCatalog(p, cat)
		if err != nil {
			return engine.Table{}, err
		}
		if !ok {
			return engine.Table{}, catalogs.Errorf(catalogs.ErrNotFound, "table %s not found", written)
		}
		cat = c.Name
	}
	return engine.Table{
		Ident:   catalogs.TableIdent{Catalog: cat, Namespace: []string{engine.InfoSchema}, Name: view},
		Scanner: &infoScanner{h: h, p: p, catalog: cat, view: view},
		Schema:  schema,
	}, nil
}

// infoScanner lists one information_schema view when the query runs.
type infoScanner struct {
	h       *Handler
	p       auth.Principal
	catalog string // "" for all the caller's
	view    string
}

// Scan builds the view's rows. The equality filters the engine pushes
// down on the catalog, schema and table columns prune what is listed
// (DuckDB applies the whole WHERE again); req.Columns project.
func (s *infoScanner) Scan(ctx context.Context, _ catalogs.TableIdent, req catalogs.ScanRequest) (*catalogs.ScanResult, error) {
	want := infoFilter(req.Filters)
	var rows []map[string]any
	for _, c := range s.catalogs() {
		if !want("catalog", c.Name) {
			continue
		}
		l, ok := c.Provider.(catalogs.Lister)
		if !ok {
			continue
		}
		nss, err := l.ListNamespaces(ctx)
		if err != nil {
			return nil, err
		}
		slices.SortFunc(nss, func(a, b []string) int { return strings.Compare(strings.Join(a, "."), strings.Join(b, ".")) })
		for _, ns := range nss {
			schema := strings.Join(ns, ".")
			if !want("schema", schema) {
				continue
			}
			if s.view == "schemata" {
				rows = append(rows, map[string]any{"catalog_name": c.Name, "schema_name": schema})
				continue
			}
			if s.view == "views" {
				continue // tables only: no catalog has views
			}
			tables, err := l.ListTables(ctx, ns)
			if err != nil {
				return nil, err
			}
			slices.SortFunc(tables, func(a, b catalogs.TableIdent) int { return strings.Compare(a.Name, b.Name) })
			for _, t := range tables {
				if !want("table", t.Name) {
					continue
				}
				base := map[string]any{"table_catalog": c.Name, "table_schema": schema, "table_name": t.Name}
				if s.view == "tables" {
					base["table_type"], base["is_insertable_into"], base["is_typed"] = "BASE TABLE", "YES", "NO"
					rows = append(rows, base)
					continue
				}
				t.Catalog = c.Name
				spec, err := c.Provider.GetTableSpec(ctx, t)
				if err != nil {
					return nil, fmt.Errorf("information_schema.columns: table %s: %w", t, err)
				}
				rows = append(rows, columnRows(base, spec.Schema)...)
			}
		}
	}
	return infoResult(s.h, infoSchemas[s.view], req.Columns, rows)
}

// catalogs are the catalogs the view lists, sorted by name.
func (s *infoScanner) catalogs() []Catalog {
	var out []Catalog
	for _, c := range s.h.catalogs {
		if c.Realm == s.p.Realm && (s.catalog == "" || c.Name == s.catalog) {
			out = append(out, c)
		}
	}
	slices.SortFunc(out, func(a, b Catalog) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// columnRows are the information_schema.columns rows of a table.
func columnRows(base map[string]any, schema *arrow.Schema) []map[string]any {
	var rows []map[string]any
	for i, f := range schema.Fields() {
		r := map[string]any{"column_name": f.Name, "ordinal_position": i + 1, "is_nullable": "NO"}
		for k, v := range base {
			r[k] = v
		}
		if f.Nullable {
			r["is_nullable"] = "YES"
		}
		name, prec, scale := columnType(f.Type)
		r["udt_name"] = name
		r["data_type"] = name
		switch {
		case name == "DECIMAL":
			r["data_type"] = fmt.Sprintf("DECIMAL(%d,%d)", prec, scale)
			r["numeric_precision"], r["numeric_scale"], r["numeric_precision_radix"] = prec, scale, 10
		case name == "TINYINT" || name == "SMALLINT" || name == "INTEGER" || name == "BIGINT":
			r["numeric_precision"], r["numeric_scale"], r["numeric_precision_radix"] = prec, 0, 10
		case name == "FLOAT" || name == "DOUBLE":
			r["numeric_precision"], r["numeric_precision_radix"] = map[string]int{"FLOAT": 24, "DOUBLE": 53}[name], 2
		case strings.HasPrefix(name, "TIME") || name == "DATE":
			r["datetime_precision"] = scale
		case name == "":
			r["data_type"] = strings.ToUpper(f.Type.String())
		}
		rows = append(rows, r)
	}
	return rows
}

// infoFilter tells whether a catalog, schema or table name passes the
// equality (or IN) filters pushed down on the view's columns for it.
func infoFilter(filters []catalogs.Filter) func(kind, name string) bool {
	cols := map[string]string{
		"catalog_name": "catalog", "table_catalog": "catalog",
		"schema_name": "schema", "table_schema": "schema", "table_name": "table",
	}
	allowed := map[string][]any{}
	for _, f := range filters {
		kind, ok := cols[f.Column]
		if !ok || (f.Op != catalogs.OpEq && f.Op != catalogs.OpIn) {
			continue
		}
		if prev, ok := allowed[kind]; ok {
			// Two filters on one name: only what both allow.
			var both []any
			for _, v := range f.Values {
				if slices.Contains(prev, v) {
					both = append(both, v)
				}
			}
			allowed[kind] = both
			continue
		}
		allowed[kind] = f.Values
	}
	return func(kind, name string) bool {
		vals, ok := allowed[kind]
		return !ok || slices.Contains(vals, any(name))
	}
}

// infoResult is rows as one batch of schema's columns named in cols (all
// when nil), in schema's order.
func infoResult(h *Handler, schema *arrow.Schema, cols []string, rows []map[string]any) (*catalogs.ScanResult, error) {
	var fields []arrow.Field
	for _, f := range schema.Fields() {
		if cols == nil || slices.Contains(cols, f.Name) {
			fields = append(fields, f)
		}
	}
	out := arrow.NewSchema(fields, nil)
	var buf bytes.Buffer
	buf.WriteByte('[')
	for i, r := range rows {
		if i > 0 {
			buf.WriteByte(',')
		}
		kept := map[string]any{}
		for _, f := range fields {
			kept[f.Name] = r[f.Name]
		}
		b, err := json.Marshal(kept)
		if err != nil {
			return nil, err
		}
		buf.Write(b)
	}
	buf.WriteByte(']')
	rec, _, err := array.RecordFromJSON(h.Alloc, out, &buf)
	if err != nil {
		return nil, fmt.Errorf("information_schema: %w", err)
	}
	defer rec.Release()
	rdr, err := array.NewRecordReader(out, []arrow.RecordBatch{rec})
	if err != nil {
		return nil, err
	}
	return &catalogs.ScanResult{Reader: rdr}, nil
}
