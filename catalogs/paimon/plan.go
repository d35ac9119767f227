package paimon

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/catalogs/lake"
)

var (
	_ catalogs.FilePlanner   = (*Provider)(nil)
	_ catalogs.StagedPlanner = (*Provider)(nil)
)

// PlanFiles returns the live data files of the snapshot. The plan is
// Plain, so that the SQL engine reads the Parquet files itself, only for
// an append table on a local warehouse whose files are all Parquet written
// with the current schema, without deletion vectors, INT96 timestamps or
// BINARY(n) columns: then the files, read by column name, are the table's
// rows. A primary-key table needs the merge on
// read of Scan.
func (p *Provider) PlanFiles(ctx context.Context, t catalogs.TableIdent, req catalogs.ScanRequest) (*catalogs.FilePlan, error) {
	st, err := p.load(ctx, t)
	if err != nil {
		return nil, err
	}
	if req.SnapshotID != nil && (st.snap == nil || *req.SnapshotID != st.snap.ID) {
		s, err := p.readSnapshot(ctx, t, st.dir, *req.SnapshotID)
		if err != nil {
			return nil, lake.MapErr(err, fmt.Sprintf("table %s: snapshot %d", t, *req.SnapshotID))
		}
		st.snap = s
	}
	if err := p.checkReadableState(ctx, st); err != nil {
		return nil, err
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
	p.planEntries(st, plan, live)
	return plan, nil
}

// PlanStaged plans the table as a transaction sees it: the latest
// snapshot's live files (none for an overwrite, which replaces them) and
// the data files the receipts staged, which no snapshot names yet. It is
// plain under PlanFiles' conditions, the staged files included: an append
// table on a local warehouse, every file Parquet of the current schema.
func (p *Provider) PlanStaged(ctx context.Context, t catalogs.TableIdent, _ catalogs.ScanRequest, staged []catalogs.WriteReceipt, overwrite bool) (*catalogs.FilePlan, error) {
	st, err := p.load(ctx, t)
	if err != nil {
		return nil, err
	}
	if err := p.checkReadableState(ctx, st); err != nil {
		return nil, err
	}
	msgs, metas, err := decodeReceipts(t, staged)
	if err != nil {
		return nil, err
	}
	var es []entry
	if !overwrite {
		if es, err = p.liveFiles(ctx, t, st.dir, st.snap); err != nil {
			return nil, err
		}
	}
	for _, m := range metas {
		if m.SchemaID != st.schema.ID {
			return &catalogs.FilePlan{Reason: fmt.Sprintf("a staged write has schema %d, the table %d", m.SchemaID, st.schema.ID)}, nil
		}
	}
	for _, m := range msgs {
		for _, f := range m.Data.NewFiles {
			es = append(es, entry{kind: fileAdd, partition: m.Partition, bucket: m.Bucket, file: f})
		}
	}
	plan := &catalogs.FilePlan{FilesTotal: len(es)}
	p.planEntries(st, plan, es)
	return plan, nil
}

// planEntries fills plan with the local paths of the files of es when
// reading them by column name, as they are, gives the table's rows, and
// otherwise says why not.
func (p *Provider) planEntries(st *tableState, plan *catalogs.FilePlan, es []entry) {
	root, local := p.fs.Local("")
	switch {
	case !local:
		plan.Reason = "the warehouse is not on local files"
	case len(st.schema.PrimaryKeys) > 0:
		plan.Reason = "a primary-key table is merged on read"
	case strings.EqualFold(st.schema.Options["deletion-vectors.enabled"], "true"):
		plan.Reason = "the table has deletion vectors"
	}
	for _, c := range st.schema.cols {
		if plan.Reason != "" {
			break
		}
		switch t := c.arrow.(type) {
		case *arrow.TimestampType:
			if t.Unit == arrow.Nanosecond {
				// INT96 in Paimon's files, which engines read to microseconds
				// (and the negative nanoseconds of day Java writes before 1970
				// to another instant); readFile keeps every digit.
				plan.Reason = fmt.Sprintf("column %q is %s (INT96 in the files)", c.name, c.sql)
			}
		case *arrow.FixedSizeBinaryType:
			plan.Reason = fmt.Sprintf("column %q is %s (variable-length binary in the files)", c.name, c.sql)
		}
	}
	if plan.Reason != "" {
		return
	}
	seen := map[string]bool{}
	for _, e := range es {
		switch {
		case e.file.SchemaID != st.schema.ID:
			plan.Reason = fmt.Sprintf("data file %s has schema %d, the table %d", e.file.FileName, e.file.SchemaID, st.schema.ID)
		case !strings.HasSuffix(e.file.FileName, ".parquet"):
			plan.Reason = fmt.Sprintf("data file %s is not Parquet", e.file.FileName)
		}
		if plan.Reason != "" {
			plan.Files, plan.FileBytes = nil, nil
			return
		}
		abs, _ := p.fs.Local(st.filePath(e))
		if seen[abs] {
			continue
		}
		seen[abs] = true
		plan.Files = append(plan.Files, abs)
		plan.FileBytes = append(plan.FileBytes, e.file.FileSize)
	}
	plan.Root, plan.Plain = filepath.Clean(root), true
}
