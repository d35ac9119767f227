package delta

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// DefaultCheckpointInterval is the number of commits between checkpoints when the table
// sets no delta.checkpointInterval (Delta Spark's default).
const DefaultCheckpointInterval = 10

// DefaultDeletedFileRetention is delta.deletedFileRetentionDuration's default: how long a
// removed file stays a tombstone (and on storage, for time travel and readers mid-scan).
const DefaultDeletedFileRetention = 7 * 24 * time.Hour

// DefaultLogRetention is delta.logRetentionDuration's default: how long log entries and
// checkpoints are kept.
const DefaultLogRetention = 30 * 24 * time.Hour

// CheckpointInterval is the table's delta.checkpointInterval, or the default when unset
// or not a positive integer (a bad property must not stop commits).
func (m *Metadata) CheckpointInterval() int64 {
	n, err := strconv.ParseInt(m.Configuration["delta.checkpointInterval"], 10, 64)
	if err != nil || n <= 0 {
		return DefaultCheckpointInterval
	}
	return n
}

// DeletedFileRetention is the table's delta.deletedFileRetentionDuration, or the default.
func (m *Metadata) DeletedFileRetention() (time.Duration, error) {
	return m.interval("delta.deletedFileRetentionDuration", DefaultDeletedFileRetention)
}

// LogRetention is the table's delta.logRetentionDuration, or the default.
func (m *Metadata) LogRetention() (time.Duration, error) {
	return m.interval("delta.logRetentionDuration", DefaultLogRetention)
}

func (m *Metadata) interval(key string, def time.Duration) (time.Duration, error) {
	v, ok := m.Configuration[key]
	if !ok {
		return def, nil
	}
	d, err := ParseInterval(v)
	if err != nil {
		return 0, fmt.Errorf("table property %s: %w", key, err)
	}
	return d, nil
}

// checkpointSchema is the schema of a checkpoint file (PROTOCOL.md "Checkpoint Schema"):
// one struct column per action named in cols, every field nullable, maps of strings as
// Parquet maps, stats as the JSON string (delta.checkpoint.writeStatsAsJson's default; the
// parsed forms are optional and not written). A classic V1 checkpoint has classicColumns;
// a V2-spec one checkpointMetadata too; a UUID-named top-level file the non-file actions,
// checkpointMetadata and sidecar; a sidecar add and remove alone.
func checkpointSchema(cols []string) *arrow.Schema {
	str, i64, i32, b := arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int64, arrow.PrimitiveTypes.Int32, arrow.FixedWidthTypes.Boolean
	f := func(name string, t arrow.DataType) arrow.Field {
		return arrow.Field{Name: name, Type: t, Nullable: true}
	}
	strMap := arrow.MapOf(str, str)
	strList := arrow.ListOf(str)
	dv := arrow.StructOf(f("storageType", str), f("pathOrInlineDv", str), f("offset", i32),
		f("sizeInBytes", i32), f("cardinality", i64))
	all := map[string]arrow.Field{
		"protocol": f("protocol", arrow.StructOf(f("minReaderVersion", i32), f("minWriterVersion", i32),
			f("readerFeatures", strList), f("writerFeatures", strList))),
		"metaData": f("metaData", arrow.StructOf(f("id", str), f("name", str), f("description", str),
			f("format", arrow.StructOf(f("provider", str), f("options", strMap))),
			f("schemaString", str), f("partitionColumns", strList), f("createdTime", i64),
			f("configuration", strMap))),
		"txn": f("txn", arrow.StructOf(f("appId", str), f("version", i64), f("lastUpdated", i64))),
		"add": f("add", arrow.StructOf(f("path", str), f("partitionValues", strMap), f("size", i64),
			f("modificationTime", i64), f("dataChange", b), f("stats", str), f("tags", strMap),
			f("deletionVector", dv), f("baseRowId", i64), f("defaultRowCommitVersion", i64),
			f("clusteringProvider", str))),
		"remove": f("remove", arrow.StructOf(f("path", str), f("deletionTimestamp", i64), f("dataChange", b),
			f("extendedFileMetadata", b), f("partitionValues", strMap), f("size", i64),
			f("deletionVector", dv), f("baseRowId", i64), f("defaultRowCommitVersion", i64))),
		"domainMetadata":     f("domainMetadata", arrow.StructOf(f("domain", str), f("configuration", str), f("removed", b))),
		"checkpointMetadata": f("checkpointMetadata", arrow.StructOf(f("version", i64), f("tags", strMap))),
		"sidecar": f("sidecar", arrow.StructOf(f("path", str), f("sizeInBytes", i64),
			f("modificationTime", i64), f("tags", strMap))),
	}
	fields := make([]arrow.Field, 0, len(cols))
	for _, c := range cols {
		fields = append(fields, all[c])
	}
	return arrow.NewSchema(fields, nil)
}

// The columns of each kind of checkpoint file.
var (
	classicColumns  = []string{"protocol", "metaData", "txn", "add", "remove", "domainMetadata"}
	v2InlineColumns = append(slices.Clone(classicColumns), "checkpointMetadata")
	v2TopColumns    = []string{"protocol", "metaData", "txn", "domainMetadata", "checkpointMetadata", "sidecar"}
	sidecarColumns  = []string{"add", "remove"}
)

// mapFields are the fields of each action that are string maps, which Arrow's JSON reader
// takes as lists of {key, value} entries.
var mapFields = map[string][][]string{
	"metaData":           {{"format", "options"}, {"configuration"}},
	"add":                {{"partitionValues"}, {"tags"}},
	"remove":             {{"partitionValues"}},
	"checkpointMetadata": {{"tags"}},
	"sidecar":            {{"tags"}},
}

// Checkpoint is an encoded classic checkpoint and its _last_checkpoint.
type Checkpoint struct {
	// Parquet is the checkpoint file, named ClassicCheckpointName(Version).
	Parquet []byte
	// Last is the _last_checkpoint content, with its checksum.
	Last []byte
	// Actions and Adds count the checkpoint's rows and its add actions.
	Actions, Adds int64
}

// EncodeCheckpoint writes the classic checkpoint of s (PROTOCOL.md "Checkpoints"): the
// protocol, the metadata, the live files, the tombstones not expired at now under the
// table's delta.deletedFileRetentionDuration, every app transaction and the domain
// metadata that is not removed; never commitInfo or cdc. A table with the v2Checkpoint
// feature gets the V2 spec under the classic name (a checkpointMetadata row, files inline),
// as the protocol requires of classic checkpoints on such tables. Stats are written as JSON
// unless delta.checkpoint.writeStatsAsJson is false; a table with
// delta.checkpoint.writeStatsAsStruct true is refused (its parsed stats are not written).
func EncodeCheckpoint(s *Snapshot, now time.Time) (*Checkpoint, error) {
	state, files, err := checkpointActions(s, now)
	if err != nil {
		return nil, err
	}
	cols := classicColumns
	if s.Protocol.Supports(FeatureV2Checkpoint) {
		state = append([]Action{{CheckpointMetadata: &CheckpointMetadata{Version: s.Version}}}, state...)
		cols = v2InlineColumns
	}
	acts := append(state, files...)
	pq, err := encodeCheckpointParquet(acts, cols)
	if err != nil {
		return nil, fmt.Errorf("delta: checkpoint of version %d: %w", s.Version, err)
	}
	cp := &Checkpoint{Parquet: pq, Actions: int64(len(acts)), Adds: int64(len(s.Files))}
	if cp.Last, err = EncodeLastCheckpoint(LastCheckpoint{Version: s.Version, Size: cp.Actions,
		SizeInBytes: ptr(int64(len(pq))), NumOfAddFiles: ptr(cp.Adds)}); err != nil {
		return nil, err
	}
	return cp, nil
}

// V2Checkpoint is an encoded UUID-named V2 checkpoint (PROTOCOL.md "V2 Spec",
// "UUID-named checkpoint"): a Parquet top-level file of the non-file actions, the
// checkpointMetadata and one sidecar action, and that sidecar, a Parquet file of the add and
// remove actions under _delta_log/_sidecars. A snapshot without files has no sidecar.
type V2Checkpoint struct {
	// Name is the top-level file's name in _delta_log: <version>.checkpoint.<uuid>.parquet.
	Name    string
	Parquet []byte
	// SidecarName is the sidecar's name in _delta_log/_sidecars (<uuid>.parquet), "" when
	// there is none; Sidecar its content.
	SidecarName string
	Sidecar     []byte
	// Last is the _last_checkpoint content, with its checksum.
	Last []byte
	// Actions and Adds count the checkpoint's actions (both files) and its add actions.
	Actions, Adds int64
}

// EncodeV2Checkpoint writes the UUID-named V2 checkpoint of s, with what EncodeCheckpoint
// puts in a checkpoint; id is the UUID of the top-level file's name, sidecarID the
// sidecar's. The sidecar must land before the top-level file, which makes the checkpoint
// visible; its action's modificationTime is now (readers do not check it).
func EncodeV2Checkpoint(s *Snapshot, now time.Time, id, sidecarID string) (*V2Checkpoint, error) {
	if !s.Protocol.Supports(FeatureV2Checkpoint) {
		return nil, fmt.Errorf("delta: checkpoint of version %d: a UUID-named checkpoint needs the %s feature", s.Version, FeatureV2Checkpoint)
	}
	state, files, err := checkpointActions(s, now)
	if err != nil {
		return nil, err
	}
	cp := &V2Checkpoint{Name: UUIDCheckpointName(s.Version, id, false), Adds: int64(len(s.Files))}
	top := append([]Action{{CheckpointMetadata: &CheckpointMetadata{Version: s.Version}}}, state...)
	if len(files) > 0 {
		if cp.Sidecar, err = encodeCheckpointParquet(files, sidecarColumns); err != nil {
			return nil, fmt.Errorf("delta: sidecar of the checkpoint of version %d: %w", s.Version, err)
		}
		cp.SidecarName = sidecarID + ".parquet"
		top = append(top, Action{Sidecar: &Sidecar{Path: cp.SidecarName, SizeInBytes: int64(len(cp.Sidecar)), ModificationTime: now.UnixMilli()}})
	}
	if cp.Parquet, err = encodeCheckpointParquet(top, v2TopColumns); err != nil {
		return nil, fmt.Errorf("delta: checkpoint of version %d: %w", s.Version, err)
	}
	cp.Actions = int64(len(top) + len(files))
	if cp.Last, err = EncodeLastCheckpoint(LastCheckpoint{Version: s.Version, Size: cp.Actions,
		SizeInBytes: ptr(int64(len(cp.Parquet) + len(cp.Sidecar))), NumOfAddFiles: ptr(cp.Adds)}); err != nil {
		return nil, err
	}
	return cp, nil
}

// checkpointActions are the actions a checkpoint of s holds: the state (protocol,
// metadata, app transactions and domains, sorted) and the files (the live adds, then the
// tombstones not expired at now, without stats and tags).
func checkpointActions(s *Snapshot, now time.Time) (state, files []Action, err error) {
	retention, err := s.Metadata.DeletedFileRetention()
	if err != nil {
		return nil, nil, err
	}
	cfg := s.Metadata.Configuration
	if strings.EqualFold(cfg["delta.checkpoint.writeStatsAsStruct"], "true") {
		// The table asks for stats_parsed and partitionValues_parsed, which
		// this writer does not produce: better no checkpoint than one
		// without what the table says readers may rely on.
		return nil, nil, fmt.Errorf("delta: checkpoint of version %d: delta.checkpoint.writeStatsAsStruct is true, and the parsed stats are not written", s.Version)
	}
	noStats := strings.EqualFold(cfg["delta.checkpoint.writeStatsAsJson"], "false")
	p, md := s.Protocol, s.Metadata
	state = append(state, Action{Protocol: &p}, Action{MetaData: &md})
	apps := make([]string, 0, len(s.Txns))
	for id := range s.Txns {
		apps = append(apps, id)
	}
	sort.Strings(apps)
	for _, id := range apps {
		tx := s.Txns[id]
		state = append(state, Action{Txn: &tx})
	}
	doms := make([]string, 0, len(s.Domains))
	for d := range s.Domains {
		doms = append(doms, d)
	}
	sort.Strings(doms)
	for _, d := range doms {
		dm := s.Domains[d]
		state = append(state, Action{DomainMetadata: &dm})
	}
	for _, f := range s.Files {
		if noStats && f.Stats != "" {
			fc := *f
			fc.Stats = ""
			f = &fc
		}
		files = append(files, Action{Add: f})
	}
	for _, r := range s.LiveTombstones(now, retention) {
		// A checkpoint's tombstones serve VACUUM only: no stats, no tags.
		rc := *r
		rc.Stats, rc.Tags = "", nil
		files = append(files, Action{Remove: &rc})
	}
	return state, files, nil
}

func ptr[T any](v T) *T { return &v }

// EncodeLastCheckpoint writes _last_checkpoint with the canonical-JSON MD5 checksum.
func EncodeLastCheckpoint(lc LastCheckpoint) ([]byte, error) {
	m := map[string]any{"version": lc.Version, "size": lc.Size}
	if lc.Parts != nil {
		m["parts"] = *lc.Parts
	}
	if lc.SizeInBytes != nil {
		m["sizeInBytes"] = *lc.SizeInBytes
	}
	if lc.NumOfAddFiles != nil {
		m["numOfAddFiles"] = *lc.NumOfAddFiles
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	sum, err := canonicalChecksum(b)
	if err != nil {
		return nil, err
	}
	m["checksum"] = sum
	return json.Marshal(m)
}

// encodeCheckpointParquet writes one row per action. Rows go through each action's own
// JSON form (the one commit files use) into Arrow's JSON reader, so a checkpoint row and a
// commit line of one action cannot disagree.
func encodeCheckpointParquet(acts []Action, cols []string) ([]byte, error) {
	var rows bytes.Buffer
	rows.WriteByte('[')
	for i, a := range acts {
		line, err := marshalPlain(a)
		if err != nil {
			return nil, err
		}
		// Numbers stay as written: int64 fields past 2^53 must not pass through float64.
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.UseNumber()
		var row map[string]map[string]any
		if err := dec.Decode(&row); err != nil {
			return nil, err
		}
		for key, body := range row {
			for _, path := range mapFields[key] {
				toEntries(body, path)
			}
		}
		if i > 0 {
			rows.WriteByte(',')
		}
		b, err := json.Marshal(row)
		if err != nil {
			return nil, err
		}
		rows.Write(b)
	}
	rows.WriteByte(']')
	sc := checkpointSchema(cols)
	rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, sc, &rows)
	if err != nil {
		return nil, err
	}
	defer rec.Release()
	var out bytes.Buffer
	props := parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Snappy))
	w, err := pqarrow.NewFileWriter(sc, &out, props, pqarrow.NewArrowWriterProperties())
	if err != nil {
		return nil, err
	}
	if err := w.Write(rec); err != nil {
		_ = w.Close()
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// toEntries replaces the string map at path under obj with Arrow's JSON map form, entries
// sorted by key so that a checkpoint's bytes depend only on the state.
func toEntries(obj map[string]any, path []string) {
	for _, k := range path[:len(path)-1] {
		next, ok := obj[k].(map[string]any)
		if !ok {
			return
		}
		obj = next
	}
	last := path[len(path)-1]
	m, ok := obj[last].(map[string]any)
	if !ok {
		return
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	entries := make([]any, 0, len(m))
	for _, k := range keys {
		entries = append(entries, map[string]any{"key": k, "value": m[k]})
	}
	obj[last] = entries
}
