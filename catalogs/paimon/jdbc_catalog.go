package paimon

import (
	"context"
	"slices"

	"github.com/flightgw/flightgw/catalogs"
)

// The provider's operations on the JDBC metastore: where the filesystem
// catalog looks at directories, JdbcCatalog looks at rows. Each method is
// a no-op (or the filesystem answer) when the catalog has no metastore.

// checkRegistered refuses a table the metastore does not list, as
// JdbcCatalog.loadTableSchema does: with a JDBC metastore a directory
// without its row is no table.
func (p *Provider) checkRegistered(ctx context.Context, t catalogs.TableIdent) error {
	if p.meta == nil {
		return nil
	}
	ok, err := p.meta.tableExists(ctx, t)
	if err != nil {
		return err
	}
	if !ok {
		return catalogs.Errorf(catalogs.ErrNotFound, "table %s does not exist", t)
	}
	return nil
}

// databaseExists reports whether db exists: its rows in the metastore, or
// its <db>.db directory.
func (p *Provider) databaseExists(ctx context.Context, db string) (bool, error) {
	if p.meta != nil {
		return p.meta.databaseExists(ctx, db)
	}
	return p.fs.Exists(ctx, db+".db")
}

// registerTable adds a created table's row and properties, as
// JdbcCatalog.createTableImpl does after writing schema-0; when the row
// cannot be added the table's directory is deleted again, so that no
// unlisted table is left behind.
func (p *Provider) registerTable(ctx context.Context, t catalogs.TableIdent, dir string, sc *tableSchema) error {
	if p.meta == nil {
		return nil
	}
	ok, err := p.meta.insertTable(ctx, t)
	if err != nil {
		// The reply may have been lost after the row landed.
		if there, rerr := p.meta.tableExists(ctx, t); rerr == nil && there {
			ok, err = true, nil
		}
	}
	if err != nil || !ok {
		if rerr := p.fs.RemoveAll(context.WithoutCancel(ctx), dir); rerr != nil {
			p.log.Warn("create table: delete the unregistered table's files", "table", t.String(), "err", rerr)
		}
		if err == nil {
			err = catalogs.Errorf(catalogs.ErrAlreadyExists, "table %s already exists", t)
		}
		return err
	}
	if err := p.meta.insertTableProperties(ctx, t, sc); err != nil {
		// The table is created and usable; the properties are a copy of
		// its schema's options for other tools, as in Java, where the
		// same failure leaves the table too.
		p.log.Warn("create table: sync table properties", "table", t.String(), "err", err)
	}
	return nil
}

// jdbcDropTable deletes the table's row and properties, then its files,
// as JdbcCatalog.dropTableImpl does: once the row is gone the table is
// dropped, and files left by a failed delete are only logged.
func (p *Provider) jdbcDropTable(ctx context.Context, t catalogs.TableIdent, dir string) error {
	ok, err := p.meta.dropTable(ctx, t)
	if !ok {
		if err == nil {
			err = catalogs.Errorf(catalogs.ErrNotFound, "table %s does not exist", t)
		}
		return err
	}
	if err != nil {
		p.log.Warn("drop table: delete table properties", "table", t.String(), "err", err)
	}
	if err := p.fs.RemoveAll(ctx, dir); err != nil {
		p.log.Warn("drop table: delete the table's files", "table", t.String(), "err", err)
	}
	return nil
}

// jdbcListNamespaces lists the metastore's databases whose names are
// valid client names.
func (p *Provider) jdbcListNamespaces(ctx context.Context) ([][]string, error) {
	dbs, err := p.meta.listDatabases(ctx)
	if err != nil {
		return nil, err
	}
	slices.Sort(dbs)
	var out [][]string
	for _, db := range dbs {
		if catalogs.ValidateName("namespace", db) == nil {
			out = append(out, []string{db})
		}
	}
	return out, nil
}

// jdbcListTables lists the metastore's tables of db.
func (p *Provider) jdbcListTables(ctx context.Context, db string) ([]catalogs.TableIdent, error) {
	names, err := p.meta.listTables(ctx, db)
	if err != nil {
		return nil, err
	}
	slices.Sort(names)
	var out []catalogs.TableIdent
	for _, n := range names {
		if catalogs.ValidateName("table", n) == nil {
			out = append(out, catalogs.TableIdent{Catalog: p.name, Namespace: []string{db}, Name: n})
		}
	}
	return out, nil
}

// metastoreBreakers reports the metastore's breaker.
func (p *Provider) metastoreBreakers() []catalogs.Breaker {
	if p.meta == nil {
		return nil
	}
	return []catalogs.Breaker{{Name: "metastore", State: p.meta.remote.State()}}
}
