package iceberg

import (
	"context"

	"github.com/flightgw/flightgw/catalogs"
)

var _ catalogs.StagedPlanner = (*Provider)(nil)

// PlanStaged plans the table as a transaction sees it: PlanFiles' files
// (none for an overwrite) and the data files its receipts staged. Staged
// files are not pruned (the engine filters them); they are plain when the
// table is and they were written with its current schema, as local
// Parquet files under the warehouse.
func (p *Provider) PlanStaged(ctx context.Context, t catalogs.TableIdent, req catalogs.ScanRequest, staged []catalogs.WriteReceipt, overwrite bool) (*catalogs.FilePlan, error) {
	req.SnapshotID = nil
	plan, err := p.PlanFiles(ctx, t, req)
	if err != nil {
		return nil, err
	}
	if !plan.Plain && plan.Reason != reasonNoSnapshot {
		return plan, nil
	}
	// A table whose first data are the transaction's has no snapshot:
	// its committed files are none.
	plan.Reason, plan.Plain = "", true
	plan.SnapshotID = nil
	if overwrite {
		plan.Files, plan.FileBytes = nil, nil
	}
	rms, err := parseReceipts(t, staged)
	if err != nil {
		return nil, err
	}
	tbl, err := p.load(ctx, t)
	if err != nil {
		return nil, err
	}
	meta := tbl.Metadata()
	current := meta.CurrentSchema()
	seen := map[string]bool{}
	for _, f := range plan.Files {
		seen[f] = true
	}
	for _, rm := range rms {
		if !fits(rm, meta) {
			return nil, catalogs.Errorf(catalogs.ErrConflict, "table %s: a staged write was for an earlier table of the same name", t)
		}
		if current == nil || rm.SchemaID != current.ID {
			return &catalogs.FilePlan{Root: plan.Root, Reason: "a staged write has another schema than the table's"}, nil
		}
		for _, f := range rm.Files {
			path, ok := localPath(f.Path)
			if !ok || !under(path, plan.Root) {
				return &catalogs.FilePlan{Root: plan.Root, Reason: "staged file " + f.Path + " is not a local file under the warehouse"}, nil
			}
			if seen[path] {
				continue
			}
			seen[path] = true
			plan.Files = append(plan.Files, path)
			plan.FileBytes = append(plan.FileBytes, f.Bytes)
		}
	}
	return plan, nil
}
