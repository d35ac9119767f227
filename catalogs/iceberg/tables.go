package iceberg

import (
	"context"
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/flightgw/flightgw/catalogs"
)

// GetTableSpec loads the table's current schema (with field ids), partition
// spec, properties and current snapshot. It only reads, so it is
// idempotent and safe to call concurrently.
func (p *Provider) GetTableSpec(ctx context.Context, t catalogs.TableIdent) (catalogs.TableSpec, error) {
	tbl, err := p.load(ctx, t)
	if err != nil {
		return catalogs.TableSpec{}, err
	}
	return tableSpec(tbl)
}

// CreateTable creates an unpartitioned table from an Arrow schema, with
// fresh field ids (see storedType for the type mapping). The namespace
// must exist.
func (p *Provider) CreateTable(ctx context.Context, t catalogs.TableIdent, schema *arrow.Schema) (catalogs.TableSpec, error) {
	id, err := p.ident(t)
	if err != nil {
		return catalogs.TableSpec{}, err
	}
	sc, err := icebergSchema(schema)
	if err != nil {
		return catalogs.TableSpec{}, fmt.Errorf("table %s: %w", t, err)
	}
	tbl, err := guard(ctx, p.remote, false, func(ctx context.Context) (*table.Table, error) {
		var tbl *table.Table
		err := protect(catalogs.ErrInvalidArgument, "create table", func() (err error) {
			tbl, err = p.cat.CreateTable(ctx, id, sc)
			return err
		})
		return tbl, err
	})
	if err != nil {
		return catalogs.TableSpec{}, mapErr(err, fmt.Sprintf("table %s: create", t))
	}
	return tableSpec(tbl)
}

// DropTable drops the table and purges its files.
func (p *Provider) DropTable(ctx context.Context, t catalogs.TableIdent) error {
	id, err := p.ident(t)
	if err != nil {
		return err
	}
	_, err = guard(ctx, p.remote, false, func(ctx context.Context) (struct{}, error) {
		if pt, ok := p.cat.(catalog.PurgeableTable); ok {
			return struct{}{}, pt.PurgeTable(ctx, id)
		}
		return struct{}{}, p.cat.DropTable(ctx, id)
	})
	if err != nil {
		if errors.Is(err, catalog.ErrNoSuchTable) {
			return catalogs.Wrap(catalogs.ErrNotFound, err, fmt.Sprintf("table %s", t))
		}
		return mapErr(err, fmt.Sprintf("table %s: drop", t))
	}
	return nil
}
