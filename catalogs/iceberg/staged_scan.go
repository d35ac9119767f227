package iceberg

import (
	"context"

	"github.com/flightgw/flightgw/catalogs"
)

var _ catalogs.StagedScanner = (*Provider)(nil)

// ScanStaged reads the table as a transaction sees it, through Scan's
// reader (iceberg-go's ReadTasks over the table's FileIO, so on S3 as on
// local files): the current snapshot's planned files, none for an
// overwrite (a replace hides the committed rows as its commit will), and
// then the data files the receipts staged, which no snapshot names yet.
// Projection and filters are Scan's; the staged files are decoded and
// checked as Commit decodes them (dataFiles), so a receipt cannot make
// the gateway read outside the table.
// It is the path for what PlanStaged cannot plan plain (a warehouse on
// S3, a staged write of an older schema).
func (p *Provider) ScanStaged(ctx context.Context, t catalogs.TableIdent, req catalogs.ScanRequest, staged []catalogs.WriteReceipt, overwrite bool) (*catalogs.ScanResult, error) {
	if req.SnapshotID != nil {
		return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: a read of a transaction's uncommitted writes has no snapshot", t)
	}
	rms, err := parseReceipts(t, staged)
	if err != nil {
		return nil, err
	}
	for _, rm := range rms {
		// A replace with a new schema reads as the table will only once
		// its commit has changed the schema; the scan projects the
		// current one.
		if rm.Replace != nil {
			return nil, catalogs.Errorf(catalogs.ErrFailedPrecondition,
				"table %s: a replace that changes the schema is staged in this transaction, which a query cannot read before it commits: commit the transaction first", t)
		}
	}
	tbl, err := p.load(ctx, t)
	if err != nil {
		return nil, err
	}
	dfs, err := dataFiles(t, tbl.Metadata(), rms)
	if err != nil {
		return nil, err
	}
	return p.scan(ctx, t, tbl, req, dfs, overwrite)
}
