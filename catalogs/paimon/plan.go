package paimon

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/flightgw/flightgw/catalogs"
)

var _ catalogs.FilePlanner = (*Provider)(nil)

// PlanFiles returns the live data files of the snapshot. The plan is
// Plain, so that the SQL engine reads the Parquet files itself, only for
// an append table on a local warehouse whose files are all Parquet written
// with the current schema and no deletion vectors: then the files, read by
// column name, are the table's rows. A primary-key table needs the merge on
// read of Scan.
func (p *Provider) PlanFiles(ctx context.Context, t catalogs.TableIdent, req catalogs.ScanRequest) (*catalogs.FilePlan, error) {
	st, err := p.load(ctx, t)
	if err != nil {
		return nil, err
	}
	if req.SnapshotID != nil && (st.snap == nil || *req.SnapshotID != st.snap.ID) {
		s, err := p.readSnapshot(ctx, t, st.dir, *req.SnapshotID)
		if err != nil {
			return nil, mapFSErr(err, fmt.Sprintf("table %s: snapshot %d", t, *req.SnapshotID))
		}
		st.snap = s
	}
	live, err := p.liveFiles(ctx, t, st.dir, st.snap)
	if err != nil {
		return nil, err
	}
	plan := &catalogs.FilePlan{FilesTotal: len(live)}
	if st.snap != nil {
		id := st.snap.ID
		plan.SnapshotID = &id
	}
	root, local := p.fs.local("")
	switch {
	case !local:
		plan.Reason = "the warehouse is not on local files"
	case len(st.schema.PrimaryKeys) > 0:
		plan.Reason = "a primary-key table is merged on read"
	case strings.EqualFold(st.schema.Options["deletion-vectors.enabled"], "true"):
		plan.Reason = "the table has deletion vectors"
	}
	if plan.Reason != "" {
		return plan, nil
	}
	for _, e := range live {
		switch {
		case e.file.SchemaID != st.schema.ID:
			plan.Reason = fmt.Sprintf("data file %s has schema %d, the table %d", e.file.FileName, e.file.SchemaID, st.schema.ID)
		case !strings.HasSuffix(e.file.FileName, ".parquet"):
			plan.Reason = fmt.Sprintf("data file %s is not Parquet", e.file.FileName)
		}
		if plan.Reason != "" {
			plan.Files, plan.FileBytes = nil, nil
			return plan, nil
		}
		abs, _ := p.fs.local(st.filePath(e))
		plan.Files = append(plan.Files, abs)
		plan.FileBytes = append(plan.FileBytes, e.file.FileSize)
	}
	plan.Root, plan.Plain = filepath.Clean(root), true
	return plan, nil
}
