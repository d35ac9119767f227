package iceberg

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go/catalog"
	iceio "github.com/apache/iceberg-go/io"
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

// CheckTableOptions implements catalogs.TableManager.
func (p *Provider) CheckTableOptions(t catalogs.TableIdent, schema *arrow.Schema, options map[string]string) error {
	sc, err := icebergSchema(schema, createdVersion(options))
	if err != nil {
		return fmt.Errorf("table %s: %w", t, err)
	}
	_, err = parseTableOptions(t, sc, options)
	return err
}

// CreateTable creates a table from an Arrow schema, with
// fresh field ids (see storedType for the type mapping), and the
// partition spec, sort order, format version and table properties the
// options name (options.go; anything else is ErrInvalidArgument naming
// the option). The namespace
// must exist. A SQL catalog's table goes where iceberg-go would put it,
// checked to lie inside the warehouse before its first metadata file is
// written; a REST catalog chooses the location itself, and a table it puts
// outside the warehouse is dropped again (nothing deleted) and refused.
func (p *Provider) CreateTable(ctx context.Context, t catalogs.TableIdent, schema *arrow.Schema, options map[string]string) (catalogs.TableSpec, error) {
	id, err := p.ident(t)
	if err != nil {
		return catalogs.TableSpec{}, err
	}
	sc, err := icebergSchema(schema, createdVersion(options))
	if err != nil {
		return catalogs.TableSpec{}, fmt.Errorf("table %s: %w", t, err)
	}
	to, err := parseTableOptions(t, sc, options)
	if err != nil {
		return catalogs.TableSpec{}, err
	}
	var opts []catalog.CreateTableOpt
	if to.order.Len() > 0 {
		opts = append(opts, catalog.WithSortOrder(to.order))
	}
	if to.spec != nil {
		opts = append(opts, catalog.WithPartitionSpec(to.spec))
	}
	if len(to.props) > 0 {
		opts = append(opts, catalog.WithProperties(to.props))
	}
	if p.db != nil {
		loc, err := p.newLocation(ctx, t)
		if err != nil {
			return catalogs.TableSpec{}, err
		}
		if _, err := p.checkLocation(t, loc); err != nil {
			return catalogs.TableSpec{}, err
		}
		opts = append(opts, catalog.WithLocation(loc))
		// The first metadata file is written under the table's
		// encryption (a KMS key on storage other than S3 is refused here,
		// with nothing created; a REST catalog writes it on its side).
		enc, err := encryptionFor(t.String(), to.props, nil, loc)
		if err != nil {
			return catalogs.TableSpec{}, err
		}
		if ctx, err = p.encryptContext(ctx, enc); err != nil {
			return catalogs.TableSpec{}, err
		}
	}
	tbl, err := catalogs.Guard(ctx, p.remote, false, func(ctx context.Context) (*table.Table, error) {
		var tbl *table.Table
		err := protect(catalogs.ErrInvalidArgument, "create table", func() (err error) {
			tbl, err = p.cat.CreateTable(ctx, id, sc, opts...)
			return err
		})
		return tbl, err
	})
	if err != nil {
		return catalogs.TableSpec{}, mapErr(err, fmt.Sprintf("table %s: create", t))
	}
	if _, err := p.checkTable(t, tbl); err != nil {
		_, _ = catalogs.Guard(context.WithoutCancel(ctx), p.remote, false, func(ctx context.Context) (struct{}, error) {
			return struct{}{}, p.cat.DropTable(ctx, id)
		})
		return catalogs.TableSpec{}, err
	}
	return tableSpec(tbl)
}

// DropTable drops the table and purges its files. Its location must lie
// inside the warehouse (else nothing is dropped or deleted). A REST
// catalog purges on its side. For a SQL catalog the gateway deletes the
// files itself, and only those inside the table's location, and only when
// that location is the table's own (the one CreateTable would give it): a
// table placed elsewhere by another engine, say on its namespace's
// directory, is dropped with its files left, since walking that location
// would reach other tables' files.
func (p *Provider) DropTable(ctx context.Context, t catalogs.TableIdent) error {
	id, err := p.ident(t)
	if err != nil {
		return err
	}
	tbl, err := p.load(ctx, t)
	if err != nil {
		return err
	}
	loc, err := p.checkTable(t, tbl)
	if err != nil {
		return err
	}
	_, err = catalogs.Guard(ctx, p.remote, false, func(ctx context.Context) (struct{}, error) {
		if pt, ok := p.cat.(catalog.PurgeableTable); ok && p.db == nil {
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
	if p.db != nil {
		p.purge(context.WithoutCancel(ctx), t, tbl, loc)
	}
	return nil
}

// purge deletes the files of the dropped table tbl, all inside its
// location loc (see DropTable). The table is already gone from the
// catalog: failures are logged, as iceberg-go's purge logs them.
func (p *Provider) purge(ctx context.Context, t catalogs.TableIdent, tbl *table.Table, loc storeLoc) {
	if v, ok := tbl.Properties()[table.GCEnabledKey]; ok && !strings.EqualFold(v, "true") {
		p.log.InfoContext(ctx, "drop: gc.enabled is false, files left", "table", t.String(), "location", loc.String())
		return
	}
	own, err := p.newLocation(ctx, t)
	if err == nil {
		var ol storeLoc
		if ol, err = resolveLocation(own); err == nil && ol != loc {
			err = fmt.Errorf("location %s is not the table's own %s", loc, ol)
		}
	}
	if err != nil {
		p.log.WarnContext(ctx, "drop: files left", "table", t.String(), "err", err)
		return
	}
	fsys, err := fileIO(ctx, tbl)
	if err != nil {
		p.log.WarnContext(ctx, "drop: files left", "table", t.String(), "err", err)
		return
	}
	l, ok := fsys.(iceio.ListableIO)
	if !ok {
		p.log.WarnContext(ctx, "drop: storage cannot list, files left", "table", t.String())
		return
	}
	var files []string
	werr := l.WalkDir(tbl.Location(), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if !d.IsDir() {
			files = append(files, path)
		}
		return ctx.Err()
	})
	var errs []error
	if werr != nil && !errors.Is(werr, fs.ErrNotExist) {
		errs = append(errs, werr)
	}
	for _, f := range files {
		if err := checkFile(t, loc, f); err != nil {
			errs = append(errs, err)
			continue
		}
		if _, err := catalogs.Guard(ctx, p.storage, true, func(context.Context) (struct{}, error) {
			return struct{}{}, removeFile(fsys, f)
		}); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		p.log.WarnContext(ctx, "drop: some files left", "table", t.String(), "err", errors.Join(errs...))
	}
}
