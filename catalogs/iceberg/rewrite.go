package iceberg

import (
	"context"
	"errors"
	"fmt"

	ice "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/table/compaction"

	"github.com/flightgw/flightgw/catalogs"
)

// MaintenanceKey is the snapshot summary property of the snapshots table
// maintenance commits: the task that made it.
const MaintenanceKey = "flightgw.maintenance"

// rewriteDataFiles bin-packs each partition's small data files into files
// of write.target-file-size-bytes (default 512 MiB) and replaces them in
// one commit, as Iceberg Java's RewriteDataFiles does with its defaults
// (iceberg-go's compaction planner): a file under 75% of the target is a
// candidate, one over 180% is never rewritten, and a partition needs at
// least 5 candidates. The commit is a `replace` snapshot through the
// guard that fails fast on a conflict: when a writer committed since the
// table was read, the rewrite is abandoned and every file it wrote is
// removed, so a writer never waits on it or loses to it.
func (p *Provider) rewriteDataFiles(ctx context.Context, t catalogs.TableIdent, req catalogs.MaintainRequest) (catalogs.TaskReport, error) {
	tbl, err := p.load(ctx, t)
	if err != nil {
		return catalogs.TaskReport{Task: catalogs.TaskRewriteDataFiles, ExpiredSnapshots: []int64{}}, err
	}
	return p.rewriteOn(ctx, t, tbl, req)
}

// rewriteOn is rewriteDataFiles on tbl as read.
func (p *Provider) rewriteOn(ctx context.Context, t catalogs.TableIdent, tbl *table.Table, req catalogs.MaintainRequest) (catalogs.TaskReport, error) {
	tr := catalogs.TaskReport{Task: catalogs.TaskRewriteDataFiles, ExpiredSnapshots: []int64{}}
	if tbl.CurrentSnapshot() == nil {
		return tr, nil
	}
	target := tbl.Properties().GetInt64(table.WriteTargetFileSizeBytesKey, table.WriteTargetFileSizeBytesDefault)
	if target <= 0 {
		return tr, catalogs.Errorf(catalogs.ErrFailedPrecondition, "table %s: %s %d is not a size", t, table.WriteTargetFileSizeBytesKey, target)
	}
	cfg := compaction.DefaultConfig()
	cfg.TargetFileSizeBytes, cfg.MinFileSizeBytes, cfg.MaxFileSizeBytes = target, target*3/4, target*9/5
	var plan compaction.Plan
	err := protect(catalogs.ErrUnavailable, "plan rewrite", func() error {
		tasks, err := tbl.Scan().PlanFiles(ctx)
		if err != nil {
			return err
		}
		plan, err = cfg.PlanCompaction(tasks)
		return err
	})
	if err != nil {
		return tr, mapErr(err, fmt.Sprintf("table %s: rewrite data files: plan", t))
	}
	groups := make([]table.CompactionTaskGroup, 0, len(plan.Groups))
	for _, g := range plan.Groups {
		groups = append(groups, table.CompactionTaskGroup{PartitionKey: g.PartitionKey, Tasks: g.Tasks, TotalSizeBytes: g.TotalSizeBytes})
		tr.RewrittenFiles += len(g.Tasks)
	}
	if len(groups) == 0 || req.DryRun {
		tr.AddedFiles = plan.EstOutputFiles
		return tr, nil
	}
	cat := &oneShot{p: p}
	rec := &recordingIO{}
	wrapped := table.New(tbl.Identifier(), tbl.Metadata(), tbl.MetadataLocation(), rec.wrap(tbl.FS), cat)
	var res *table.RewriteResult
	err = protect(catalogs.ErrUnavailable, "rewrite data files", func() error {
		txn := wrapped.NewTransaction()
		var err error
		res, err = txn.RewriteDataFiles(ctx, groups, table.RewriteDataFilesOptions{
			SnapshotProps: ice.Properties{MaintenanceKey: catalogs.TaskRewriteDataFiles},
			GroupOptions:  []table.CompactionGroupOption{table.WithCompactionTargetFileSize(target)},
		})
		if err != nil {
			return err
		}
		_, err = txn.Commit(ctx)
		return err
	})
	if err != nil {
		// A rewrite that did not land leaves nothing: its data files,
		// manifests and list are deleted (lostAttempt keeps them only when
		// a REST commit's outcome is unknown).
		p.lostAttempt(context.WithoutCancel(ctx), tbl, cat, rec)
		if errors.Is(err, errConflict) {
			tr.Abandoned = "a writer committed first; the rewrite's files were removed"
			return tr, nil
		}
		return tr, mapErr(err, fmt.Sprintf("table %s: rewrite data files", t))
	}
	if res == nil || res.RewrittenGroups == 0 {
		tr.RewrittenFiles = 0
		return tr, nil
	}
	tr.Committed = true
	tr.RewrittenFiles, tr.AddedFiles = res.RemovedDataFiles, res.AddedDataFiles
	return tr, nil
}
