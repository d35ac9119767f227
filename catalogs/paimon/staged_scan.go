package paimon

import (
	"context"

	"github.com/flightgw/flightgw/catalogs"
)

var _ catalogs.StagedScanner = (*Provider)(nil)

// ScanStaged reads the table as a transaction sees it, through Scan's
// reader: the latest snapshot's live files (none for an overwrite) and
// then the data files the receipts staged, which no snapshot names yet.
// A primary-key table is merged on read over both by the sequence
// numbers the files carry, which their commit keeps, so the view is what
// the table will read once committed: a staged row of an existing key
// replaces the committed one (a write's sequence numbers continue its
// bucket's).
// It is the path for what PlanStaged cannot plan plain (a primary-key
// table, a warehouse on S3).
func (p *Provider) ScanStaged(ctx context.Context, t catalogs.TableIdent, req catalogs.ScanRequest, staged []catalogs.WriteReceipt, overwrite bool) (*catalogs.ScanResult, error) {
	if req.SnapshotID != nil {
		return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: a read of a transaction's uncommitted writes has no snapshot", t)
	}
	st, err := p.load(ctx, t)
	if err != nil {
		return nil, err
	}
	msgs, _, err := decodeReceipts(t, staged)
	if err != nil {
		return nil, err
	}
	var es []entry
	if !overwrite {
		if es, err = p.liveFiles(ctx, t, st.dir, st.snap); err != nil {
			return nil, err
		}
	}
	for _, m := range msgs {
		for _, f := range m.Data.NewFiles {
			es = append(es, entry{kind: fileAdd, partition: m.Partition, bucket: m.Bucket, file: f})
		}
	}
	return p.scanEntries(ctx, st, req, es, len(es))
}
