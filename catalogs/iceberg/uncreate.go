package iceberg

import (
	"context"
	"fmt"
	"strings"

	"github.com/flightgw/flightgw/catalogs"
)

var _ catalogs.Uncreator = (*Provider)(nil)

// DropUnwritten implements catalogs.Uncreator for a SQL catalog: the
// table's row is deleted only while its metadata location is still the
// one just loaded and that metadata has no snapshot, in one statement, so
// a commit that lands in between (it moves the metadata location) keeps
// the table. The metadata file of the creation is deleted after; the
// failed write's data files are its stream's to delete. A REST catalog
// has no conditional drop: its table is kept.
func (p *Provider) DropUnwritten(ctx context.Context, t catalogs.TableIdent) (bool, error) {
	if p.db == nil {
		return false, nil
	}
	tbl, err := p.load(ctx, t)
	if err != nil {
		return false, err
	}
	if len(tbl.Metadata().Snapshots()) > 0 {
		return false, nil
	}
	q := "DELETE FROM iceberg_tables WHERE catalog_name = ? AND metadata_location = ?"
	if strings.HasPrefix(p.cfg.uri, "postgres") {
		q = "DELETE FROM iceberg_tables WHERE catalog_name = $1 AND metadata_location = $2"
	}
	res, err := catalogs.Guard(ctx, p.remote, false, func(ctx context.Context) (int64, error) {
		r, err := p.db.ExecContext(ctx, q, p.name, tbl.MetadataLocation())
		if err != nil {
			return 0, err
		}
		return r.RowsAffected()
	})
	if err != nil {
		return false, mapErr(err, fmt.Sprintf("table %s: drop unwritten", t))
	}
	if res == 0 {
		return false, nil
	}
	if fsys, err := fileIO(ctx, tbl); err == nil {
		if err := removeFile(fsys, tbl.MetadataLocation()); err != nil {
			p.log.WarnContext(ctx, "drop unwritten: metadata file left", "table", t.String(), "err", err)
		}
	}
	return true, nil
}
