package paimon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/catalogs/lake"
)

// Type is the backend type name this package registers.
const Type = "paimon"

func init() {
	catalogs.Register(Type, func(ctx context.Context, name string, props map[string]string) (catalogs.Provider, error) {
		return Open(ctx, name, props)
	})
}

// Provider is the Paimon backend on a filesystem catalog or a JDBC
// metastore. It is safe for concurrent use: every commit is a
// put-if-absent of the next snapshot file (under Paimon's JDBC lock when
// the catalog has one), so several gateways (and Paimon Java writers) may
// commit to one table.
type Provider struct {
	name string
	cfg  config
	fs   lake.Store
	s3   *lake.S3   // the storage, when the warehouse is on S3
	meta *metastore // the JDBC metastore (jdbc.go); nil for the filesystem catalog
	log  *slog.Logger
	now  func() time.Time
	refs refCache // the reference indexes of CheckUnreferenced (refcheck.go)
	seqs seqAlloc // primary-key sequence numbers handed out (seqalloc.go)
	// beforeAttempt, when set (by tests), runs after a commit attempt
	// loaded the table and before it writes, so that a test can land
	// another process's commit in between.
	beforeAttempt func()
}

// Interfaces the provider implements.
var (
	_ catalogs.Provider            = (*Provider)(nil)
	_ catalogs.Discarder           = (*Provider)(nil)
	_ catalogs.TableManager        = (*Provider)(nil)
	_ catalogs.Lister              = (*Provider)(nil)
	_ catalogs.IdempotentCommitter = (*Provider)(nil)
	_ catalogs.Overwriter          = (*Provider)(nil)
	_ catalogs.StreamWriter        = (*Provider)(nil)
	_ catalogs.Scanner             = (*Provider)(nil)
	_ catalogs.BreakerReporter     = (*Provider)(nil)
)

// Open builds the Paimon catalog called name from props (see the Prop*
// constants), creating the warehouse and the databases of
// create-namespaces when missing.
func Open(ctx context.Context, name string, props map[string]string) (*Provider, error) {
	if name == "" {
		return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "paimon catalog: name is empty")
	}
	cfg, err := parseConfig(props)
	if err != nil {
		return nil, err
	}
	p := &Provider{name: name, cfg: cfg, now: time.Now, log: slog.Default().With("catalog", name, "backend", Type)}
	if p.fs, p.s3, err = lake.OpenStore(ctx, cfg.root, cfg.s3, cfg.remote); err != nil {
		return nil, err
	}
	if cfg.jdbc != nil {
		if p.meta, err = openMetastore(ctx, name, cfg.jdbc, cfg.remote); err != nil {
			return nil, err
		}
	}
	for _, db := range cfg.createNamespaces {
		if err := p.CreateNamespace(ctx, db); err != nil {
			_ = p.Close()
			return nil, err
		}
	}
	return p, nil
}

// Name returns the catalog name.
func (p *Provider) Name() string { return p.name }

// CreateNamespace creates the database directory <db>.db when missing.
func (p *Provider) CreateNamespace(ctx context.Context, db string) error {
	if err := catalogs.ValidateName("namespace", db); err != nil {
		return err
	}
	if p.meta != nil {
		return p.meta.createDatabase(ctx, db, p.jdbcDatabaseLocation(db))
	}
	// A marker-free directory is a database in Paimon's filesystem
	// catalog; a temporary object makes the directory on every storage.
	marker := db + ".db/.flightgw-db"
	if err := p.fs.Put(ctx, marker, nil); err != nil {
		return lake.MapErr(err, fmt.Sprintf("catalog %q: create database %q", p.name, db))
	}
	return nil
}

// tableDir checks a table identifier and returns the table's directory
// relative to the warehouse: <db>.db/<table>.
func (p *Provider) tableDir(t catalogs.TableIdent) (string, error) {
	if err := t.Validate(); err != nil {
		return "", err
	}
	if t.Catalog != p.name {
		return "", catalogs.Errorf(catalogs.ErrNotFound, "table %s: no catalog %q here (this is %q)", t, t.Catalog, p.name)
	}
	if len(t.Namespace) != 1 {
		return "", catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: a Paimon database is one namespace level, not %d", t, len(t.Namespace))
	}
	return lake.Join(t.Namespace[0]+".db", t.Name)
}

// tableState is a table as one read of its metadata saw it.
type tableState struct {
	ident  catalogs.TableIdent
	dir    string
	schema *tableSchema
	snap   *snapshot // nil before the first commit
	// deletions are the snapshot's deletion vectors by dvKey, loaded by
	// a scan of a table with deletion vectors (dv.go).
	deletions map[string]deletionFile
	// create is the layout digest of a table a staged create makes
	// (stagedcreate.go), before it exists; "" for a table read from disk.
	create string
	// keep refreshes the create mark (lake.Marks) of a staged create's
	// stream; nil otherwise.
	keep *lake.Keeper
}

// load reads the table's latest schema and snapshot.
func (p *Provider) load(ctx context.Context, t catalogs.TableIdent) (*tableState, error) {
	dir, err := p.tableDir(t)
	if err != nil {
		return nil, err
	}
	if err := p.checkRegistered(ctx, t); err != nil {
		return nil, err
	}
	sc, err := p.latestSchema(ctx, t, dir)
	if err != nil {
		return nil, err
	}
	snap, err := p.latestSnapshot(ctx, t, dir)
	if err != nil {
		return nil, err
	}
	if snap != nil && snap.SchemaID != sc.ID {
		if sc, err = p.readSchema(ctx, t, dir, snap.SchemaID); err != nil {
			return nil, err
		}
	}
	return &tableState{ident: t, dir: dir, schema: sc, snap: snap}, nil
}

// latestSchema reads the schema file with the highest id, as Paimon's
// SchemaManager.latest does.
func (p *Provider) latestSchema(ctx context.Context, t catalogs.TableIdent, dir string) (*tableSchema, error) {
	names, err := p.fs.List(ctx, dir+"/schema")
	if err != nil {
		return nil, lake.MapErr(err, fmt.Sprintf("table %s: list schemas", t))
	}
	id := int64(-1)
	for _, n := range names {
		if v, ok := strings.CutPrefix(n, "schema-"); ok {
			if x, err := strconv.ParseInt(v, 10, 64); err == nil && x > id {
				id = x
			}
		}
	}
	if id < 0 {
		return nil, catalogs.Errorf(catalogs.ErrNotFound, "table %s does not exist", t)
	}
	return p.readSchema(ctx, t, dir, id)
}

func (p *Provider) readSchema(ctx context.Context, t catalogs.TableIdent, dir string, id int64) (*tableSchema, error) {
	b, err := p.fs.Read(ctx, dir+"/schema/schema-"+strconv.FormatInt(id, 10))
	if err != nil {
		return nil, lake.MapErr(err, fmt.Sprintf("table %s: schema-%d", t, id))
	}
	s, err := parseSchema(t.String(), b)
	if err != nil {
		return nil, err
	}
	if s.ID != id {
		return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: schema-%d holds id %d", t, id, s.ID)
	}
	return s, nil
}

// GetTableSpec returns the table's current schema, partition keys,
// options and snapshot.
func (p *Provider) GetTableSpec(ctx context.Context, t catalogs.TableIdent) (catalogs.TableSpec, error) {
	st, err := p.load(ctx, t)
	if err != nil {
		return catalogs.TableSpec{}, err
	}
	return st.spec(), nil
}

func (st *tableState) spec() catalogs.TableSpec {
	s := st.schema
	spec := catalogs.TableSpec{
		Schema:     s.arrowSchema(),
		SchemaSpec: catalogs.SchemaSpec{SchemaVersion: uint64(s.ID), TimestampMs: s.TimeMillis, Fields: s.fieldMetadata()},
		Properties: maps.Clone(s.Options),
	}
	if len(s.PrimaryKeys) > 0 {
		spec.Properties[optPrimaryKey] = strings.Join(s.PrimaryKeys, ",")
	}
	if len(s.PartitionKeys) > 0 {
		spec.Properties[optPartition] = strings.Join(s.PartitionKeys, ",")
	}
	for _, k := range s.PartitionKeys {
		c := s.cols[s.index(k)]
		spec.PartitionSpec.Fields = append(spec.PartitionSpec.Fields, catalogs.PartitionField{
			SourceID: c.id + 1, Name: k, Transform: catalogs.PartitionTransform{Kind: catalogs.TransformIdentity}})
	}
	if st.snap != nil {
		id := st.snap.ID
		spec.CurrentSnapshotID = &id
	}
	return spec
}

// CheckTableOptions implements catalogs.TableManager.
func (p *Provider) CheckTableOptions(t catalogs.TableIdent, schema *arrow.Schema, opts map[string]string) error {
	if err := checkClientOptions(t, opts); err != nil {
		return err
	}
	all := maps.Clone(p.cfg.tableDefaults)
	maps.Copy(all, opts)
	_, err := newSchema(t.String(), schema, all, p.now().UnixMilli())
	return err
}

// CreateTable creates a table from an Arrow schema and Paimon
// table options: bucket (-1, or a fixed count), bucket-key, primary-key
// and partition (comma-separated column lists), and any other option,
// which is kept in the schema for Paimon readers. Options override the
// catalog's table-default ones. It writes schema/schema-0 with
// put-if-absent, so of two concurrent creates one wins and the other gets
// ErrAlreadyExists.
func (p *Provider) CreateTable(ctx context.Context, t catalogs.TableIdent, schema *arrow.Schema, opts map[string]string) (catalogs.TableSpec, error) {
	dir, err := p.tableDir(t)
	if err != nil {
		return catalogs.TableSpec{}, err
	}
	if ok, err := p.databaseExists(ctx, t.Namespace[0]); err != nil || !ok {
		if err == nil {
			err = catalogs.Errorf(catalogs.ErrNotFound, "table %s: database %q does not exist", t, t.Namespace[0])
		}
		return catalogs.TableSpec{}, lake.MapErr(err, fmt.Sprintf("table %s: database", t))
	}
	if err := checkClientOptions(t, opts); err != nil {
		return catalogs.TableSpec{}, err
	}
	all := maps.Clone(p.cfg.tableDefaults)
	maps.Copy(all, opts)
	sc, err := newSchema(t.String(), schema, all, p.now().UnixMilli())
	if err != nil {
		return catalogs.TableSpec{}, err
	}
	b, err := json.MarshalIndent(sc, "", "  ")
	if err != nil {
		return catalogs.TableSpec{}, err
	}
	switch err := p.createLocked(ctx, t, dir+"/schema/schema-0", b); {
	case errors.Is(err, lake.ErrExists):
		return catalogs.TableSpec{}, catalogs.Errorf(catalogs.ErrAlreadyExists, "table %s already exists", t)
	case err != nil:
		return catalogs.TableSpec{}, lake.MapErr(err, fmt.Sprintf("table %s: write schema", t))
	}
	if err := p.registerTable(ctx, t, dir, sc); err != nil {
		return catalogs.TableSpec{}, err
	}
	st := &tableState{ident: t, dir: dir, schema: sc}
	return st.spec(), nil
}

// DropTable deletes the table's directory, data included, as Paimon's
// filesystem catalog does.
func (p *Provider) DropTable(ctx context.Context, t catalogs.TableIdent) error {
	dir, err := p.tableDir(t)
	if err != nil {
		return err
	}
	if p.meta != nil {
		return p.jdbcDropTable(ctx, t, dir)
	}
	if _, err := p.latestSchema(ctx, t, dir); err != nil {
		return err
	}
	if err := p.fs.RemoveAll(ctx, dir); err != nil {
		return lake.MapErr(err, fmt.Sprintf("table %s: drop", t))
	}
	return nil
}

// ListNamespaces lists the databases: the <db>.db directories of the
// warehouse.
func (p *Provider) ListNamespaces(ctx context.Context) ([][]string, error) {
	if p.meta != nil {
		return p.jdbcListNamespaces(ctx)
	}
	names, err := p.fs.List(ctx, "")
	if err != nil {
		return nil, lake.MapErr(err, fmt.Sprintf("catalog %q: list databases", p.name))
	}
	var out [][]string
	for _, n := range names {
		if db, ok := strings.CutSuffix(n, ".db"); ok && catalogs.ValidateName("namespace", db) == nil {
			out = append(out, []string{db})
		}
	}
	return out, nil
}

// ListTables lists the tables of a database: its directories that hold a
// schema.
func (p *Provider) ListTables(ctx context.Context, namespace []string) ([]catalogs.TableIdent, error) {
	if len(namespace) != 1 {
		return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "catalog %q: namespace %q: a Paimon database is one level", p.name, namespace)
	}
	if err := catalogs.ValidateNamespace(namespace); err != nil {
		return nil, err
	}
	if p.meta != nil {
		return p.jdbcListTables(ctx, namespace[0])
	}
	names, err := p.fs.List(ctx, namespace[0]+".db")
	if err != nil {
		return nil, lake.MapErr(err, fmt.Sprintf("catalog %q: list tables of %q", p.name, namespace[0]))
	}
	var out []catalogs.TableIdent
	for _, n := range names {
		if catalogs.ValidateName("table", n) != nil {
			continue
		}
		if ok, _ := p.fs.Exists(ctx, namespace[0]+".db/"+n+"/schema"); ok {
			out = append(out, catalogs.TableIdent{Catalog: p.name, Namespace: slices.Clone(namespace), Name: n})
		}
	}
	return out, nil
}

// GetSecurityContext reports no encryption, and as the credential the
// S3 session token of the configuration (none on a local warehouse,
// reached with the gateway's own file permissions).
func (p *Provider) GetSecurityContext(ctx context.Context, t catalogs.TableIdent) (catalogs.SecurityContext, error) {
	if _, err := p.load(ctx, t); err != nil {
		return catalogs.SecurityContext{}, err
	}
	tt := t
	cred := catalogs.CatalogCredential{Scope: catalogs.CredentialScope{Kind: catalogs.ScopeTableReadWrite, Table: &tt}}
	if p.cfg.s3 != nil {
		cred.Token = p.cfg.s3.SessionToken
	}
	return catalogs.SecurityContext{Encryption: catalogs.EncryptionLevel{Kind: catalogs.EncryptionNone}, Credentials: cred}, nil
}

// Breakers reports the state of the object storage breaker
// (catalogs.BreakerReporter); a local warehouse has none.
func (p *Provider) Breakers() []catalogs.Breaker {
	if p.s3 == nil {
		return p.metastoreBreakers()
	}
	return append([]catalogs.Breaker{{Name: "storage", State: p.s3.Breaker()}}, p.metastoreBreakers()...)
}
