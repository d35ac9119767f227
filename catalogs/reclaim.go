package catalogs

import (
	"context"
	"log/slog"
	"time"
)

// Reclaimer is implemented by backends that stage files in storage and can
// find the ones nothing will ever commit: staged data files whose writer
// died (a killed gateway), and the manifests and metadata files of commits
// that never landed (a lost compare-and-swap, a commit that timed out).
// The server calls it at start and periodically.
//
// A Reclaimer MUST NOT delete a file younger than ReclaimOptions.MinAge,
// nor one any snapshot of the table's current metadata references (data
// and delete files, manifests and manifest lists of every snapshot, the
// metadata files of the metadata log, statistics files), nor anything
// outside the table's location. It re-reads the table's metadata right
// before deleting, so that a commit landing meanwhile is respected. A
// StagedCreator's Reclaimer also deletes the files of staged creates no
// table took (killed before their commit) once every mark of the name is
// older than MinAge (CreateKeeper).
type Reclaimer interface {
	// Reclaim examines every table of the catalog, and the staged creates
	// no table took, and deletes their orphan files (or, with DryRun, only
	// reports them). A table that cannot be
	// examined is skipped and counted in TablesFailed; the error joins
	// those failures, and the report still counts what was done.
	Reclaim(ctx context.Context, opts ReclaimOptions) (ReclaimReport, error)
}

// ReclaimOptions bound what a reclaim run may delete.
type ReclaimOptions struct {
	// MinAge protects young files: only files last modified longer ago
	// than this are orphans. It must exceed the longest a transaction or
	// a staged file awaiting a distributed commit may legitimately live
	// (on any replica sharing the catalog), because the files those hold
	// are not referenced by any snapshot yet. It must be positive.
	MinAge time.Duration
	// DryRun reports the orphans (ReclaimReport.Orphans) without deleting.
	DryRun bool
	// Held, when set, returns the receipts that live units of work of this
	// process hold for a table: their files are kept whatever their age.
	Held func(ctx context.Context, table TableIdent) []WriteReceipt
}

// ReclaimReport counts what a reclaim run found and deleted.
type ReclaimReport struct {
	// Tables is the number of tables examined; TablesFailed those skipped
	// because their metadata or storage could not be read.
	Tables, TablesFailed int
	// DataFiles, ManifestFiles (manifests and manifest lists) and
	// MetadataFiles (metadata.json) count the orphans deleted (or found,
	// in a dry run); Bytes is their size.
	DataFiles, ManifestFiles, MetadataFiles int
	Bytes                                   int64
	// Creates counts the directories of staged creates that no table
	// took (a create killed before its commit) whose files were deleted
	// (or found); their files count in DataFiles and the others, their
	// marks in MetadataFiles.
	Creates int
	// Young counts the unreferenced files kept because they are younger
	// than MinAge or held by a live unit of work.
	Young int
	// Orphans lists the files a dry run would delete (empty otherwise).
	Orphans []string
}

// Files is the number of orphan files deleted (or found, in a dry run).
func (r ReclaimReport) Files() int { return r.DataFiles + r.ManifestFiles + r.MetadataFiles }

// Add sums o into r.
func (r *ReclaimReport) Add(o ReclaimReport) {
	r.Tables += o.Tables
	r.TablesFailed += o.TablesFailed
	r.DataFiles += o.DataFiles
	r.ManifestFiles += o.ManifestFiles
	r.MetadataFiles += o.MetadataFiles
	r.Bytes += o.Bytes
	r.Creates += o.Creates
	r.Young += o.Young
	r.Orphans = append(r.Orphans, o.Orphans...)
}

// LogTable logs what a reclaim of table t deleted (or found, with
// dryRun), when it found anything. metadata names the backend's
// MetadataFiles in the log ("metadata" for Iceberg's metadata.json,
// "temporary" for Paimon's interrupted writes).
func (r ReclaimReport) LogTable(ctx context.Context, log *slog.Logger, t TableIdent, dryRun bool, metadata string) {
	n := r.Files()
	if n == 0 {
		return
	}
	msg := "reclaimed orphan files"
	if dryRun {
		msg = "orphan files found (dry run)"
	}
	log.InfoContext(ctx, msg, "table", t.String(), "files", n, "bytes", r.Bytes,
		"data", r.DataFiles, "manifests", r.ManifestFiles, metadata, r.MetadataFiles)
}
