package paimon

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/google/uuid"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/catalogs/lake"
	pcodec "github.com/flightgw/flightgw/codec/paimon"
	"github.com/flightgw/flightgw/internal/arrowconv"
)

// The compaction options, spelt and defaulted as Paimon Java's
// CoreOptions has them.
const (
	// optSortedRunTrigger is how many sorted runs a bucket of a
	// primary-key table holds before it is compacted: each level-0 file is
	// a run, each non-empty higher level one.
	optSortedRunTrigger = "num-sorted-run.compaction-trigger"
	// optNumLevels is the number of LSM levels; compaction writes to the
	// last (CoreOptions.numLevels: the trigger + 1 when unset).
	optNumLevels = "num-levels"
	// optTargetFileSize is the size compacted files roll at.
	optTargetFileSize = "target-file-size"
	// optCompactMinFileNum is how many small files a bucket of an append
	// table holds before they are compacted.
	optCompactMinFileNum = "compaction.min.file-num"

	defaultSortedRunTrigger     = 5
	defaultCompactMinFileNum    = 5
	defaultPKTargetFileSize     = 128 << 20
	defaultAppendTargetFileSize = 256 << 20

	// optWriteOnly is Paimon's option for a table whose writers never
	// compact: a dedicated compaction job does.
	optWriteOnly = "write-only"

	kindCompact = "COMPACT"
	// compactRetries bounds the races a compaction's commit loses before
	// it gives up (a writer's commit never waits for it).
	compactRetries = 3
)

// compactOptions are a table's compaction options.
type compactOptions struct {
	trigger, levels, minFiles int
	target                    int64
}

// maxLevel is the level compacted files are written at.
func (o compactOptions) maxLevel() int32 { return int32(o.levels - 1) }

// compactOptionsOf reads the table's compaction options; a value Paimon
// Java would refuse is FailedPrecondition naming the option.
func compactOptionsOf(st *tableState) (compactOptions, error) {
	opts := st.schema.Options
	o := compactOptions{trigger: defaultSortedRunTrigger, minFiles: defaultCompactMinFileNum, target: defaultAppendTargetFileSize}
	if len(st.schema.PrimaryKeys) > 0 {
		o.target = defaultPKTargetFileSize
	}
	count := func(k string, def, least int) (int, error) {
		v, ok := opts[k]
		if !ok {
			return def, nil
		}
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < least {
			return 0, catalogs.Errorf(catalogs.ErrFailedPrecondition, "table %s: option %s: %q is not an integer of at least %d", st.ident, k, v, least)
		}
		return n, nil
	}
	var err error
	if o.trigger, err = count(optSortedRunTrigger, o.trigger, 1); err != nil {
		return o, err
	}
	if o.levels, err = count(optNumLevels, o.trigger+1, 2); err != nil {
		return o, err
	}
	if o.minFiles, err = count(optCompactMinFileNum, o.minFiles, 1); err != nil {
		return o, err
	}
	if v, ok := opts[optTargetFileSize]; ok {
		n, err := parseMemorySize(v)
		if err != nil || n <= 0 {
			return o, catalogs.Errorf(catalogs.ErrFailedPrecondition, "table %s: option %s: %q is not a positive memory size", st.ident, optTargetFileSize, v)
		}
		o.target = n
	}
	return o, nil
}

// compactRules are the write rules (a compaction writes data files),
// except that the merge engine and sequence fields are the read's: the
// compaction merges as a read does, so every engine the read implements
// but first-row (whose level-0 rows Java's batch reads do not see, and
// which a compaction would make visible without the changelog Java
// writes) is compacted.
var compactRules = func() []optionRule {
	var out []optionRule
	for _, r := range writeRules {
		if r.key != optMergeEngine && r.key != optSequenceField {
			out = append(out, r)
		}
	}
	return append(out, ruleReadMerge, ruleReadSeq, optionRule{optMergeEngine, pkOnly(func(s *tableSchema, v string) bool { return !firstRow(s) }),
		"first-row tables are compacted by Paimon Java, which writes the changelog their readers expect"})
}()

// checkCompactable refuses a compaction of a table whose options ask for
// more than this backend does, by the snapshot's schema and the latest.
func (p *Provider) checkCompactable(ctx context.Context, st *tableState) error {
	check := func(s *tableSchema) error {
		if err := s.checkRules(st.ident, "compact", compactRules); err != nil {
			return err
		}
		v := strings.TrimSpace(s.Options[optBucket])
		if v == "" {
			v = "-1"
		}
		if b, err := strconv.Atoi(v); err != nil || (b != -1 && b < 1) {
			return catalogs.Errorf(catalogs.ErrFailedPrecondition, "table %s: option %q = %q is not a bucket mode this backend compacts (-1 for an append table, or a fixed count)", st.ident, optBucket, s.Options[optBucket])
		}
		return nil
	}
	if err := check(st.schema); err != nil {
		return err
	}
	latest, err := p.latestSchema(ctx, st.ident, st.dir)
	if err != nil {
		return err
	}
	if latest.ID != st.schema.ID {
		return catalogs.Errorf(catalogs.ErrFailedPrecondition, "table %s: the latest snapshot was written with schema %d, the table's is %d: this backend does not rewrite files across a schema change", st.ident, st.schema.ID, latest.ID)
	}
	return nil
}

// compactUnit is one bucket of one partition and the files a compaction
// rewrites there.
type compactUnit struct {
	partition pcodec.Row
	bucket    int32
	files     []entry
}

func (u compactUnit) key() string { return fmt.Sprintf("%x/%d", u.partition.Bytes(), u.bucket) }

// planCompaction picks the buckets to compact. A primary-key bucket is
// compacted whole when its sorted runs pass num-sorted-run.compaction-trigger
// (Paimon's UniversalCompaction picks on runs > trigger), or, for a full
// compaction, unless it is one file at the last level already. An append
// bucket's files below the target size are compacted when there are at
// least compaction.min.file-num of them (two, for a full compaction).
func planCompaction(st *tableState, live []entry, o compactOptions, full bool) []compactUnit {
	pk := len(st.schema.PrimaryKeys) > 0
	var units []compactUnit
	for _, files := range groupBuckets(live) {
		u := compactUnit{partition: files[0].partition, bucket: files[0].bucket}
		if pk {
			levels := map[int32]bool{}
			runs := 0
			for _, e := range files {
				if e.file.Level == 0 {
					runs++
				} else if !levels[e.file.Level] {
					levels[e.file.Level] = true
					runs++
				}
			}
			done := len(files) == 1 && files[0].file.Level == o.maxLevel()
			if (full && !done) || runs > o.trigger {
				u.files = files
			}
		} else {
			for _, e := range files {
				if e.file.FileSize < o.target {
					u.files = append(u.files, e)
				}
			}
			least := o.minFiles
			if full {
				least = 2
			}
			if len(u.files) < least {
				u.files = nil
			}
		}
		if len(u.files) > 0 {
			units = append(units, u)
		}
	}
	return units
}

// errAbandoned marks a compaction that gave up: a concurrent commit
// changed what it rewrote.
var errAbandoned = errors.New("compaction abandoned")

// compact runs the compact task (full: full_compact) as Paimon's writers
// compact: the planned buckets rewritten, then one COMPACT snapshot whose
// delta DELETEs the rewritten files and ADDs the new ones. A
// primary-key bucket is merged by the table's merge engine, as reads
// merge it; since every file of the bucket is merged into the last level,
// deletions and retractions are dropped (Paimon drops them when the
// output is the highest non-empty level). The commit retries a lost race
// when the files it rewrote are still live and no file written meanwhile
// into a compacted primary-key bucket orders before its rows; otherwise
// it gives up (the report says why) and removes what it wrote.
func (p *Provider) compact(ctx context.Context, t catalogs.TableIdent, req catalogs.MaintainRequest, full bool) (catalogs.TaskReport, error) {
	tr := catalogs.TaskReport{Task: catalogs.TaskCompact, ExpiredSnapshots: []int64{}}
	if full {
		tr.Task = catalogs.TaskFullCompact
	}
	st, err := p.load(ctx, t)
	if err != nil || st.snap == nil {
		return tr, err
	}
	if err := p.checkCompactable(ctx, st); err != nil {
		return tr, err
	}
	o, err := compactOptionsOf(st)
	if err != nil {
		return tr, err
	}
	live, err := p.liveFiles(ctx, t, st.dir, st.snap)
	if err != nil {
		return tr, err
	}
	if !full && strings.EqualFold(strings.TrimSpace(st.schema.Options[optWriteOnly]), "true") {
		// Its dedicated compaction job would fail on a conflict with this
		// one (Java's COMPACT commit gives up when a file it deletes is
		// gone): only an operator's full_compact runs.
		tr.Abandoned = fmt.Sprintf("option %q is true: the table is compacted by its own compaction job, not by its writers", optWriteOnly)
		return tr, nil
	}
	units := planCompaction(st, live, o, full)
	for _, u := range units {
		tr.RewrittenFiles += len(u.files)
	}
	if req.DryRun || len(units) == 0 {
		return tr, nil
	}
	s, err := p.newStream(st)
	if err != nil {
		return tr, err
	}
	c := &compactCommitter{p: p, t: t, user: "flightgw-compact-" + uuid.NewString(), schemaID: st.schema.ID,
		pk: len(st.schema.PrimaryKeys) > 0, maxSeq: map[string]int64{}, buckets: map[string]bool{}}
	// With sequence fields a tie on them falls to the sequence number,
	// which the compacted row raised to its key's highest.
	c.orderFree = c.pk && !partialUpdate(st.schema) && !aggregation(st.schema) && strings.TrimSpace(st.schema.Options[optSequenceField]) == ""
	for _, u := range units {
		if c.pk {
			err = s.compactPK(ctx, u, o)
		} else {
			err = s.compactAppend(ctx, u, o)
		}
		if err != nil {
			s.cleanup(context.WithoutCancel(ctx))
			return tr, err
		}
		c.buckets[u.key()] = true
		for _, e := range u.files {
			if e.file.DeleteRowCount == nil || *e.file.DeleteRowCount > 0 {
				c.orderFree = false // deletions the compaction drops, or maybe
			}
			e.kind = fileDelete
			c.inputs = append(c.inputs, e)
			c.rows -= e.file.RowCount
			c.maxSeq[u.key()] = max(c.maxSeq[u.key()], e.file.MaxSequenceNumber)
		}
	}
	for _, m := range s.done {
		total := int32(-1)
		if m.TotalBuckets != nil {
			total = *m.TotalBuckets
		}
		for _, f := range m.Data.NewFiles {
			c.added = append(c.added, entry{kind: fileAdd, partition: m.Partition, bucket: m.Bucket, totalBuckets: total, file: f})
			c.rows += f.RowCount
		}
	}
	r := p.cfg.commit
	r.Retries = min(r.Retries, compactRetries)
	_, err = lake.Run(ctx, r, "table "+t.String(), c.user, c)
	if err != nil {
		s.cleanup(context.WithoutCancel(ctx))
		switch {
		case errors.Is(err, errAbandoned):
			tr.Abandoned = c.abandoned
			return tr, nil
		case errors.Is(err, catalogs.ErrConflict):
			tr.Abandoned = err.Error()
			return tr, nil
		}
		return tr, err
	}
	tr.Committed, tr.AddedFiles = true, len(c.added)
	// The COMPACT snapshot's delta deletes every rewritten file: merge the
	// manifests so that reads decode only the live entries. The
	// compaction stands whatever happens to this.
	if _, err := p.compactManifests(ctx, t); err != nil {
		p.log.WarnContext(ctx, "paimon manifest compaction after compact failed; the compaction stands", "table", t.String(), "error", err)
	}
	return tr, nil
}

// compactPK merges a primary-key bucket's files into files at the last
// level: one sorted run, each key once with its highest sequence number.
// The bucket is merged in memory, as a read of it is.
func (s *stream) compactPK(ctx context.Context, u compactUnit, o compactOptions) error {
	st := s.st
	maxSeq := map[string]int64{}
	rec, err := s.p.mergeBucket(ctx, st, u.files, s.target, maxSeq)
	if err != nil {
		return err
	}
	defer rec.Release()
	keys := s.lay.trimmedPrimary()
	keyCols := make([]arrow.Array, len(keys))
	for j, c := range keys {
		keyCols[j] = rec.Column(c)
	}
	cmpRows, keyOf := rowComparator(keyCols), keyString(keyCols)
	idx := make([]int, rec.NumRows())
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, cmpRows)
	seqs := make([]int64, len(idx))
	for i, r := range idx {
		seqs[i] = maxSeq[keyOf(r)]
	}
	g := &group{key: u.key(), partition: u.partition, partPath: st.partitionDir(u.files[0]), bucket: u.bucket}
	var w *fileWriter
	defer func() {
		if w != nil {
			w.pf.Abort()
		}
	}()
	for off := 0; off < len(idx); off += pkChunk {
		part := idx[off:min(off+pkChunk, len(idx))]
		sorted, err := arrowconv.Take(ctx, rec, part)
		if err != nil {
			return catalogs.Wrap(catalogs.ErrInvalidArgument, err, fmt.Sprintf("table %s: sort rows", st.ident))
		}
		base := off
		err = s.writePKChunk(ctx, &w, g, sorted, keys, func(i int) int64 { return seqs[base+i] })
		sorted.Release()
		if err != nil {
			return err
		}
		w.level, w.source = o.maxLevel(), pcodec.FileSourceCompact
		if w.size() >= o.target {
			f := w
			w = nil
			if err := s.finish(f); err != nil {
				return err
			}
		}
	}
	if w == nil {
		return nil
	}
	f := w
	w = nil
	return s.finish(f)
}

// compactAppend rewrites an append bucket's small files, oldest first,
// into files of the target size at level 0, their sequence numbers
// continuing from the first file's (as Paimon's append compaction
// rewrites them).
func (s *stream) compactAppend(ctx context.Context, u compactUnit, o compactOptions) error {
	st := s.st
	files := slices.Clone(u.files)
	slices.SortStableFunc(files, func(a, b entry) int { return cmp3(a.file.MinSequenceNumber, b.file.MinSequenceNumber) })
	g := &group{key: u.key(), partition: u.partition, partPath: st.partitionDir(files[0]), bucket: u.bucket}
	seq := files[0].file.MinSequenceNumber
	var w *fileWriter
	defer func() {
		if w != nil {
			w.pf.Abort()
		}
	}()
	for _, e := range files {
		rec, err := s.p.readFile(ctx, st, e, s.target, nil)
		if err != nil {
			return err
		}
		if rec.NumRows() == 0 {
			rec.Release()
			continue
		}
		if w == nil {
			if w, err = s.newFile(ctx, g, rec, s.mem); err != nil {
				rec.Release()
				return err
			}
			w.seq, w.source = seq, pcodec.FileSourceCompact
		}
		err = w.write(rec)
		rec.Release()
		if err != nil {
			return err
		}
		if w.size() >= o.target {
			f := w
			w = nil
			if err := s.finish(f); err != nil {
				return err
			}
			seq = f.seq + f.pf.Rows()
		}
	}
	if w == nil {
		return nil
	}
	f := w
	w = nil
	return s.finish(f)
}

// compactCommitter is a compaction's side of lake.Run.
type compactCommitter struct {
	p        *Provider
	t        catalogs.TableIdent
	user     string
	schemaID int64
	pk       bool
	inputs   []entry // the rewritten files, as DELETE entries
	added    []entry
	rows     int64 // the record count the commit adds (negative: merged rows)
	// maxSeq is the highest sequence number of each compacted bucket's
	// inputs; buckets holds their keys.
	maxSeq map[string]int64
	// orderFree: a file committed meanwhile merges with the compacted
	// rows as with the rows they replace, whatever its sequence numbers
	// (deduplicate without sequence fields: a key's highest sequence
	// number wins, and the compacted row keeps its key's highest; no
	// deletion was dropped).
	orderFree bool
	buckets   map[string]bool
	abandoned string
	out       *snapshot
}

func (c *compactCommitter) Load(ctx context.Context) (*tableState, error) { return c.p.load(ctx, c.t) }

// Landed: a compaction's commit user is its own, fresh; an earlier
// attempt that landed answered the loop already.
func (c *compactCommitter) Landed(context.Context, *tableState) (bool, error) { return false, nil }

// Claimed: a compaction adds files only it wrote.
func (c *compactCommitter) Claimed(context.Context, *tableState, *tableState, bool) (string, int64, error) {
	return "", 0, nil
}

// Attempt checks the table as it is now against what the compaction
// rewrote (Paimon's conflict check of a COMPACT commit: every file it
// deletes must still be live), then commits the COMPACT snapshot.
func (c *compactCommitter) Attempt(ctx context.Context, st *tableState) error {
	if c.p.beforeAttempt != nil {
		c.p.beforeAttempt()
	}
	if reason, err := c.conflict(ctx, st); err != nil || reason != "" {
		if err == nil {
			c.abandoned = reason
			err = fmt.Errorf("table %s: %s: %w", c.t, reason, errAbandoned)
		}
		return err
	}
	s, written, err := c.p.commitEntries(ctx, st, c.user, kindCompact, append(slices.Clone(c.inputs), c.added...), c.rows, false)
	if err == nil {
		c.p.writeHints(ctx, st, s.ID)
		c.out = s
		return nil
	}
	for _, f := range written {
		_ = c.p.fs.Remove(context.WithoutCancel(ctx), st.dir+"/manifest/"+f)
	}
	if errors.Is(err, lake.ErrExists) {
		return fmt.Errorf("table %s: snapshot-%d: %w", c.t, nextID(st), lake.ErrLost)
	}
	return err
}

// conflict is why the compaction cannot commit on st ("" when it can): a
// rewritten file no longer live (deleted by an overwrite or another
// compaction), a schema change, or, in a compacted primary-key bucket, a
// file committed meanwhile whose rows do not all order after the
// compaction's when the order matters: deletions the compaction dropped
// would no longer hide its rows, and partial-update and aggregation
// merge a key's rows in sequence order.
func (c *compactCommitter) conflict(ctx context.Context, st *tableState) (string, error) {
	if st.schema.ID != c.schemaID {
		return fmt.Sprintf("the table's schema changed (%d → %d) while compacting", c.schemaID, st.schema.ID), nil
	}
	if err := c.p.checkCompactable(ctx, st); err != nil {
		return "", err
	}
	live, err := c.p.liveFiles(ctx, st.ident, st.dir, st.snap)
	if err != nil {
		return "", err
	}
	have := make(map[string]bool, len(live))
	for _, e := range live {
		have[fileKey(e)] = true
	}
	mine := make(map[string]bool, len(c.inputs))
	for _, e := range c.inputs {
		k := fileKey(e)
		if !have[k] {
			return fmt.Sprintf("file %s it rewrites was deleted by a concurrent commit (snapshot %d)", e.file.FileName, st.snap.ID), nil
		}
		mine[k] = true
	}
	if !c.pk || c.orderFree {
		return "", nil
	}
	for _, e := range live {
		u := compactUnit{partition: e.partition, bucket: e.bucket}
		if c.buckets[u.key()] && !mine[fileKey(e)] && e.file.MinSequenceNumber <= c.maxSeq[u.key()] {
			return fmt.Sprintf("file %s committed meanwhile to bucket %d holds sequence numbers from %d, not after the compacted rows' %d",
				e.file.FileName, e.bucket, e.file.MinSequenceNumber, c.maxSeq[u.key()]), nil
		}
	}
	return "", nil
}

// Recover: the snapshot is created by put-if-absent (see committer).
func (c *compactCommitter) Recover(context.Context, error) bool { return false }
