package starrocks

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/go-sql-driver/mysql"

	"github.com/flightgw/flightgw/catalogs"
)

// Type is the catalog type name of the backend.
const Type = "starrocks"

func init() {
	catalogs.Register(Type, func(ctx context.Context, name string, props map[string]string) (catalogs.Provider, error) {
		return Open(ctx, name, props)
	})
}

// Provider is a StarRocks catalog: Stream Load for writes, the MySQL
// protocol for metadata, DDL and scans.
type Provider struct {
	name string
	cfg  config
	http *client
	db   *sql.DB
	log  *slog.Logger

	mu sync.Mutex
	// txns are the open Stream Load transactions of this process, by
	// table and unit of work.
	txns map[string]*loadTxn
	// landed remembers the commits this process made, by label, for the
	// row counts and outcomes get_load_state does not report.
	landed map[string]landedCommit
}

// landedCommit is a commit this process saw land.
type landedCommit struct {
	out  catalogs.CommitOutcome
	rows uint64
	key  string // which receipts it held
}

// maxLanded bounds the landed-commit memory.
const maxLanded = 10000

var (
	_ catalogs.Provider            = (*Provider)(nil)
	_ catalogs.StreamWriter        = (*Provider)(nil)
	_ catalogs.IdempotentCommitter = (*Provider)(nil)
	_ catalogs.Discarder           = (*Provider)(nil)
	_ catalogs.TableManager        = (*Provider)(nil)
	_ catalogs.Lister              = (*Provider)(nil)
	_ catalogs.Scanner             = (*Provider)(nil)
	_ catalogs.QueryPusher         = (*Provider)(nil)
	_ catalogs.Closer              = (*Provider)(nil)
)

// Open builds the catalog called name from its properties. It does not
// contact the cluster: a catalog whose cluster is down opens, and its
// calls fail Unavailable until the cluster is back.
func Open(_ context.Context, name string, props map[string]string) (*Provider, error) {
	cfg, err := parseConfig(props)
	if err != nil {
		return nil, err
	}
	mc := mysql.NewConfig()
	mc.User, mc.Passwd, mc.Net, mc.Addr = cfg.user, cfg.password.Reveal(), "tcp", cfg.mysql
	mc.ParseTime, mc.InterpolateParams, mc.Timeout = true, true, cfg.timeout
	conn, err := mysql.NewConnector(mc)
	if err != nil {
		return nil, bad(propMySQL, "%v", err)
	}
	return &Provider{name: name, cfg: cfg, http: newClient(name, cfg), db: sql.OpenDB(conn),
		log: slog.Default().With("catalog", name, "backend", Type), txns: map[string]*loadTxn{}, landed: map[string]landedCommit{}}, nil
}

// Close implements catalogs.Closer.
func (p *Provider) Close() error { return p.db.Close() }

// sqlError classifies a MySQL-protocol error for table t.
func (p *Provider) sqlError(t catalogs.TableIdent, what string, err error) error {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		switch me.Number {
		case 1049:
			return catalogs.Errorf(catalogs.ErrNotFound, "table %s: %s: database does not exist", t, what)
		case 1050:
			return catalogs.Errorf(catalogs.ErrAlreadyExists, "table %s already exists", t)
		case 1051, 1146:
			return catalogs.Errorf(catalogs.ErrNotFound, "table %s does not exist", t)
		case 1044, 1045, 1142:
			return catalogs.Errorf(catalogs.ErrPermissionDenied, "table %s: %s: starrocks refused user %q: %s", t, what, p.cfg.user, me.Message)
		case 1059, 1102, 1103, 1166:
			// A name the client chose that the cluster cannot take (too
			// long, or a character it refuses): the same call fails again.
			return catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: %s: starrocks refused a name: %s", t, what, me.Message)
		}
		return catalogs.Errorf(catalogs.ErrFailedPrecondition, "table %s: %s: starrocks: %s", t, what, me.Message)
	}
	return catalogs.Wrap(catalogs.ErrUnavailable, err, fmt.Sprintf("table %s: %s over the MySQL protocol", t, what))
}

// columns reads a table's columns from information_schema.
func (p *Provider) columns(ctx context.Context, t catalogs.TableIdent) (string, []column, error) {
	db, err := p.cfg.database(t)
	if err != nil {
		return "", nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, p.cfg.timeout)
	defer cancel()
	rows, err := p.db.QueryContext(cctx, `SELECT COLUMN_NAME, DATA_TYPE, COLUMN_TYPE, IS_NULLABLE FROM information_schema.COLUMNS
		WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION`, db, t.Name)
	if err != nil {
		return db, nil, p.sqlError(t, "read columns", err)
	}
	defer rows.Close()
	var cols []column
	for rows.Next() {
		var c column
		var nullable string
		if err := rows.Scan(&c.name, &c.dataType, &c.colType, &nullable); err != nil {
			return db, nil, p.sqlError(t, "read columns", err)
		}
		c.dataType, c.colType, c.nullable = strings.ToLower(c.dataType), strings.ToLower(c.colType), strings.EqualFold(nullable, "YES")
		cols = append(cols, c)
	}
	if err := rows.Err(); err != nil {
		return db, nil, p.sqlError(t, "read columns", err)
	}
	if len(cols) == 0 {
		return db, nil, catalogs.Errorf(catalogs.ErrNotFound, "table %s does not exist", t)
	}
	return db, cols, nil
}

// GetTableSpec implements catalogs.Provider: the columns from
// information_schema, mapped to Arrow. StarRocks has no field ids or
// snapshots to report.
func (p *Provider) GetTableSpec(ctx context.Context, t catalogs.TableIdent) (catalogs.TableSpec, error) {
	db, cols, err := p.columns(ctx, t)
	if err != nil {
		return catalogs.TableSpec{}, err
	}
	fields := make([]arrow.Field, len(cols))
	spec := catalogs.TableSpec{Properties: map[string]string{"starrocks.database": db}}
	for i, c := range cols {
		fields[i] = arrow.Field{Name: c.name, Type: c.arrowType(), Nullable: c.nullable}
		spec.SchemaSpec.Fields = append(spec.SchemaSpec.Fields, catalogs.FieldMetadata{Name: c.name, DataType: fields[i].Type, Nullable: c.nullable})
	}
	spec.Schema = arrow.NewSchema(fields, nil)
	return spec, nil
}

// GetSecurityContext implements catalogs.Provider: the configured
// credential (the password, a Secret that never prints), scoped to the
// table for reads and writes. It does not expire: StarRocks users have
// static passwords.
func (p *Provider) GetSecurityContext(ctx context.Context, t catalogs.TableIdent) (catalogs.SecurityContext, error) {
	if _, _, err := p.columns(ctx, t); err != nil {
		return catalogs.SecurityContext{}, err
	}
	scope := t
	return catalogs.SecurityContext{
		Encryption: catalogs.EncryptionLevel{Kind: catalogs.EncryptionNone},
		Credentials: catalogs.CatalogCredential{Token: p.cfg.password,
			Scope: catalogs.CredentialScope{Kind: catalogs.ScopeTableReadWrite, Table: &scope}},
	}, nil
}

// checkBatch checks a batch against the table's columns before anything
// is sent: every column exists once, its type loads into the column's
// without loss, a required column is present and holds no null.
func checkBatch(t catalogs.TableIdent, cols []column, batch arrow.RecordBatch) error {
	if batch == nil {
		return catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: batch is nil", t)
	}
	byName := make(map[string]column, len(cols))
	for _, c := range cols {
		byName[strings.ToLower(c.name)] = c
	}
	seen := map[string]bool{}
	for i, f := range batch.Schema().Fields() {
		key := strings.ToLower(f.Name)
		c, ok := byName[key]
		switch {
		case !ok:
			return catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: column %q is not in the table", t, f.Name)
		case seen[key]:
			return catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: column %q appears twice", t, f.Name)
		case !loadsInto(f.Type, c):
			return catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: column %q is %s, which does not load into the table's %s", t, f.Name, f.Type, c.colType)
		case !c.nullable && batch.Column(i).NullN() > 0:
			return catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: column %q holds a null but is required", t, f.Name)
		}
		seen[key] = true
	}
	for _, c := range cols {
		if !c.nullable && !seen[strings.ToLower(c.name)] {
			return catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: column %q is missing (it is required)", t, c.name)
		}
	}
	return nil
}
