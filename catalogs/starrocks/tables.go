package starrocks

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightgw/flightgw/catalogs"
)

// PrimaryKeyMetadata is the Arrow schema metadata key that makes
// CreateTable build a primary-key table: a comma-separated list of the key
// columns, which must be the schema's first columns and required. The
// ingest option OptPrimaryKey says the same; the metadata stays for
// clients that cannot set ingest options (the ADBC drivers send none).
const PrimaryKeyMetadata = "starrocks.primary_key"

// The ingest options CreateTable accepts.
const (
	// OptPrimaryKey names the key columns of a primary-key table,
	// comma-separated (the schema's first columns, required).
	OptPrimaryKey = "primary-key"
	// OptDistributedBy names the hash distribution columns,
	// comma-separated (by default the key, or the first column).
	OptDistributedBy = "distributed-by"
	// OptBuckets is the number of buckets (by default StarRocks picks).
	OptBuckets = "buckets"
)

// layout is how a created table is keyed and distributed.
type layout struct {
	primaryKey    []string // nil: a duplicate-key table
	distributedBy []string // nil: the default
	buckets       int      // 0: StarRocks' choice
}

// quote quotes an identifier for StarRocks SQL.
func quote(s string) string { return "`" + strings.ReplaceAll(s, "`", "``") + "`" }

// quoteAll quotes identifiers and joins them with commas.
func quoteAll(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = quote(n)
	}
	return strings.Join(q, ", ")
}

// createDDL builds the CREATE TABLE of an Arrow schema: a duplicate-key
// table sorted and distributed by its first column (when that column can
// be a key; else no sort key and random distribution), or a primary-key
// table when the layout (or the schema's metadata) names the key.
func createDDL(t catalogs.TableIdent, db string, schema *arrow.Schema, replication string, lay layout) (string, error) {
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
	keys, err := primaryKey(t, schema, types, lay.primaryKey)
	if err != nil {
		return "", err
	}
	if err := checkDistribution(t, schema, types, lay.distributedBy); err != nil {
		return "", err
	}
	dist := lay.distributedBy
	switch {
	case keys != nil:
		for _, c := range dist {
			if !slices.Contains(keys, c) {
				return "", catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: ingest option %s: column %q is not in the primary key (StarRocks distributes a primary-key table by key columns)", t, OptDistributedBy, c)
			}
		}
		fmt.Fprintf(&b, "PRIMARY KEY(%s)\n", quoteAll(keys))
		if dist == nil {
			dist = keys
		}
	case keyable(types[0]):
		first := []string{schema.Field(0).Name}
		fmt.Fprintf(&b, "DUPLICATE KEY(%s)\n", quoteAll(first))
		if dist == nil {
			dist = first
		}
	}
	if dist == nil {
		b.WriteString("DISTRIBUTED BY RANDOM")
	} else {
		fmt.Fprintf(&b, "DISTRIBUTED BY HASH(%s)", quoteAll(dist))
	}
	if lay.buckets > 0 {
		fmt.Fprintf(&b, " BUCKETS %d", lay.buckets)
	}
	if replication != "" {
		fmt.Fprintf(&b, "\nPROPERTIES (\"replication_num\" = \"%s\")", replication)
	}
	return b.String(), nil
}

// splitColumns reads a comma-separated column list; nil for "".
func splitColumns(raw string) []string {
	if strings.TrimSpace(raw) == "" {
		return nil
	}
	var out []string
	for k := range strings.SplitSeq(raw, ",") {
		out = append(out, strings.TrimSpace(k))
	}
	return out
}

// primaryKey checks the key the options name (opt), or else the one
// PrimaryKeyMetadata names; nil when neither names one. When both do,
// they must agree.
func primaryKey(t catalogs.TableIdent, schema *arrow.Schema, types []string, opt []string) ([]string, error) {
	md := schema.Metadata()
	raw, _ := md.GetValue(PrimaryKeyMetadata)
	keys, source := splitColumns(raw), PrimaryKeyMetadata
	if opt != nil {
		if keys != nil && !slices.Equal(keys, opt) {
			return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: ingest option %s (%s) and schema metadata %s (%s) name different keys",
				t, OptPrimaryKey, strings.Join(opt, ","), PrimaryKeyMetadata, strings.Join(keys, ","))
		}
		keys, source = opt, OptPrimaryKey
	}
	if keys == nil {
		return nil, nil
	}
	if len(keys) > schema.NumFields() {
		return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: %s names %d columns, the schema has %d", t, source, len(keys), schema.NumFields())
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

// checkDistribution checks that the distribution columns are columns of
// the schema whose type can be hashed.
func checkDistribution(t catalogs.TableIdent, schema *arrow.Schema, types []string, cols []string) error {
	for _, c := range cols {
		i := slices.IndexFunc(schema.Fields(), func(f arrow.Field) bool { return f.Name == c })
		switch {
		case i < 0:
			return catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: ingest option %s: column %q is not in the schema", t, OptDistributedBy, c)
		case !keyable(types[i]):
			return catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: ingest option %s: column %q is %s, which cannot be a distribution column", t, OptDistributedBy, c, types[i])
		}
	}
	return nil
}

// parseLayout reads the ingest options; any other option is refused,
// naming it, rather than ignored.
func parseLayout(t catalogs.TableIdent, opts map[string]string) (layout, error) {
	var lay layout
	for k, v := range opts {
		switch k {
		case OptPrimaryKey:
			if lay.primaryKey = splitColumns(v); lay.primaryKey == nil || slices.Contains(lay.primaryKey, "") {
				return lay, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: ingest option %s: %q is not a comma-separated list of columns", t, k, v)
			}
		case OptDistributedBy:
			if lay.distributedBy = splitColumns(v); lay.distributedBy == nil || slices.Contains(lay.distributedBy, "") {
				return lay, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: ingest option %s: %q is not a comma-separated list of columns", t, k, v)
			}
		case OptBuckets:
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil || n < 1 || n > 1024 {
				return lay, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: ingest option %s: %q is not a number of buckets from 1 to 1024", t, k, v)
			}
			lay.buckets = n
		default:
			return lay, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: ingest option %q is not a StarRocks table option (%s, %s, %s)",
				t, k, OptPrimaryKey, OptDistributedBy, OptBuckets)
		}
	}
	return lay, nil
}

// CheckTableOptions implements catalogs.TableManager.
func (p *Provider) CheckTableOptions(t catalogs.TableIdent, schema *arrow.Schema, opts map[string]string) error {
	lay, err := parseLayout(t, opts)
	if err != nil {
		return err
	}
	db, err := p.cfg.database(t)
	if err != nil {
		return err
	}
	_, err = createDDL(t, db, schema, p.cfg.replicationNum, lay)
	return err
}

// CreateTable implements catalogs.TableManager with DDL over the MySQL
// protocol, taking the ingest options primary-key, distributed-by and
// buckets.
func (p *Provider) CreateTable(ctx context.Context, t catalogs.TableIdent, schema *arrow.Schema, opts map[string]string) (catalogs.TableSpec, error) {
	lay, err := parseLayout(t, opts)
	if err != nil {
		return catalogs.TableSpec{}, err
	}
	return p.create(ctx, t, schema, lay)
}

func (p *Provider) create(ctx context.Context, t catalogs.TableIdent, schema *arrow.Schema, lay layout) (catalogs.TableSpec, error) {
	db, err := p.cfg.database(t)
	if err != nil {
		return catalogs.TableSpec{}, err
	}
	ddl, err := createDDL(t, db, schema, p.cfg.replicationNum, lay)
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

// ListNamespaces implements catalogs.Lister: one namespace per database
// the catalog reaches (config.namespacesOf), in order.
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
		for _, ns := range p.cfg.namespacesOf(db) {
			out = append(out, []string{ns})
		}
	}
	if err := rows.Err(); err != nil {
		return nil, catalogs.Wrap(catalogs.ErrUnavailable, err, fmt.Sprintf("catalog %q: list databases", p.name))
	}
	slices.SortFunc(out, func(a, b []string) int { return strings.Compare(a[0], b[0]) })
	return out, nil
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
