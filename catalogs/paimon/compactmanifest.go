package paimon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/catalogs/lake"
)

// compactManifests is Paimon Java's FileStoreCommit.compactManifest (the
// compact_manifest procedure): the current snapshot's data manifests,
// base and delta, fully merged (merge-min-count 1, full-compaction
// threshold 1 byte) into a new base list, every DELETE entry dropped with
// the ADD it cancels, and committed as a COMPACT snapshot with an empty
// delta that carries everything else (schema, record count, index
// manifest, watermark, statistics, properties, next row id). The compact
// task runs it after its own COMPACT commit: that commit's delta DELETEs
// every rewritten file and the base still ADDs each, so every read of the
// table decoded twice as many entries as it had files before the
// compaction, and the merges of later commits drop them only once 30
// small manifests gathered (manifest.merge-min-count) or the deleting
// ones reach 16 MiB (manifest.full-compaction-threshold-size). It runs
// when a manifest of the current snapshot deletes files, and does
// nothing when the merge changes no manifest; a race lost to a writer is
// retried on the new snapshot (compactRetries times at most), then given
// up: it is an optimisation of the reads, never a writer's obstacle.
func (p *Provider) compactManifests(ctx context.Context, t catalogs.TableIdent) (bool, error) {
	c := &manifestCompactor{p: p, t: t, user: "flightgw-compact-" + uuid.NewString()}
	r := p.cfg.commit
	r.Retries = min(r.Retries, compactRetries)
	if _, err := lake.Run(ctx, r, "table "+t.String(), c.user, c); err != nil {
		if errors.Is(err, catalogs.ErrConflict) {
			return false, nil
		}
		return false, err
	}
	return c.out != nil, nil
}

// manifestCompactor is compactManifests' side of lake.Run.
type manifestCompactor struct {
	p    *Provider
	t    catalogs.TableIdent
	user string
	out  *snapshot // the snapshot committed; nil when nothing was to do
}

func (c *manifestCompactor) Load(ctx context.Context) (*tableState, error) { return c.p.load(ctx, c.t) }

// Landed: the commit user is fresh; an earlier attempt that landed
// answered the loop already.
func (c *manifestCompactor) Landed(context.Context, *tableState) (bool, error) { return false, nil }

// Claimed: a manifest compaction adds no data file.
func (c *manifestCompactor) Claimed(context.Context, *tableState, *tableState, bool) (string, int64, error) {
	return "", 0, nil
}

// Recover: the snapshot is created by put-if-absent (see committer).
func (c *manifestCompactor) Recover(context.Context, error) bool { return false }

// Attempt merges st's manifests and commits snapshot N+1; a lost attempt
// deletes the files it wrote.
func (c *manifestCompactor) Attempt(ctx context.Context, st *tableState) error {
	c.out = nil
	if st.snap == nil {
		return nil
	}
	// What a compaction may commit on (its merge engines included): the
	// manifests written here name the files as they are.
	if err := c.p.checkCompactable(ctx, st); err != nil {
		return err
	}
	mo, err := parseManifestOptions(st.schema.Options)
	if err != nil {
		return catalogs.Errorf(catalogs.ErrFailedPrecondition, "table %s: %v", st.ident, err)
	}
	var before []manifestMeta
	deletes := false
	for _, l := range []string{st.snap.BaseManifestList, st.snap.DeltaManifestList} {
		if l == "" {
			continue
		}
		ms, err := c.p.readManifestList(ctx, st.ident, st.dir, l)
		if err != nil {
			return err
		}
		for _, m := range ms {
			deletes = deletes || m.NumDeleted > 0
		}
		before = append(before, ms...)
	}
	if !deletes {
		return nil
	}
	forced := mo
	forced.minCount, forced.fullThreshold = 1, 1
	w := &manifestWriter{p: c.p, st: st, prefix: uuid.NewString(), target: mo.targetSize}
	s, err := c.commit(ctx, st, before, forced, w)
	if err == nil {
		if s != nil {
			c.p.writeHints(ctx, st, s.ID)
		}
		c.out = s
		return nil
	}
	for _, f := range w.written {
		_ = c.p.fs.Remove(context.WithoutCancel(ctx), st.dir+"/manifest/"+f)
	}
	if errors.Is(err, lake.ErrExists) {
		return fmt.Errorf("table %s: snapshot-%d: %w", c.t, nextID(st), lake.ErrLost)
	}
	return err
}

// commit writes the merged base list, an empty delta list and snapshot
// N+1; nil when the merge left every manifest as it was. The lists are
// recorded in w.written with the merged manifests, for cleanup.
func (c *manifestCompactor) commit(ctx context.Context, st *tableState, before []manifestMeta, o manifestOptions, w *manifestWriter) (*snapshot, error) {
	after, err := c.p.mergeManifests(ctx, st, before, o, w)
	if err != nil {
		return nil, err
	}
	if sameManifests(before, after) {
		return nil, nil
	}
	baseName, deltaName := "manifest-list-"+w.prefix+"-0", "manifest-list-"+w.prefix+"-1"
	baseSize, err := c.p.writeList(ctx, st, baseName, after)
	if err != nil {
		return nil, err
	}
	w.written = append(w.written, baseName)
	deltaSize, err := c.p.writeList(ctx, st, deltaName, nil)
	if err != nil {
		return nil, err
	}
	w.written = append(w.written, deltaName)
	prev := st.snap
	s := &snapshot{Version: snapshotVersion, ID: prev.ID + 1, SchemaID: prev.SchemaID,
		BaseManifestList: baseName, BaseManifestListSize: &baseSize,
		DeltaManifestList: deltaName, DeltaManifestListSize: &deltaSize,
		IndexManifest: prev.IndexManifest, CommitUser: c.user, CommitIdentifier: batchCommitIdentifier,
		CommitKind: kindCompact, TimeMillis: c.p.now().UnixMilli(), TotalRecordCount: prev.TotalRecordCount,
		DeltaRecordCount: 0, Watermark: prev.Watermark, Statistics: prev.Statistics,
		Properties: prev.Properties, NextRowID: prev.NextRowID}
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := c.p.createLocked(ctx, st.ident, snapshotPath(st.dir, s.ID), b); err != nil {
		if errors.Is(err, lake.ErrExists) {
			return nil, lake.ErrExists
		}
		return nil, lake.MapErr(err, fmt.Sprintf("table %s: write snapshot-%d", st.ident, s.ID))
	}
	w.written = nil // landed: the files are the snapshot's
	return s, nil
}

// sameManifests reports whether a and b name the same manifest files.
func sameManifests(a, b []manifestMeta) bool {
	if len(a) != len(b) {
		return false
	}
	names := make(map[string]bool, len(a))
	for _, m := range a {
		names[m.FileName] = true
	}
	for _, m := range b {
		if !names[m.FileName] {
			return false
		}
	}
	return true
}
