package delta

import (
	"context"
	"fmt"
	"time"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/catalogs/lake"
	dcodec "github.com/flightgw/flightgw/codec/delta"
)

// vacuumMinAge is the least age of a file the vacuum task deletes as
// unreferenced, whatever the request's floors: a staged file of a
// transaction on another replica is referenced by no version yet (the
// server's default reclaim.min_age, which its reclaim runs use).
const vacuumMinAge = 24 * time.Hour

// MaintainTasks lists the tasks Maintain runs (catalogs.Maintainer):
// OPTIMIZE, then a checkpoint of the version it left, then VACUUM.
func (p *Provider) MaintainTasks() []string {
	return []string{catalogs.TaskOptimize, catalogs.TaskCheckpoint, catalogs.TaskVacuum}
}

// Maintain runs req's tasks on table t (catalogs.Maintainer).
func (p *Provider) Maintain(ctx context.Context, t catalogs.TableIdent, req catalogs.MaintainRequest) (catalogs.MaintainReport, error) {
	tasks, err := catalogs.MaintainTasksOf(t, req, p.MaintainTasks())
	if err != nil {
		return catalogs.MaintainReport{}, err
	}
	if _, err := p.tableDir(t); err != nil {
		return catalogs.MaintainReport{}, err
	}
	var rep catalogs.MaintainReport
	for _, task := range tasks {
		var tr catalogs.TaskReport
		switch task {
		case catalogs.TaskOptimize:
			tr, err = p.optimize(ctx, t, req)
		case catalogs.TaskCheckpoint:
			tr, err = p.checkpointTask(ctx, t, req)
		case catalogs.TaskVacuum:
			tr, err = p.vacuumTask(ctx, t, req)
		}
		if err != nil {
			return rep, err
		}
		rep.Tasks = append(rep.Tasks, tr)
	}
	return rep, nil
}

// checkpointTask writes the classic checkpoint of the current version
// unless replay starts from one there already (AddedFiles 1 when it
// writes, or would).
func (p *Provider) checkpointTask(ctx context.Context, t catalogs.TableIdent, req catalogs.MaintainRequest) (catalogs.TaskReport, error) {
	tr := catalogs.TaskReport{Task: catalogs.TaskCheckpoint, ExpiredSnapshots: []int64{}}
	st, err := p.load(ctx, t, -1)
	if err != nil {
		return tr, err
	}
	if st.snap.Version == 0 || st.snap.Checkpoint == dcodec.ClassicCheckpointName(st.snap.Version) {
		return tr, nil
	}
	if err := checkWritable(st); err != nil {
		return tr, err
	}
	tr.AddedFiles = 1
	if req.DryRun {
		return tr, nil
	}
	if err := p.checkpoint(ctx, t, st.snap.Version); err != nil {
		return tr, err
	}
	tr.Committed = true
	return tr, nil
}

// vacuumTask is the reclaimer's VACUUM on this one table (Reclaim):
// files no retained version references and older than the larger of
// req.Floor() and vacuumMinAge, and the log entries metadata
// cleanup expires.
func (p *Provider) vacuumTask(ctx context.Context, t catalogs.TableIdent, req catalogs.MaintainRequest) (catalogs.TaskReport, error) {
	tr := catalogs.TaskReport{Task: catalogs.TaskVacuum, ExpiredSnapshots: []int64{}}
	opts := catalogs.ReclaimOptions{MinAge: max(req.Floor(), vacuumMinAge), DryRun: req.DryRun, Held: req.Held}
	v, err := p.vacuumTable(ctx, t, opts)
	if err != nil {
		return tr, err
	}
	r := lake.Reclaimer{Log: p.log, MetadataName: "log", BeforeRecheck: reclaimBeforeRecheck}
	rep, err := r.Reclaim(ctx, t, v, opts, p.now().Add(-opts.MinAge))
	if err != nil {
		return tr, fmt.Errorf("table %s: vacuum: %w", t, err)
	}
	tr.DataFiles, tr.MetadataFiles, tr.Bytes, tr.Kept, tr.Files = rep.DataFiles, rep.MetadataFiles, rep.Bytes, rep.Young, rep.Orphans
	tr.Committed = !req.DryRun && rep.Files() > 0
	return tr, nil
}
