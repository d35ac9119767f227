package txn

import (
	"context"
	"strings"
	"time"

	"github.com/flightgw/flightgw/catalogs"
)

// MaintainJob is one maintenance run on one table (the MaintainTable
// action): the caller resolves the table for the client, as for a write.
type MaintainJob struct {
	Table    catalogs.TableIdent
	Provider catalogs.Provider
	Request  catalogs.MaintainRequest
	// MessageTTL is how long a prepared commit message can be committed
	// (DefaultMessageTTL when zero): no snapshot younger than this (and
	// the clock skew) that records a commit id a client may send again is
	// expired, since the repeated commit looks its id up there.
	MessageTTL time.Duration
}

// MaintainObserver is told of every maintenance run, for metrics; an
// Observer that implements it too gets the calls.
type MaintainObserver interface {
	Maintained(table catalogs.TableIdent, rep catalogs.MaintainReport, err error, took time.Duration)
}

// Maintain runs the job's maintenance under the write policy: the files
// this process's live transactions hold are never deleted (Held); no
// snapshot that records a commit id a client may send again (Replayable)
// expires younger than the commit messages' TTL plus twice the clock skew
// (the payload's preparation and the snapshot's time come from two
// replicas' clocks, the expiry's from a third); no snapshot whose writer
// may still look its commit up (CommitWindow: lookupTimeout and the skew,
// to which the backend adds its commit loop's bound); and one run per
// table at a time in this process, so that two never race each other's
// commit and deletes (a second is FailedPrecondition). Every run is
// logged and reported to the Observer.
func (m *Manager) Maintain(ctx context.Context, job MaintainJob) (catalogs.MaintainReport, error) {
	mt, ok := job.Provider.(catalogs.Maintainer)
	if !ok {
		return catalogs.MaintainReport{}, catalogs.Errorf(catalogs.ErrFailedPrecondition,
			"table %s: catalog %s runs no table maintenance", job.Table, job.Table.Catalog)
	}
	key := job.Table.Key()
	if _, busy := m.maintaining.LoadOrStore(key, struct{}{}); busy {
		return catalogs.MaintainReport{}, catalogs.Errorf(catalogs.ErrFailedPrecondition,
			"table %s: maintenance is already running on it", job.Table)
	}
	defer m.maintaining.Delete(key)

	req := job.Request
	ttl := job.MessageTTL
	if ttl <= 0 {
		ttl = DefaultMessageTTL
	}
	req.ReplayWindow = max(req.ReplayWindow, ttl+2*MaxClockSkew)
	req.Replayable = Replayable
	req.CommitWindow = max(req.CommitWindow, lookupTimeout+MaxClockSkew)
	req.Held = m.Held
	start := time.Now()
	rep, err := mt.Maintain(ctx, job.Table, req)
	rep.DryRun = req.DryRun
	took := time.Since(start)
	m.logMaintain(ctx, job.Table, req, rep, err, took)
	if o, ok := m.obs.(MaintainObserver); ok {
		o.Maintained(job.Table, rep, err, took)
	}
	return rep, err
}

func (m *Manager) logMaintain(ctx context.Context, t catalogs.TableIdent, req catalogs.MaintainRequest, rep catalogs.MaintainReport, err error, took time.Duration) {
	if err != nil {
		m.log.WarnContext(ctx, "table maintenance failed", "table", t.String(), "tasks", req.Tasks, "dry_run", req.DryRun,
			"took", took.Round(time.Millisecond), "err", err)
		return
	}
	for _, tr := range rep.Tasks {
		m.log.InfoContext(ctx, "table maintenance", "table", t.String(), "task", tr.Task, "dry_run", req.DryRun,
			"committed", tr.Committed, "abandoned", tr.Abandoned, "expired_snapshots", len(tr.ExpiredSnapshots),
			"retained_snapshots", tr.RetainedSnapshots, "files", tr.Deleted(), "bytes", tr.Bytes,
			"data", tr.DataFiles, "manifests", tr.ManifestFiles, "metadata", tr.MetadataFiles, "kept", tr.Kept,
			"rewritten", tr.RewrittenFiles, "added", tr.AddedFiles, "took", took.Round(time.Millisecond))
	}
}

// Replayable reports whether a client may send the commit that recorded
// commitID again, and find it by that id: a commit message's (msg-), an
// idempotency key's (idem-), a transaction's (txn-: a COMMIT whose
// outcome is in doubt is looked up when the transaction ends), and any id
// the gateway did not make. Only an auto-commit write's random id
// (write-) is looked up by its own write alone, right after its commit
// call (catalogs.MaintainRequest.CommitWindow covers that).
func Replayable(commitID string) bool {
	return !strings.HasPrefix(commitID, autoCommitPrefix)
}
