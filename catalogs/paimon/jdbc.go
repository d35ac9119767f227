package paimon

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"

	_ "github.com/uptrace/bun/driver/pgdriver"   // Postgres driver "pg" (pure Go)
	_ "github.com/uptrace/bun/driver/sqliteshim" // SQLite driver (modernc, pure Go)

	"github.com/flightgw/flightgw/catalogs"
)

// The JDBC metastore is Paimon's JdbcCatalog (paimon-core 1.4,
// org.apache.paimon.jdbc): the same tables, columns and statements, so
// that Paimon Java on the same database and warehouse sees this gateway's
// databases and tables and the gateway sees Java's. A database is a row
// set of paimon_database_properties (or any table row naming it), a table
// a row of paimon_tables; the table's schema, snapshots and files live in
// <warehouse>/<db>.db/<table>/ exactly as in the filesystem catalog.
// Every statement runs through one catalogs.Remote (breaker, timeout per
// attempt, retry of the idempotent ones).

// Paimon's table and column names (JdbcUtils).
const (
	tblTables     = "paimon_tables"
	tblDBProps    = "paimon_database_properties"
	tblTableProps = "paimon_table_properties"
	tblLocks      = "paimon_distributed_locks"
)

// ddl is JdbcUtils' CREATE TABLE statements, made idempotent: Java checks
// DatabaseMetaData.getTables and creates what is missing, so tables this
// gateway created are the tables Java expects.
var ddl = []string{
	"CREATE TABLE IF NOT EXISTS " + tblTables + "(catalog_key VARCHAR(255) NOT NULL,database_name VARCHAR(255) NOT NULL,table_name VARCHAR(255) NOT NULL, PRIMARY KEY (catalog_key, database_name, table_name))",
	"CREATE TABLE IF NOT EXISTS " + tblDBProps + "(catalog_key VARCHAR(255) NOT NULL,database_name VARCHAR(255) NOT NULL,property_key VARCHAR(255),property_value VARCHAR(1000),PRIMARY KEY (catalog_key, database_name, property_key))",
	"CREATE TABLE IF NOT EXISTS " + tblTableProps + "(catalog_key VARCHAR(255) NOT NULL,database_name VARCHAR(255) NOT NULL,table_name VARCHAR(255) NOT NULL,property_key VARCHAR(255) NOT NULL,property_value VARCHAR(1000),PRIMARY KEY (catalog_key, database_name, table_name, property_key))",
}

// lockDDL is the SQLite and PostgreSQL dialects' lock table (identical in
// both); %d is lock-key-max-length.
const lockDDL = "CREATE TABLE IF NOT EXISTS " + tblLocks + "(lock_id VARCHAR(%d) NOT NULL,acquired_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP NOT NULL,expire_time_seconds BIGINT DEFAULT 0 NOT NULL,PRIMARY KEY (lock_id))"

// metastore is an open JDBC metastore.
type metastore struct {
	cfg     *jdbcConfig
	catalog string // the gateway's catalog name, for messages
	db      *sql.DB
	remote  *catalogs.Remote
}

// openMetastore connects and creates Paimon's tables when missing (the
// lock table only with lock.enabled, as Java does).
func openMetastore(ctx context.Context, catalog string, cfg *jdbcConfig, policy catalogs.RemotePolicy) (*metastore, error) {
	db, err := sql.Open(cfg.driver, cfg.dsn)
	if err != nil {
		return nil, catalogs.Wrap(catalogs.ErrInvalidArgument, err, fmt.Sprintf("catalog %q: property %q", catalog, PropURI))
	}
	db.SetMaxOpenConns(cfg.poolSize)
	db.SetMaxIdleConns(cfg.poolSize)
	m := &metastore{cfg: cfg, catalog: catalog, db: db, remote: catalogs.NewRemote("metastore", policy, isTransientSQL)}
	stmts := ddl
	if cfg.lock {
		stmts = append(stmts[:len(stmts):len(stmts)], fmt.Sprintf(lockDDL, cfg.lockKeyMaxLength))
	}
	for _, s := range stmts {
		_, err := m.exec(ctx, true, "create Paimon's tables", s)
		if isConstraint(err) {
			// PostgreSQL: a concurrent CREATE TABLE IF NOT EXISTS won
			// the race for the type name; the table exists now.
			_, err = m.exec(ctx, true, "create Paimon's tables", s)
		}
		if err != nil {
			_ = db.Close()
			return nil, fmt.Errorf("catalog %q: open %s metastore %s: %w", catalog, cfg.dialect, catalogs.RedactURI(cfg.dsn), err)
		}
	}
	return m, nil
}

// Close releases the metastore's connections; the filesystem catalog
// holds none.
func (p *Provider) Close() error {
	if p.meta == nil {
		return nil
	}
	return p.meta.db.Close()
}

var _ catalogs.Closer = (*Provider)(nil)

// bind rewrites JDBC's ? placeholders as PostgreSQL's $n (none of
// Paimon's statements has a ? inside a literal).
func (m *metastore) bind(q string) string {
	if m.cfg.dialect != dialectPostgres {
		return q
	}
	var b strings.Builder
	n := 0
	for _, r := range q {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// exec runs a statement and returns the rows it changed. idempotent says
// whether running it twice is harmless (then it is retried).
func (m *metastore) exec(ctx context.Context, idempotent bool, what, q string, args ...any) (int64, error) {
	n, err := catalogs.Guard(ctx, m.remote, idempotent, func(ctx context.Context) (int64, error) {
		res, err := m.db.ExecContext(ctx, m.bind(q), args...)
		if err != nil {
			return 0, err
		}
		return res.RowsAffected()
	})
	return n, m.fail(err, what)
}

// column returns the first column of every row of a query.
func (m *metastore) column(ctx context.Context, what, q string, args ...any) ([]string, error) {
	out, err := catalogs.Guard(ctx, m.remote, true, func(ctx context.Context) ([]string, error) {
		rows, err := m.db.QueryContext(ctx, m.bind(q), args...)
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var s sql.NullString
			if err := rows.Scan(&s); err != nil {
				return nil, err
			}
			out = append(out, s.String)
		}
		return out, rows.Err()
	})
	return out, m.fail(err, what)
}

// fail classifies a database error: a constraint violation is kept as it
// is (the caller knows what it means), the rest is the metastore's
// outage, ErrUnavailable.
func (m *metastore) fail(err error, what string) error {
	if err == nil || isConstraint(err) || catalogs.Kind(err) != nil {
		return err
	}
	if errors.Is(err, context.Canceled) {
		return err
	}
	return catalogs.Wrap(catalogs.ErrUnavailable, err, fmt.Sprintf("catalog %q: metastore: %s", m.catalog, what))
}

// isConstraint reports a primary-key (or other integrity) violation: the
// row is there already. PostgreSQL's SQLSTATE class 23, SQLite's
// SQLITE_CONSTRAINT (19) and its extended codes.
func isConstraint(err error) bool {
	if err == nil {
		return false
	}
	var pg interface {
		Field(byte) string
		IntegrityViolation() bool
	}
	if errors.As(err, &pg) {
		return strings.HasPrefix(pg.Field('C'), "23")
	}
	var lite interface{ Code() int }
	if errors.As(err, &lite) {
		return lite.Code()&0xff == 19
	}
	return false
}

// isTransientSQL tells an outage (counted by the breaker, retried when
// idempotent) from an answer: a constraint violation, or an error in the
// statement itself (PostgreSQL classes 42 and 22, which retrying cannot
// fix).
func isTransientSQL(err error) bool {
	if isConstraint(err) || errors.Is(err, sql.ErrNoRows) {
		return false
	}
	var pg interface{ Field(byte) string }
	if errors.As(err, &pg) {
		c := pg.Field('C')
		return !strings.HasPrefix(c, "42") && !strings.HasPrefix(c, "22")
	}
	return true
}

// databaseExists is JdbcUtils.databaseExists: a table row or a property
// row names the database.
func (m *metastore) databaseExists(ctx context.Context, db string) (bool, error) {
	for _, q := range []string{
		"SELECT database_name FROM " + tblTables + " WHERE catalog_key = ? AND database_name = ? LIMIT 1",
		"SELECT database_name FROM " + tblDBProps + " WHERE catalog_key = ? AND database_name = ? ",
	} {
		rows, err := m.column(ctx, fmt.Sprintf("database %q", db), q, m.cfg.catalogKey, db)
		if err != nil || len(rows) > 0 {
			return len(rows) > 0, err
		}
	}
	return false, nil
}

// createDatabase is JdbcCatalog.createDatabaseImpl when the database is
// missing: the properties exists=true and location=<warehouse>/<db>.db.
// Of two concurrent creates the second finds the first's rows.
func (m *metastore) createDatabase(ctx context.Context, db, location string) error {
	if ok, err := m.databaseExists(ctx, db); err != nil || ok {
		return err
	}
	_, err := m.exec(ctx, false, fmt.Sprintf("create database %q", db),
		"INSERT INTO "+tblDBProps+" (catalog_key, database_name, property_key, property_value) VALUES (?,?,?,?), (?,?,?,?)",
		m.cfg.catalogKey, db, "exists", "true", m.cfg.catalogKey, db, "location", location)
	if isConstraint(err) {
		return nil
	}
	return err
}

// listDatabases is JdbcCatalog.listDatabases: the databases of table rows
// and of property rows.
func (m *metastore) listDatabases(ctx context.Context) ([]string, error) {
	seen := map[string]bool{}
	var out []string
	for _, q := range []string{
		"SELECT DISTINCT database_name FROM " + tblTables + " WHERE catalog_key = ?",
		"SELECT DISTINCT database_name FROM " + tblDBProps + " WHERE catalog_key = ?",
	} {
		dbs, err := m.column(ctx, "list databases", q, m.cfg.catalogKey)
		if err != nil {
			return nil, err
		}
		for _, d := range dbs {
			if !seen[d] {
				seen[d] = true
				out = append(out, d)
			}
		}
	}
	return out, nil
}

// listTables is JdbcCatalog.listTablesImpl.
func (m *metastore) listTables(ctx context.Context, db string) ([]string, error) {
	return m.column(ctx, fmt.Sprintf("list tables of %q", db),
		"SELECT table_name FROM "+tblTables+" WHERE catalog_key = ? AND database_name = ?", m.cfg.catalogKey, db)
}

// tableExists is JdbcUtils.tableExists.
func (m *metastore) tableExists(ctx context.Context, t catalogs.TableIdent) (bool, error) {
	rows, err := m.column(ctx, fmt.Sprintf("table %s", t),
		"SELECT table_name FROM "+tblTables+" WHERE catalog_key = ? AND database_name = ? AND table_name = ? ",
		m.cfg.catalogKey, t.Namespace[0], t.Name)
	return len(rows) > 0, err
}

// insertTable is JdbcUtils.insertTable; false when the row exists.
func (m *metastore) insertTable(ctx context.Context, t catalogs.TableIdent) (bool, error) {
	_, err := m.exec(ctx, false, fmt.Sprintf("create table %s", t),
		"INSERT INTO "+tblTables+" (catalog_key, database_name, table_name)  VALUES (?,?,?)",
		m.cfg.catalogKey, t.Namespace[0], t.Name)
	if isConstraint(err) {
		return false, nil
	}
	return err == nil, err
}

// dropTable deletes the table's row and its properties
// (JdbcCatalog.dropTableImpl); false when there was no row.
func (m *metastore) dropTable(ctx context.Context, t catalogs.TableIdent) (bool, error) {
	n, err := m.exec(ctx, true, fmt.Sprintf("drop table %s", t),
		"DELETE FROM "+tblTables+" WHERE catalog_key = ? AND database_name = ? AND table_name = ? ",
		m.cfg.catalogKey, t.Namespace[0], t.Name)
	if err != nil || n == 0 {
		return false, err
	}
	if m.cfg.syncProperties {
		if _, err := m.exec(ctx, true, fmt.Sprintf("drop table %s: properties", t),
			"DELETE FROM "+tblTableProps+" WHERE catalog_key = ? AND database_name = ? AND table_name = ?",
			m.cfg.catalogKey, t.Namespace[0], t.Name); err != nil {
			return true, err
		}
	}
	return true, nil
}

// insertTableProperties is JdbcUtils.insertTableProperties with
// JdbcCatalog.collectTableProperties: the schema's options and its
// primary-key, partition and bucket-key.
func (m *metastore) insertTableProperties(ctx context.Context, t catalogs.TableIdent, s *tableSchema) error {
	if !m.cfg.syncProperties {
		return nil
	}
	props := map[string]string{}
	for k, v := range s.Options {
		props[k] = v
	}
	if len(s.PrimaryKeys) > 0 {
		props[optPrimaryKey] = strings.Join(s.PrimaryKeys, ",")
	}
	if len(s.PartitionKeys) > 0 {
		props[optPartition] = strings.Join(s.PartitionKeys, ",")
	}
	if l := s.layout(); len(l.bucketKey) > 0 {
		names := make([]string, len(l.bucketKey))
		for i, c := range l.bucketKey {
			names[i] = s.cols[c].name
		}
		props[optBucketKey] = strings.Join(names, ",")
	}
	if len(props) == 0 {
		return nil
	}
	q := "INSERT INTO " + tblTableProps + " (catalog_key, database_name, table_name, property_key, property_value) VALUES "
	args := make([]any, 0, 5*len(props))
	i := 0
	for k, v := range props {
		if i > 0 {
			q += ", "
		}
		q += "(?,?,?,?,?)"
		args = append(args, m.cfg.catalogKey, t.Namespace[0], t.Name, k, v)
		i++
	}
	_, err := m.exec(ctx, false, fmt.Sprintf("table %s: properties", t), q, args...)
	return err
}

// jdbcDatabaseLocation is the location property Java stores for a new
// database: newDatabasePath(name), <warehouse>/<db>.db.
func (p *Provider) jdbcDatabaseLocation(db string) string {
	return strings.TrimRight(p.cfg.jdbc.warehouse, "/") + "/" + db + ".db"
}
