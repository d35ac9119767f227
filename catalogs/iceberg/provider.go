package iceberg

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"

	ice "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	_ "github.com/apache/iceberg-go/catalog/rest" // registers the REST catalog
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	iceio "github.com/apache/iceberg-go/io"
	_ "github.com/apache/iceberg-go/io/gocloud/s3" // registers s3:// storage
	"github.com/apache/iceberg-go/table"
	_ "github.com/uptrace/bun/driver/pgdriver"   // Postgres driver "pg" (pure Go)
	_ "github.com/uptrace/bun/driver/sqliteshim" // SQLite driver (modernc, pure Go)

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/catalogs/lake"
)

// Type is the backend type name this package registers.
const Type = "iceberg"

func init() {
	catalogs.Register(Type, func(ctx context.Context, name string, props map[string]string) (catalogs.Provider, error) {
		p, err := Open(ctx, name, props)
		if err != nil {
			return nil, err
		}
		return p.capabilities(), nil // multitable.go
	})
}

// Provider is the Iceberg backend. It is safe for concurrent use.
type Provider struct {
	name   string
	cfg    config
	cat    catalog.Catalog
	db     *sql.DB          // owned SQL handle, nil for REST
	remote *catalogs.Remote // the catalog service
	// storage guards object storage as a whole: data file writes and the
	// deletes this package makes (iceberg-go's own reads and metadata
	// writes rely on the storage SDK's retries).
	storage *catalogs.Remote
	vendor  *vendor // REST catalogs: vended credentials
	log     *slog.Logger
	// beforeRecheck, set only by tests, runs in Reclaim between the
	// listing of a table's orphans and the re-read of its metadata.
	beforeRecheck func(catalogs.TableIdent)
	groups        lake.Groups[*member] // the commit queues of group commit (groupcommit.go)
	refs          refCache             // the reference indexes of CheckUnreferenced (refcheck.go)
	aws           awsBase              // the AWS configuration of the gateway's own S3 clients (encryption.go)
	writer        string               // this provider's WriterKey (unsettled.go)
	unsettled     unsettled            // its commits a writer may still look up (unsettled.go)
	// A SQL catalog's parsed tables by metadata location (metacache.go):
	// pointers is nil when loads are not cached (REST, a legacy schema,
	// PropMetadataCacheBytes 0); sqlCat and catProps are the catalog a
	// loaded table commits through and the properties of its FileIO, as
	// iceberg-go's LoadTable gives them (tests may wrap cat).
	pointers *metaPointers
	meta     *metaCache
	sqlCat   table.CatalogIO
	catProps ice.Properties
}

// Interfaces the provider implements.
var (
	_ catalogs.Provider            = (*Provider)(nil)
	_ catalogs.Discarder           = (*Provider)(nil)
	_ catalogs.TableManager        = (*Provider)(nil)
	_ catalogs.Lister              = (*Provider)(nil)
	_ catalogs.IdempotentCommitter = (*Provider)(nil)
	_ catalogs.Overwriter          = (*Provider)(nil)
	_ catalogs.Closer              = (*Provider)(nil)
	_ catalogs.Scanner             = (*Provider)(nil)
	_ catalogs.StreamWriter        = (*Provider)(nil)
	_ catalogs.Reclaimer           = (*Provider)(nil)
	_ catalogs.SchemaReplacer      = (*Provider)(nil)
)

// Open builds the Iceberg catalog called name from props (see the Prop*
// constants). It validates every property and returns an
// ErrInvalidArgument naming the bad key.
func Open(ctx context.Context, name string, props map[string]string) (*Provider, error) {
	if name == "" {
		return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "iceberg catalog: name is empty")
	}
	cfg, err := parseConfig(props)
	if err != nil {
		return nil, err
	}
	p := &Provider{name: name, cfg: cfg, remote: catalogs.NewRemote("iceberg:"+name, cfg.remote, isTransient),
		storage: catalogs.NewRemote("iceberg:"+name+":storage", cfg.remote, isTransient),
		log:     slog.Default().With("catalog", name, "backend", Type), writer: newWriterID()}
	switch cfg.catalogType {
	case TypeSQL:
		err = p.openSQL(ctx)
	case TypeREST:
		err = p.openREST(ctx)
	}
	if err != nil {
		return nil, err
	}
	for _, ns := range cfg.createNamespaces {
		if err := p.ensureNamespace(ctx, ns); err != nil {
			_ = p.Close()
			return nil, err
		}
	}
	return p, nil
}

// OpenEmbedded opens the embedded default lake in dataDir (see
// EmbeddedProperties), creating the catalog database, the warehouse and
// the namespace "default" when missing.
func OpenEmbedded(ctx context.Context, dataDir string) (*Provider, error) {
	props, err := EmbeddedProperties(dataDir)
	if err != nil {
		return nil, err
	}
	return Open(ctx, EmbeddedCatalogName, props)
}

func (p *Provider) openSQL(ctx context.Context) error {
	driver, dsn, dialect, err := sqlTarget(p.cfg.uri)
	if err != nil {
		return err
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		return catalogs.Wrap(catalogs.ErrInvalidArgument, err, fmt.Sprintf("catalog %q: open %s database %s", p.name, dialect, catalogs.RedactURI(p.cfg.uri)))
	}
	if dialect == "sqlite" {
		// One writer at a time is all SQLite allows; a small pool keeps
		// readers concurrent without piling up lock waits.
		db.SetMaxOpenConns(4)
	}
	props := ice.Properties(maps.Clone(p.cfg.passthrough))
	cat, err := catalogs.Guard(ctx, p.remote, true, func(ctx context.Context) (*sqlcat.Catalog, error) {
		if err := db.PingContext(ctx); err != nil {
			return nil, err
		}
		return sqlcat.NewCatalog(p.name, db, sqlcat.SupportedDialect(dialect), props)
	})
	if err != nil {
		_ = db.Close()
		return mapErr(err, fmt.Sprintf("catalog %q: open %s catalog %s", p.name, dialect, catalogs.RedactURI(p.cfg.uri)))
	}
	p.cat, p.db, p.sqlCat, p.catProps = cat, db, cat, props
	p.meta = newMetaCache(p.cfg.metaCacheBytes, metaCacheEntries)
	if p.cfg.metaCacheBytes > 0 {
		p.pointers = newMetaPointers(ctx, db, p.name, dialect)
	}
	return nil
}

func (p *Provider) openREST(ctx context.Context) error {
	props := ice.Properties(maps.Clone(p.cfg.passthrough))
	props["type"] = "rest"
	props["uri"] = p.cfg.uri
	cat, err := catalogs.Guard(ctx, p.remote, true, func(ctx context.Context) (catalog.Catalog, error) {
		return catalog.Load(ctx, p.name, props)
	})
	if err != nil {
		return mapErr(err, fmt.Sprintf("catalog %q: connect to rest catalog", p.name))
	}
	v, err := newVendor(p.cfg)
	if err != nil {
		if c, ok := cat.(catalog.Closer); ok {
			_ = c.Close()
		}
		return err
	}
	p.cat, p.vendor = cat, v
	return nil
}

// Name returns the catalog name.
func (p *Provider) Name() string { return p.name }

// Close waits for the commit rounds under way and releases the catalog's
// connections.
func (p *Provider) Close() error {
	p.groups.Wait() // the rounds under way finish first
	var errs []error
	if c, ok := p.cat.(catalog.Closer); ok {
		errs = append(errs, c.Close())
	}
	if p.db != nil {
		errs = append(errs, p.db.Close())
	}
	return errors.Join(errs...)
}

func (p *Provider) ensureNamespace(ctx context.Context, ns []string) error {
	_, err := catalogs.Guard(ctx, p.remote, true, func(ctx context.Context) (struct{}, error) {
		ok, err := p.cat.CheckNamespaceExists(ctx, ns)
		if err != nil || ok {
			return struct{}{}, err
		}
		err = p.cat.CreateNamespace(ctx, ns, nil)
		if errors.Is(err, catalog.ErrNamespaceAlreadyExists) {
			err = nil
		}
		return struct{}{}, err
	})
	return mapErr(err, fmt.Sprintf("catalog %q: create namespace %q", p.name, ns))
}

// ident checks a table identifier and converts it for iceberg-go.
func (p *Provider) ident(t catalogs.TableIdent) (table.Identifier, error) {
	if err := t.Validate(); err != nil {
		return nil, err
	}
	if t.Catalog != p.name {
		return nil, catalogs.Errorf(catalogs.ErrNotFound, "table %s: no catalog %q here (this is %q)", t, t.Catalog, p.name)
	}
	return append(slices.Clone(t.Namespace), t.Name), nil
}

// load loads the table's current metadata.
func (p *Provider) load(ctx context.Context, t catalogs.TableIdent) (*table.Table, error) {
	id, err := p.ident(t)
	if err != nil {
		return nil, err
	}
	tbl, err := catalogs.Guard(ctx, p.remote, true, func(ctx context.Context) (*table.Table, error) {
		var tbl *table.Table
		err := protect(catalogs.ErrUnavailable, "load table", func() (err error) {
			tbl, err = p.loadTable(ctx, id) // metacache.go
			return err
		})
		return tbl, err
	})
	if err != nil {
		return nil, mapErr(err, fmt.Sprintf("table %s", t))
	}
	// Every use of a table, reads included, starts here: a table whose
	// location lies outside the warehouse is refused before any file of
	// it is read, written or deleted.
	if _, err := p.checkTable(t, tbl); err != nil {
		return nil, err
	}
	return tbl, nil
}

// fileIO returns the storage of a loaded table: iceberg-go's FileIO, not
// the floor's lake.Store, which Paimon and Delta use. iceberg-go commits
// through its catalog and writes the manifests and manifest lists of a
// commit through the table's FileIO (table.Transaction), so that IO is
// the table's whatever this package does; its properties come from the
// catalog per table (a REST catalog's vended, expiring credentials and
// its own locations, which lake.Store, one warehouse root with the
// catalog's credentials, cannot express); and its file names are the
// location URIs the metadata records, which pyiceberg, Iceberg Java and
// DuckDB resolve the same way (resolveLocation). The few calls this
// package makes itself on those files (an existence check, a delete that
// takes a missing file for done, a listing for the reclaimer) therefore
// go through the same FileIO and the storage breaker, with the floor's
// rules: only storage failures count (catalogs.ClientFault), and
// lake.Reclaimer owns the age, re-read and delete of orphans.
func fileIO(ctx context.Context, tbl *table.Table) (iceio.WriteFileIO, error) {
	fs, err := tbl.FS(ctx)
	if err != nil {
		return nil, err
	}
	w, ok := fs.(iceio.WriteFileIO)
	if !ok {
		return nil, catalogs.Errorf(catalogs.ErrPermissionDenied, "table %s: storage is read-only", tbl.Identifier())
	}
	return w, nil
}

// ListNamespaces returns every namespace, nested ones included.
func (p *Provider) ListNamespaces(ctx context.Context) ([][]string, error) {
	var out [][]string
	var walk func(parent []string) error
	walk = func(parent []string) error {
		nss, err := catalogs.Guard(ctx, p.remote, true, func(ctx context.Context) ([]table.Identifier, error) {
			return p.cat.ListNamespaces(ctx, parent)
		})
		if err != nil {
			return mapErr(err, fmt.Sprintf("catalog %q: list namespaces", p.name))
		}
		for _, ns := range nss {
			if len(ns) <= len(parent) || !slices.Equal(ns[:len(parent)], parent) {
				continue // a catalog that ignores the parent filter
			}
			out = append(out, slices.Clone(ns))
			if len(ns) < 8 {
				if err := walk(ns); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := walk(nil); err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b []string) int { return slices.Compare(a, b) })
	return slices.CompactFunc(out, slices.Equal), nil
}

// ListTables returns the tables of one namespace.
func (p *Provider) ListTables(ctx context.Context, namespace []string) ([]catalogs.TableIdent, error) {
	if len(namespace) == 0 || slices.Contains(namespace, "") {
		return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "catalog %q: namespace %q is empty", p.name, namespace)
	}
	ids, err := catalogs.Guard(ctx, p.remote, true, func(ctx context.Context) ([]table.Identifier, error) {
		var ids []table.Identifier
		for id, err := range p.cat.ListTables(ctx, namespace) {
			if err != nil {
				return nil, err
			}
			ids = append(ids, id)
		}
		return ids, nil
	})
	if err != nil {
		return nil, mapErr(err, fmt.Sprintf("catalog %q: list tables of namespace %q", p.name, namespace))
	}
	out := make([]catalogs.TableIdent, 0, len(ids))
	for _, id := range ids {
		if len(id) < 2 {
			continue
		}
		out = append(out, catalogs.TableIdent{Catalog: p.name, Namespace: slices.Clone(id[:len(id)-1]), Name: id[len(id)-1]})
	}
	slices.SortFunc(out, func(a, b catalogs.TableIdent) int { return strings.Compare(a.Key(), b.Key()) })
	return out, nil
}
