package catalogs

import (
	"context"
	"slices"
	"strings"
	"time"
)

// The maintenance tasks a Maintainer may run (docs/maintenance.md), named
// as the MaintainTable action spells them.
const (
	// TaskExpireSnapshots removes the snapshots the table's retention
	// properties no longer keep, in one ordinary metadata commit, and
	// then deletes the files only those snapshots referenced.
	TaskExpireSnapshots = "expire_snapshots"
	// TaskRewriteDataFiles rewrites a partition's small data files into
	// files of the table's target size, in one replace commit that loses
	// every race with a writer (and then removes what it wrote).
	TaskRewriteDataFiles = "rewrite_data_files"
	// TaskRewriteManifests merges a table's small manifests into manifests
	// of the target size, in one replace commit that loses every race
	// with a writer; no data file is read or written.
	TaskRewriteManifests = "rewrite_manifests"
	// TaskOptimize is Delta's OPTIMIZE: a partition's small files (and
	// files with deletion vectors) bin-packed into files of the target
	// size, in one commit whose removes and adds change no data
	// (dataChange false), so it conflicts only with a commit that removed
	// a file it rewrites.
	TaskOptimize = "optimize"
	// TaskVacuum is Delta's VACUUM of one table: the files no retained
	// version references, older than the retention, deleted, and the
	// log's expired entries cleaned (the reclaimer's work, on one table).
	TaskVacuum = "vacuum"
	// TaskCheckpoint writes a checkpoint of the table's current version
	// (Delta), so that readers replay from it.
	TaskCheckpoint = "checkpoint"
	// TaskCompact compacts what the table's own options say a writer
	// would have compacted by now (Paimon: a primary-key bucket's sorted
	// runs past num-sorted-run.compaction-trigger, an append bucket's
	// small files), in one compaction commit that keeps every concurrent
	// writer's files and gives up when a file it rewrote was deleted.
	TaskCompact = "compact"
	// TaskFullCompact is TaskCompact whatever the triggers say: every
	// bucket with more than one file (or a file below the last level) is
	// rewritten. It runs only when named.
	TaskFullCompact = "full_compact"
)

// Maintainer is implemented by backends that can maintain a table
// themselves: expire old snapshots and delete the files only they
// reference, by the table's own retention properties.
//
// Maintenance loses every race with a writer: its commit goes through
// the backend's ordinary commit path and, on a conflict, is abandoned
// (MaintainReport says so) rather than retried against the writer. It
// MUST NOT delete a file any retained snapshot references, nor one a
// live unit of work holds (MaintainRequest.Held), and MUST keep the
// snapshots MaintainRequest's floors keep whatever the table's properties
// say.
type Maintainer interface {
	// MaintainTasks lists the tasks Maintain runs, in the order it runs
	// them when a request names none.
	MaintainTasks() []string
	// Maintain runs req.Tasks (all of MaintainTasks when empty) on table.
	// A task the backend does not run is ErrInvalidArgument naming it; a
	// table whose state forbids a task (a Paimon tag it cannot honour,
	// gc.enabled false) is ErrFailedPrecondition naming why.
	Maintain(ctx context.Context, table TableIdent, req MaintainRequest) (MaintainReport, error)
}

// MaintainRequest is one run of maintenance on one table.
type MaintainRequest struct {
	// Tasks names the tasks to run (TaskExpireSnapshots...); empty runs
	// every task of the backend.
	Tasks []string
	// DryRun reports what each task would do without committing or
	// deleting anything.
	DryRun bool
	// KeepNewerThan keeps every snapshot younger than this whatever the
	// table's retention (a floor of the caller's own; 0 is none).
	KeepNewerThan time.Duration
	// ReplayWindow keeps every snapshot younger than this that records a
	// commit id Replayable says a client may send again (a commit
	// message's, an idempotency key's, a transaction's whose outcome is in
	// doubt): the repeated commit looks its id up in the table's
	// snapshots, and an id whose snapshot expired would commit again
	// (txn sets it to the commit messages' TTL plus the clock skew).
	ReplayWindow time.Duration
	// Replayable tells the commit ids ReplayWindow is for; nil: every id.
	Replayable func(commitID string) bool
	// CommitWindow keeps every snapshot younger than this whose writer may
	// still be looking its commit id up: another process's (a replica's)
	// and one of this process whose commit has not answered. A commit
	// whose outcome is in doubt looks its id up once it gives up, and one
	// whose snapshot expired meanwhile would look not landed and delete
	// files the table references. A backend adds its own commit loop's
	// bound (txn sets the lookup's timeout plus the clock skew).
	CommitWindow time.Duration
	// Held, when set, returns the receipts live units of work of this
	// process hold for the table: their files are never deleted.
	Held func(ctx context.Context, table TableIdent) []WriteReceipt
}

// Floor is the age under which a backend that cannot tell which
// snapshots ReplayWindow and CommitWindow are for (it reads no commit id,
// or cannot keep a snapshot older than one it expires) keeps every
// snapshot: the largest of the three.
func (r MaintainRequest) Floor() time.Duration {
	return max(r.KeepNewerThan, r.ReplayWindow, r.CommitWindow)
}

// Replays reports whether a snapshot that recorded commitID is one a
// client may send again (Replayable).
func (r MaintainRequest) Replays(commitID string) bool {
	return r.Replayable == nil || r.Replayable(commitID)
}

// MaintainReport is what one run did (or, in a dry run, would do).
type MaintainReport struct {
	// DryRun is the request's: nothing was committed or deleted.
	DryRun bool         `json:"dry_run"`
	Tasks  []TaskReport `json:"tasks"`
}

// TaskReport is one task's part of a MaintainReport.
type TaskReport struct {
	Task string `json:"task"`
	// Committed is set when the task's commit landed (never in a dry run).
	Committed bool `json:"committed"`
	// Abandoned says why a task gave up without effect (it lost a race to
	// a writer; there was nothing to do is not abandoned).
	Abandoned string `json:"abandoned,omitempty"`
	// ExpiredSnapshots lists the snapshots removed; RetainedSnapshots
	// counts those kept.
	ExpiredSnapshots  []int64 `json:"expired_snapshots"`
	RetainedSnapshots int     `json:"retained_snapshots"`
	// DataFiles, ManifestFiles (manifests and manifest lists) and
	// MetadataFiles (snapshot or statistics files) count the files
	// deleted (or that would be, in a dry run); Bytes is their size when
	// known.
	DataFiles     int   `json:"data_files"`
	ManifestFiles int   `json:"manifest_files"`
	MetadataFiles int   `json:"metadata_files"`
	Bytes         int64 `json:"bytes"`
	// RewrittenFiles counts the files a rewrite replaced (or would): data
	// files for rewrite_data_files, manifests for rewrite_manifests;
	// AddedFiles those it wrote in their place.
	RewrittenFiles int `json:"rewritten_files"`
	AddedFiles     int `json:"added_files"`
	// Kept counts the files only expired snapshots referenced that were
	// kept because a live unit of work holds them.
	Kept int `json:"kept"`
	// Files lists the files a dry run would delete (empty otherwise).
	Files []string `json:"files,omitempty"`
}

// Deleted is the number of files the task deleted (or would delete).
func (r TaskReport) Deleted() int { return r.DataFiles + r.ManifestFiles + r.MetadataFiles }

// MaintainTasksOf resolves the tasks of req against what a backend runs:
// all of them when req names none; a name it does not run, or one given
// twice, is ErrInvalidArgument naming it.
func MaintainTasksOf(table TableIdent, req MaintainRequest, supported []string) ([]string, error) {
	if len(req.Tasks) == 0 {
		return slices.Clone(supported), nil
	}
	seen := map[string]bool{}
	out := make([]string, 0, len(req.Tasks))
	for _, t := range req.Tasks {
		if !slices.Contains(supported, t) {
			return nil, Errorf(ErrInvalidArgument, "table %s: maintenance task %q is not one this catalog runs (%s)",
				table, t, strings.Join(supported, ", "))
		}
		if seen[t] {
			return nil, Errorf(ErrInvalidArgument, "table %s: maintenance task %q is given twice", table, t)
		}
		seen[t] = true
		out = append(out, t)
	}
	return out, nil
}
