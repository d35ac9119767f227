package paimon

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/catalogs/lake"
)

// What a table's options ask of its writers and readers. Paimon Java
// tables (Flink's, Spark's) carry options that change what a writer must
// do: keep deletion vectors or a key-to-bucket hash index in the
// snapshot's index manifest, merge rows by another engine, order them by
// a field, produce changelog files, write another file format. This
// backend writes the plain case only, and reads what it implements as
// Java does (deletion vectors: dv.go; the merge engines: scan.go,
// partial.go, aggregate.go): a table that asks more is refused,
// FailedPrecondition naming the table and the option, rather than
// written so that Paimon's readers see other rows than the writes imply
// (or none), or read so that the gateway's SQL returns rows Paimon would
// not. docs/paimon.md lists the options.

// optionRule is one option this backend checks before a write or a read:
// the values it handles as Paimon Java does (ok), and why the others are
// refused.
type optionRule struct {
	key string
	// ok reports whether value v (trimmed; "" when unset) is one this
	// backend handles. s is the table, for options whose meaning depends
	// on the layout (bucket with a primary key).
	ok  func(s *tableSchema, v string) bool
	why string
}

func unset(_ *tableSchema, v string) bool { return v == "" }

func isFalse(_ *tableSchema, v string) bool { return v == "" || strings.EqualFold(v, "false") }

func oneOf(vals ...string) func(*tableSchema, string) bool {
	return func(_ *tableSchema, v string) bool {
		return v == "" || slices.ContainsFunc(vals, func(w string) bool { return strings.EqualFold(v, w) })
	}
}

// pkOnly applies ok only to a primary-key table (the option means
// nothing to an append table: Paimon ignores it there).
func pkOnly(ok func(*tableSchema, string) bool) func(*tableSchema, string) bool {
	return func(s *tableSchema, v string) bool { return len(s.PrimaryKeys) == 0 || ok(s, v) }
}

// Rules of writes (ruleType and ruleDir apply to reads too).
var (
	ruleType = optionRule{optType, oneOf("table"), "is not a Paimon file-store table"}
	ruleDV   = optionRule{optDeletionVectors, isFalse,
		"deletion vectors mark rows deleted in index files this backend does not maintain (and Paimon's readers skip the level-0 files it writes)"}
	ruleMerge = optionRule{optMergeEngine, pkOnly(oneOf("deduplicate")),
		"only the deduplicate merge engine is written here (another needs its own writer: level-0 files invisible to first-row readers, partial rows)"}
	ruleSeq = optionRule{optSequenceField, pkOnly(unset),
		"rows are ordered by that field before the sequence number; this backend's writer merges a batch's rows by arrival"}
	rulePostpone = optionRule{optBucket, func(_ *tableSchema, v string) bool { return v != "-2" },
		"postponed buckets (bucket -2) hold rows Paimon's readers do not see until a compaction assigns them"}
	ruleDir = optionRule{optDataFileDir, unset, "data files live in another directory than this backend reads and writes"}
)

// writeRules are the options a write must handle as Paimon Java's
// writers do.
var writeRules = []optionRule{
	ruleType, ruleDV, ruleMerge, ruleSeq, rulePostpone, ruleDir,
	{optBucket, func(s *tableSchema, v string) bool { return len(s.PrimaryKeys) == 0 || v != "-1" },
		"a primary-key table with dynamic buckets (bucket -1) keeps a key-to-bucket hash index (and, when the primary key leaves out a partition column, moves keys across partitions) that this backend does not maintain"},
	{optBucketFunction, oneOf("default"), "rows are hashed to buckets by another function than Paimon's default one, which this backend implements"},
	{optFileFormat, oneOf("parquet"), "this backend writes Parquet data files only"},
	{optFormatPerLevel, unset, "level-0 files may have to be in another format than Parquet"},
	{optChangelogProducer, oneOf("none"), "a changelog producer writes changelog files (or compacts) on every commit"},
	{optRowKindField, unset, "a row's kind comes from a field, which this backend does not read"},
	{optRowTracking, isFalse, "row tracking assigns row ids this backend does not assign"},
	{optDataEvolution, isFalse, "data evolution writes column files this backend does not write"},
	{optGlobalIndex, isFalse, "a global index is kept in the index manifest, which this backend does not maintain"},
	{optThinMode, isFalse, "thin data files leave out the key columns this backend writes"},
	{optExternalPaths, unset, "data files belong in external paths"},
	{optPartitionDefault, oneOf(defaultPartitionName), "null partition values get another directory name than this backend writes"},
	{optPartitionLegacy, oneOf("true"), "partition directories are spelled by casts to string, not by the legacy toString this backend writes"},
	{optManifestFormat, oneOf("avro"), "this backend writes Avro manifests only"},
	{optBlobField, unset, "blob columns are written as separate blob files"},
	{optVectorField, unset, "vector columns are written as separate vector files"},
	{optChainTable, isFalse, "a chain table spans branches"},
	{optPKClustering, isFalse, "files are sorted by clustering columns, not by the primary key"},
}

// readRules are the options a read must honour to return the rows Paimon
// Java's readers return (deletion vectors are applied: dv.go).
var readRules = []optionRule{ruleType, ruleReadMerge, ruleReadSeq, ruleDir}

// ruleReadSeq: a read orders rows by the sequence fields (deduplicate).
var ruleReadSeq = optionRule{optSequenceField, func(s *tableSchema, v string) bool { return v == "" || !firstRow(s) },
	"first-row with sequence fields is not implemented here"}

// ruleReadMerge: a read implements deduplicate, first-row (the lowest
// sequence number of a key wins, level-0 files skipped, as Java's batch
// read does), partial-update without per-field options (partial.go) and
// aggregation by the functions aggregate.go implements.
var ruleReadMerge = optionRule{optMergeEngine, pkOnly(func(s *tableSchema, v string) bool {
	return oneOf("deduplicate", "first-row")(s, v) || (strings.EqualFold(v, "partial-update") && partialFieldOption(s) == "") ||
		(strings.EqualFold(v, "aggregation") && aggregationUnsupported(s) == "")
}), "only deduplicate, first-row, partial-update without per-field sequence groups or aggregate functions, and aggregation by sum, min, max, first/last(_non_null)_value are implemented here"}

// postponeBucket is BucketMode.POSTPONE_BUCKET, the bucket of the files a
// postponed-bucket table holds until a compaction assigns them.
const postponeBucket = -2

// firstRow reports a primary-key table of the first-row merge engine.
func firstRow(s *tableSchema) bool {
	return len(s.PrimaryKeys) > 0 && strings.EqualFold(strings.TrimSpace(s.Options[optMergeEngine]), "first-row")
}

// Table options the rules name (CoreOptions spelling).
const (
	optType              = "type"
	optDeletionVectors   = "deletion-vectors.enabled"
	optMergeEngine       = "merge-engine"
	optSequenceField     = "sequence.field"
	optSequenceOrder     = "sequence.field.sort-order"
	optDataFileDir       = "data-file.path-directory"
	optBucketFunction    = "bucket-function.type"
	optFormatPerLevel    = "file.format.per.level"
	optChangelogProducer = "changelog-producer"
	optRowKindField      = "rowkind.field"
	optRowTracking       = "row-tracking.enabled"
	optDataEvolution     = "data-evolution.enabled"
	optGlobalIndex       = "global-index.enabled"
	optThinMode          = "data-file.thin-mode"
	optExternalPaths     = "data-file.external-paths"
	optPartitionDefault  = "partition.default-name"
	optPartitionLegacy   = "partition.legacy-name"
	optManifestFormat    = "manifest.format"
	optBlobField         = "blob-field"
	optVectorField       = "vector-field"
	optChainTable        = "chain-table.enabled"
	optPKClustering      = "pk-clustering-override"
)

// checkRules returns the first rule the table's options break, as a
// FailedPrecondition naming the table, the option and its value.
func (s *tableSchema) checkRules(t fmt.Stringer, op string, rules []optionRule) error {
	for _, r := range rules {
		v := strings.TrimSpace(s.Options[r.key])
		if r.key == optBucket && v == "" {
			v = "-1" // Paimon's default: dynamic for a primary-key table, unaware for an append table
		}
		if !r.ok(s, v) {
			return catalogs.Errorf(catalogs.ErrFailedPrecondition, "table %s: option %q = %q: %s; this backend refuses to %s it", t, r.key, v, r.why, op)
		}
	}
	return nil
}

// checkWritable refuses a write into a table whose options ask a writer
// for more than this backend does.
func (s *tableSchema) checkWritable(t fmt.Stringer) error {
	if err := s.checkRules(t, "write", writeRules); err != nil {
		return err
	}
	v := strings.TrimSpace(s.Options[optBucket])
	if v == "" {
		v = "-1"
	}
	if b, err := strconv.Atoi(v); err != nil || (b != -1 && b < 1) {
		return catalogs.Errorf(catalogs.ErrFailedPrecondition, "table %s: option %q = %q is not a bucket mode this backend writes (-1 for an append table, or a fixed count)", t, optBucket, s.Options[optBucket])
	}
	return nil
}

// checkWritableState refuses a write into the table as st saw it: by the
// options of the schema its snapshot was written with and of the latest
// schema (an ALTER TABLE since, which Java's next writer obeys).
func (p *Provider) checkWritableState(ctx context.Context, st *tableState) error {
	if err := st.schema.checkWritable(st.ident); err != nil {
		return err
	}
	latest, err := p.latestSchema(ctx, st.ident, st.dir)
	if err != nil {
		return err
	}
	if latest.ID == st.schema.ID {
		return nil
	}
	return latest.checkWritable(st.ident)
}

// checkReadable refuses a read of a table whose options change which rows
// Paimon's readers return in a way this backend does not implement.
func (s *tableSchema) checkReadable(t fmt.Stringer) error {
	return s.checkRules(t, "read", readRules)
}

// indexTypeDeletionVectors is DeletionVectorsIndexFile.DELETION_VECTORS_INDEX:
// the index type of a deletion-vector file in an index manifest.
const indexTypeDeletionVectors = "DELETION_VECTORS"

// indexTypes reads the index types a snapshot's index manifest lists
// (Avro records of IndexManifestEntry); nil without an index manifest.
func (p *Provider) indexTypes(ctx context.Context, st *tableState) ([]string, error) {
	if st.snap == nil || st.snap.IndexManifest == nil || *st.snap.IndexManifest == "" {
		return nil, nil
	}
	name := *st.snap.IndexManifest
	b, err := p.fs.Read(ctx, st.dir+"/manifest/"+name)
	if err != nil {
		return nil, lake.MapErr(err, fmt.Sprintf("table %s: index manifest %s", st.ident, name))
	}
	recs, err := decodeOCF[map[string]any](b)
	if err != nil {
		return nil, catalogs.Errorf(catalogs.ErrFailedPrecondition, "table %s: index manifest %s is not an Avro index manifest this backend reads: %v", st.ident, name, err)
	}
	var out []string
	for _, r := range recs {
		if v, ok := r["_INDEX_TYPE"].(string); ok && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out, nil
}

// checkReadableState refuses a read of the table as st saw it: by its
// options (checkReadable) and by what its snapshot's index manifest holds.
func (p *Provider) checkReadableState(ctx context.Context, st *tableState) error {
	if err := st.schema.checkReadable(st.ident); err != nil {
		return err
	}
	return p.checkIndexReadable(ctx, st)
}

// checkIndexReadable refuses a read of a snapshot whose index manifest
// holds deletion vectors while the options say the table has none (Java
// would not apply them either; the rows they delete would come back
// here).
func (p *Provider) checkIndexReadable(ctx context.Context, st *tableState) error {
	if dvEnabled(st.schema) {
		return nil
	}
	types, err := p.indexTypes(ctx, st)
	if err != nil {
		return err
	}
	if slices.Contains(types, indexTypeDeletionVectors) {
		return catalogs.Errorf(catalogs.ErrFailedPrecondition, "table %s: snapshot %d has deletion vectors (index manifest %s) but option %q is not true: this backend refuses to read it", st.ident, st.snap.ID, *st.snap.IndexManifest, optDeletionVectors)
	}
	return nil
}

// inherit carries into the next snapshot s what the previous one
// references beyond data manifests, as FileStoreCommitImpl.tryCommitOnce
// does for a commit without index changes or statistics of its own: the
// index manifest (deletion vectors, hash indexes), the watermark, the
// next row id, and the statistics file when it was computed on the schema
// s is committed with. An overwrite deletes every data file, and with them
// every index file (Java's readOverwriteChanges deletes the index entries
// of the partitions it overwrites: here, all of them). The changelog
// manifest list and the properties belong to their commit and are not
// carried.
func (p *Provider) inherit(ctx context.Context, st *tableState, s *snapshot, overwrite bool) error {
	zero := int64(0)
	s.NextRowID = &zero
	prev := st.snap
	if prev == nil {
		return nil
	}
	if prev.NextRowID != nil {
		n := *prev.NextRowID
		s.NextRowID = &n
	}
	s.Watermark = prev.Watermark
	if !overwrite {
		s.IndexManifest = prev.IndexManifest
	}
	if prev.Statistics != nil && *prev.Statistics != "" {
		keep, err := p.statsSchema(ctx, st, *prev.Statistics)
		if err != nil {
			return err
		}
		if keep == s.SchemaID {
			s.Statistics = prev.Statistics
		}
	}
	return nil
}

// statsSchema reads the schema id a statistics file (statistics/stat-*,
// Paimon's Statistics JSON) was computed on; -1 when the file is gone.
func (p *Provider) statsSchema(ctx context.Context, st *tableState, name string) (int64, error) {
	b, err := p.fs.Read(ctx, st.dir+"/statistics/"+name)
	if err != nil {
		if lake.IsNotExist(err) {
			return -1, nil
		}
		return 0, lake.MapErr(err, fmt.Sprintf("table %s: statistics %s", st.ident, name))
	}
	var v struct {
		SchemaID *int64 `json:"schemaId"`
	}
	if err := json.Unmarshal(b, &v); err != nil || v.SchemaID == nil {
		return -1, nil
	}
	return *v.SchemaID, nil
}

// tableName is a table's name where only its spelling is at hand.
type tableName string

func (n tableName) String() string { return string(n) }
