package starrocks

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightgw/flightgw/catalogs"
)

// PrimaryKeyMetadata is the Arrow schema metadata key that makes
// CreateTable build a primary-key table: a comma-separated list of the key
// columns, which must be the schema's first columns and required. The
// Flight SQL ingest options do not reach a backend, but an uploaded
// schema's metadata does.
const PrimaryKeyMetadata = "starrocks.primary_key"

// quote quotes an identifier for StarRocks SQL.
func quote(s string) string { return "`" + strings.ReplaceAll(s, "`", "``") + "`" }

// createDDL builds the CREATE TABLE of an Arrow schema: a duplicate-key
// table sorted and distributed by its first column (when that column can
// be a key; else no sort key and random distribution), or a primary-key
// table when the schema's metadata names the key.
func createDDL(t catalogs.TableIdent, db string, schema *arrow.Schema, replication string) (string, error) {
	if schema == nil || schema.NumFields() == 0 {
		return "", catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: a table needs at least one column", t)
	}
	types := make([]string, schema.NumFields())
	seen := map[string]bool{}
	defs := make([]string, schema.NumFields())
	for i, f := range schema.Fields() {
		if f.Name == "" {
			return "", catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: column %d has no name", t, i)
		}
		if seen[strings.ToLower(f.Name)] {
			return "", catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: column %q appears twice", t, f.Name)
		}
		seen[strings.ToLower(f.Name)] = true
		typ, err := columnType(t, f)
		if err != nil {
			return "", err
		}
		types[i] = typ
		null := "NULL"
		if !f.Nullable {
			null = "NOT NULL"
		}
		defs[i] = fmt.Sprintf("  %s %s %s", quote(f.Name), typ, null)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "CREATE TABLE %s.%s (\n%s\n) ENGINE=OLAP\n", quote(db), quote(t.Name), strings.Join(defs, ",\n"))
	keys, err := primaryKey(t, schema, types)
	if err != nil {
		return "", err
	}
	switch {
	case keys != nil:
		quoted := make([]string, len(keys))
		for i, k := range keys {
			quoted[i] = quote(k)
		}
		fmt.Fprintf(&b, "PRIMARY KEY(%s)\nDISTRIBUTED BY HASH(%s)", strings.Join(quoted, ", "), strings.Join(quoted, ", "))
	case keyable(types[0]):
		first := quote(schema.Field(0).Name)
		fmt.Fprintf(&b, "DUPLICATE KEY(%s)\nDISTRIBUTED BY HASH(%s)", first, first)
	default:
		b.WriteString("DISTRIBUTED BY RANDOM")
	}
	if replication != "" {
		fmt.Fprintf(&b, "\nPROPERTIES (\"replication_num\" = \"%s\")", replication)
	}
	return b.String(), nil
}

// primaryKey reads PrimaryKeyMetadata; nil when the schema names none.
func primaryKey(t catalogs.TableIdent, schema *arrow.Schema, types []string) ([]string, error) {
	md := schema.Metadata()
	raw, ok := md.GetValue(PrimaryKeyMetadata)
	if !ok || strings.TrimSpace(raw) == "" {
		return nil, nil
	}
	var keys []string
	for k := range strings.SplitSeq(raw, ",") {
		keys = append(keys, strings.TrimSpace(k))
	}
	if len(keys) > schema.NumFields() {
		return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: %s names %d columns, the schema has %d", t, PrimaryKeyMetadata, len(keys), schema.NumFields())
	}
	for i, k := range keys {
		f := schema.Field(i)
		switch {
		case f.Name != k:
			return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: primary key column %q must be column %d of the schema (StarRocks puts key columns first), not %q", t, k, i+1, f.Name)
		case f.Nullable:
			return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: primary key column %q must be required (not nullable)", t, k)
		case !keyable(types[i]):
			return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: primary key column %q is %s, which cannot be a key", t, k, types[i])
		}
	}
	return keys, nil
}

// CreateTable implements catalogs.TableManager with DDL over the MySQL
// protocol.
func (p *Provider) CreateTable(ctx context.Context, t catalogs.TableIdent, schema *arrow.Schema) (catalogs.TableSpec, error) {
	db, err := p.cfg.database(t)
	if err != nil {
		return catalogs.TableSpec{}, err
	}
	ddl, err := createDDL(t, db, schema, p.cfg.replicationNum)
	if err != nil {
		return catalogs.TableSpec{}, err
	}
	if _, _, err := p.columns(ctx, t); err == nil {
		return catalogs.TableSpec{}, catalogs.Errorf(catalogs.ErrAlreadyExists, "table %s already exists", t)
	}
	cctx, cancel := context.WithTimeout(ctx, p.cfg.timeout)
	defer cancel()
	if _, err := p.db.ExecContext(cctx, ddl); err != nil {
		return catalogs.TableSpec{}, p.sqlError(t, "create table", err)
	}
	p.log.Info("created table", "table", t.String(), "database", db)
	return p.GetTableSpec(ctx, t)
}

// DropTable implements catalogs.TableManager.
func (p *Provider) DropTable(ctx context.Context, t catalogs.TableIdent) error {
	db, _, err := p.columns(ctx, t)
	if err != nil {
		return err
	}
	cctx, cancel := context.WithTimeout(ctx, p.cfg.timeout)
	defer cancel()
	if _, err := p.db.ExecContext(cctx, "DROP TABLE "+quote(db)+"."+quote(t.Name)); err != nil {
		return p.sqlError(t, "drop table", err)
	}
	return nil
}

// systemDatabases are StarRocks' (and MySQL's) own databases, not listed.
var systemDatabases = []string{"information_schema", "_statistics_", "sys", "mysql", "performance_schema", "starrocks_audit_db__"}

// ListNamespaces implements catalogs.Lister: one namespace per database.
func (p *Provider) ListNamespaces(ctx context.Context) ([][]string, error) {
	cctx, cancel := context.WithTimeout(ctx, p.cfg.timeout)
	defer cancel()
	rows, err := p.db.QueryContext(cctx, "SELECT SCHEMA_NAME FROM information_schema.SCHEMATA ORDER BY SCHEMA_NAME")
	if err != nil {
		return nil, catalogs.Wrap(catalogs.ErrUnavailable, err, fmt.Sprintf("catalog %q: list databases", p.name))
	}
	defer rows.Close()
	var out [][]string
	for rows.Next() {
		var db string
		if err := rows.Scan(&db); err != nil {
			return nil, catalogs.Wrap(catalogs.ErrUnavailable, err, fmt.Sprintf("catalog %q: list databases", p.name))
		}
		if !slices.Contains(systemDatabases, strings.ToLower(db)) {
			out = append(out, []string{p.cfg.namespaceOf(db)})
		}
	}
	return out, rows.Err()
}

// ListTables implements catalogs.Lister.
func (p *Provider) ListTables(ctx context.Context, ns []string) ([]catalogs.TableIdent, error) {
	probe := catalogs.TableIdent{Catalog: p.name, Namespace: ns, Name: "x"}
	db, err := p.cfg.database(probe)
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, p.cfg.timeout)
	defer cancel()
	rows, err := p.db.QueryContext(cctx, "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? ORDER BY TABLE_NAME", db)
	if err != nil {
		return nil, catalogs.Wrap(catalogs.ErrUnavailable, err, fmt.Sprintf("catalog %q: list tables of %s", p.name, db))
	}
	defer rows.Close()
	var out []catalogs.TableIdent
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return nil, catalogs.Wrap(catalogs.ErrUnavailable, err, fmt.Sprintf("catalog %q: list tables of %s", p.name, db))
		}
		out = append(out, catalogs.TableIdent{Catalog: p.name, Namespace: slices.Clone(ns), Name: name})
	}
	return out, rows.Err()
}
