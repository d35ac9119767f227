package delta

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/catalogs/lake"
	dcodec "github.com/flightgw/flightgw/codec/delta"
)

// OPTIMIZE (compaction) as Delta's: each partition's small files, and
// files carrying a deletion vector, bin-packed into files of the target
// size, in one commit of `remove` and `add` actions with dataChange
// false, which readers of the table's changes skip (nothing a reader
// sees changes).

// PropTableTargetFileSize, a table property, is the size OPTIMIZE bin-packs
// to, in bytes (delta-rs and Databricks read it; Delta Spark OSS has
// spark.databricks.delta.optimize.maxFileSize instead).
const PropTableTargetFileSize = "delta.targetFileSize"

// DefaultOptimizeTargetSize is delta-rs's OPTIMIZE target when neither
// the table nor the catalog sets one: 100 MiB (deltalake's
// `optimize.compact`, "delta.targetFileSize or 100MB"; Delta Spark's
// maxFileSize default is 1 GiB, too large for a gateway's memory budget
// of one rewrite at a time).
const DefaultOptimizeTargetSize = 100 << 20

// errOptimizeConflict is an optimize that met a concurrent change of the
// files it rewrites, or of the table's schema or protocol: abandoned, as
// Delta's conflict checker fails it.
var errOptimizeConflict = errors.New("optimize conflicts with a concurrent commit")

// optimizeTarget is the table's target size: delta.targetFileSize, else
// the catalog's optimize.target-file-size-bytes, else delta-rs's 100 MiB.
func (p *Provider) optimizeTarget(st *tableState) (int64, error) {
	v, ok := st.snap.Metadata.Configuration[PropTableTargetFileSize]
	if !ok {
		return p.cfg.optimizeTarget, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 1<<10 {
		return 0, catalogs.Errorf(catalogs.ErrFailedPrecondition, "table %s: table property %q: %q is not a size in bytes of at least 1024", st.ident, PropTableTargetFileSize, v)
	}
	return n, nil
}

// checkOptimizable refuses a table whose rows OPTIMIZE cannot copy as
// the protocol asks: on a rowTracking table copied rows keep their row
// ids and commit versions only through the materialized row-id and
// row-commit-version columns, which this backend does not write.
func checkOptimizable(st *tableState) error {
	if err := checkWritable(st); err != nil {
		return err
	}
	if err := dcodec.CheckRead(&st.snap.Protocol); err != nil {
		return catalogs.Wrap(catalogs.ErrFailedPrecondition, err, fmt.Sprintf("table %s", st.ident))
	}
	if st.snap.Protocol.Supports(dcodec.FeatureRowTracking) {
		return catalogs.Errorf(catalogs.ErrFailedPrecondition, "table %s: optimize: writer feature %q: rewritten rows must keep their row ids and commit versions in the materialized columns, which this backend does not write: optimize is refused", st.ident, dcodec.FeatureRowTracking)
	}
	return nil
}

// bins plans the rewrite: per partition, the files smaller than target
// or carrying a deletion vector, smallest first, packed greedily into
// bins of at most target bytes; a bin of one file without a deletion
// vector is left alone (rewriting it would change nothing).
func bins(st *tableState, target int64) [][]*dcodec.AddFile {
	byPart := map[string][]*dcodec.AddFile{}
	var keys []string
	for _, f := range st.snap.Files {
		if f.Size >= target && f.DeletionVector == nil {
			continue
		}
		k := partKey(f.PartitionValues)
		if _, ok := byPart[k]; !ok {
			keys = append(keys, k)
		}
		byPart[k] = append(byPart[k], f)
	}
	slices.Sort(keys)
	var out [][]*dcodec.AddFile
	for _, k := range keys {
		fs := byPart[k]
		slices.SortFunc(fs, func(a, b *dcodec.AddFile) int {
			return cmp.Or(cmp.Compare(a.Size, b.Size), cmp.Compare(a.Path, b.Path))
		})
		var bin []*dcodec.AddFile
		var size int64
		flush := func() {
			if len(bin) > 1 || len(bin) == 1 && bin[0].DeletionVector != nil {
				out = append(out, bin)
			}
			bin, size = nil, 0
		}
		for _, f := range fs {
			if len(bin) > 0 && size+f.Size > target {
				flush()
			}
			bin, size = append(bin, f), size+f.Size
		}
		flush()
	}
	return out
}

// partKey is a partition's identity: its values, null apart from "".
func partKey(pv map[string]*string) string {
	b, _ := json.Marshal(pv) // map keys sorted
	return string(b)
}

// optimize runs OPTIMIZE on t (the optimize task).
func (p *Provider) optimize(ctx context.Context, t catalogs.TableIdent, req catalogs.MaintainRequest) (catalogs.TaskReport, error) {
	tr := catalogs.TaskReport{Task: catalogs.TaskOptimize, ExpiredSnapshots: []int64{}}
	st, err := p.load(ctx, t, -1)
	if err != nil {
		return tr, err
	}
	if err := checkOptimizable(st); err != nil {
		return tr, err
	}
	target, err := p.optimizeTarget(st)
	if err != nil {
		return tr, err
	}
	plan := bins(st, target)
	if len(plan) == 0 {
		return tr, nil
	}
	var old []*dcodec.AddFile
	for _, b := range plan {
		var size int64
		for _, f := range b {
			size += f.Size
		}
		old = append(old, b...)
		tr.AddedFiles += int((size + target - 1) / target) // an estimate until written
	}
	tr.RewrittenFiles = len(old)
	if req.DryRun {
		return tr, nil
	}
	s, err := p.rewrite(ctx, st, old, target)
	if err != nil {
		return tr, err
	}
	c := &optimizeCommit{p: p, t: t, read: st, old: old, adds: s.adds, target: target}
	for i := range c.adds {
		c.adds[i].DataChange = false
	}
	tr.AddedFiles = len(c.adds)
	_, err = lake.Run[*tableState](ctx, p.cfg.commit, "table "+t.String(), "optimize", c)
	switch {
	case err == nil:
		tr.Committed = true
		if checkpointDue(&st.snap.Metadata, c.landedAt) {
			p.checkpointAfter(ctx, t, c.landedAt)
		}
		return tr, nil
	case errors.Is(err, errOptimizeConflict), errors.Is(err, catalogs.ErrConflict) && !c.uncertain:
		// Nothing of it landed: its files go (the reclaimer would, later).
		s.cleanup(context.WithoutCancel(ctx))
		tr.AddedFiles, tr.Abandoned = 0, err.Error()
		return tr, nil
	case !c.uncertain:
		s.cleanup(context.WithoutCancel(ctx))
	}
	return tr, err
}

// rewrite reads old (deletion vectors applied: a deleted row is not
// carried over) and writes the rows again through a stream of the table,
// which rolls files at target and splits them by partition as any write
// does (physical names and field ids under column mapping, stats).
func (p *Provider) rewrite(ctx context.Context, st *tableState, old []*dcodec.AddFile, target int64) (*stream, error) {
	res, err := p.scanFiles(ctx, st, old)
	if err != nil {
		return nil, err
	}
	defer res.Release()
	s, err := p.streamOn(st)
	if err != nil {
		return nil, err
	}
	s.target = target
	s.laned = false // one file at a time: fewer files is the point (lanes.go)
	for res.Next() {
		if err := s.Write(ctx, res.RecordBatch()); err != nil {
			_ = s.Abort(context.WithoutCancel(ctx))
			return nil, err
		}
	}
	if err := res.Err(); err != nil {
		_ = s.Abort(context.WithoutCancel(ctx))
		return nil, err
	}
	if _, err := s.Close(ctx); err != nil {
		return nil, err // Close cleaned up
	}
	return s, nil
}

// optimizeCommit is the optimize's side of the floor's commit loop.
type optimizeCommit struct {
	p      *Provider
	t      catalogs.TableIdent
	read   *tableState // the snapshot the rewrite read
	old    []*dcodec.AddFile
	adds   []dcodec.AddFile
	target int64
	// uncertain is set when a write of the commit file failed otherwise
	// than by losing the race: it may have landed.
	uncertain bool
	landedAt  int64
}

func (c *optimizeCommit) Load(ctx context.Context) (*tableState, error) {
	return c.p.load(ctx, c.t, -1)
}

// Landed: the commit landed when its first new file is live.
func (c *optimizeCommit) Landed(_ context.Context, st *tableState) (bool, error) {
	if len(c.adds) == 0 {
		return false, nil
	}
	for _, f := range st.snap.Files {
		if f.Path == c.adds[0].Path {
			c.landedAt = st.snap.Version // at or after its version
			return true, nil
		}
	}
	return false, nil
}

func (c *optimizeCommit) Claimed(context.Context, *tableState, *tableState, bool) (string, int64, error) {
	return "", 0, nil
}

// check applies Delta's conflict rules for a compaction to st, the
// newest snapshot: the commits since the rewrite's read conflict only if
// they removed (or gave a new deletion vector to) a file it rewrites, or
// changed the schema, the partitioning or the protocol. Appends never do.
func (c *optimizeCommit) check(st *tableState) error {
	if st.snap.Metadata.ID != c.read.snap.Metadata.ID || st.snap.Metadata.SchemaString != c.read.snap.Metadata.SchemaString ||
		!slices.Equal(st.snap.Metadata.PartitionColumns, c.read.snap.Metadata.PartitionColumns) {
		return fmt.Errorf("table %s: the metadata changed at or before version %d: %w", c.t, st.snap.Version, errOptimizeConflict)
	}
	if err := checkOptimizable(st); err != nil {
		return err
	}
	live := make(map[string]string, len(st.snap.Files))
	for _, f := range st.snap.Files {
		live[f.Path] = f.DeletionVector.UniqueID()
	}
	for _, f := range c.old {
		if dv, ok := live[f.Path]; !ok || dv != f.DeletionVector.UniqueID() {
			return fmt.Errorf("table %s: data file %s was removed or given a new deletion vector at or before version %d: %w", c.t, f.Path, st.snap.Version, errOptimizeConflict)
		}
	}
	return nil
}

// Attempt writes the next version: commitInfo (operation OPTIMIZE), a
// remove of each rewritten file and an add of each new one, all with
// dataChange false.
func (c *optimizeCommit) Attempt(ctx context.Context, st *tableState) error {
	if err := c.check(st); err != nil {
		return err
	}
	v := st.snap.Version + 1
	now := c.p.now().UnixMilli()
	ict := st.snap.Metadata.InCommitTimestamps() && slices.Contains(st.snap.Protocol.WriterFeatures, dcodec.FeatureInCommitTimestamp)
	if ict {
		now = dcodec.NextInCommitTimestamp(st.snap.CommitInfo, now)
	}
	var removed, added int64
	for _, f := range c.old {
		removed += f.Size
	}
	for _, a := range c.adds {
		added += a.Size
	}
	ci := commitInfo(now, "OPTIMIZE", map[string]any{"predicate": "[]", "zOrderBy": "[]", "auto": false,
		"targetSize": c.target}, false, "", nil)
	enc := func(v any) json.RawMessage { b, _ := json.Marshal(v); return b }
	ci.Fields["readVersion"] = enc(c.read.snap.Version)
	ci.Fields["isolationLevel"] = enc("SnapshotIsolation")
	ci.Fields["isBlindAppend"] = enc(false)
	ci.Fields["operationMetrics"] = enc(map[string]string{
		"numRemovedFiles": strconv.Itoa(len(c.old)), "numAddedFiles": strconv.Itoa(len(c.adds)),
		"numRemovedBytes": strconv.FormatInt(removed, 10), "numAddedBytes": strconv.FormatInt(added, 10)})
	if ict {
		ci.SetInCommitTimestamp(now)
	}
	acts := []dcodec.Action{{CommitInfo: ci}}
	for _, f := range c.old {
		size, ext := f.Size, true
		acts = append(acts, dcodec.Action{Remove: &dcodec.RemoveFile{Path: f.Path, DeletionTimestamp: &now, DataChange: false,
			ExtendedFileMetadata: &ext, PartitionValues: f.PartitionValues, Size: &size, Stats: f.Stats, Tags: f.Tags,
			DeletionVector: f.DeletionVector, BaseRowID: f.BaseRowID, DefaultRowCommitVersion: f.DefaultRowCommitVersion}})
	}
	for i := range c.adds {
		acts = append(acts, dcodec.Action{Add: &c.adds[i]})
	}
	b, err := dcodec.EncodeCommit(acts)
	if err != nil {
		return err
	}
	if beforeCommitWrite != nil {
		beforeCommitWrite(c.t, v)
	}
	switch err := c.p.fs.Create(ctx, st.dir+"/_delta_log/"+dcodec.CommitName(v), b); {
	case errors.Is(err, lake.ErrExists):
		return fmt.Errorf("table %s: version %d: %w", c.t, v, lake.ErrLost)
	case err != nil:
		c.uncertain = true
		return lake.MapErr(err, fmt.Sprintf("table %s: write log version %d", c.t, v))
	}
	c.landedAt = v
	return nil
}

// Recover re-reads the log after a failed write: it landed when its
// first new file is live.
func (c *optimizeCommit) Recover(ctx context.Context, err error) bool {
	if !c.uncertain {
		return false
	}
	st, lerr := c.Load(context.WithoutCancel(ctx))
	if lerr != nil {
		return false
	}
	ok, _ := c.Landed(ctx, st)
	if ok {
		c.uncertain = false
	}
	return ok
}
