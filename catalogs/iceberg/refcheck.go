package iceberg

import (
	"context"

	"github.com/flightgw/flightgw/catalogs"
)

var _ catalogs.ReferenceChecker = (*Provider)(nil)

// CheckUnreferenced refuses receipts any of whose files a snapshot of the
// table references, current or older (the reclaimer's walk of the
// metadata): deleting such a file would break the table for every reader.
func (p *Provider) CheckUnreferenced(ctx context.Context, t catalogs.TableIdent, receipts []catalogs.WriteReceipt) error {
	rms, err := parseReceipts(t, receipts)
	if err != nil {
		return err
	}
	tbl, err := p.load(ctx, t)
	if err != nil {
		return err
	}
	fsys, err := fileIO(ctx, tbl)
	if err != nil {
		return err
	}
	r := newRefs()
	if err := r.addTable(fsys, tbl); err != nil {
		return err
	}
	for _, rm := range rms {
		for _, f := range rm.Files {
			if r.has(f.Path) {
				return catalogs.Errorf(catalogs.ErrFailedPrecondition,
					"table %s: file %s is referenced by a snapshot of the table (it was committed)", t, f.Path)
			}
		}
	}
	return nil
}
