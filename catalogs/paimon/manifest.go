package paimon

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/twmb/avro"
	"github.com/twmb/avro/ocf"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/catalogs/lake"
	pcodec "github.com/flightgw/flightgw/codec/paimon"
)

// The Avro schemas of Paimon 1.4's manifest files and manifest lists, as
// Paimon's AvroSchemaConverter derives them from ManifestEntry.SCHEMA and
// ManifestFileMeta.SCHEMA (record names included: Avro schema resolution
// matches them).
const statsRecord = `{"type": "record", "name": "%s", "fields": [{"name": "_MIN_VALUES", "type": "bytes"}, {"name": "_MAX_VALUES", "type": "bytes"}, {"name": "_NULL_COUNTS", "type": ["null", {"type": "array", "items": ["null", "long"]}], "default": null}]}`

var (
	manifestEntrySchema = avro.MustParse(`{"type": "record", "name": "record", "namespace": "org.apache.paimon.avro.generated", "fields": [
 {"name": "_VERSION", "type": "int"}, {"name": "_KIND", "type": "int"}, {"name": "_PARTITION", "type": "bytes"},
 {"name": "_BUCKET", "type": "int"}, {"name": "_TOTAL_BUCKETS", "type": "int"},
 {"name": "_FILE", "type": {"type": "record", "name": "record__FILE", "fields": [
  {"name": "_FILE_NAME", "type": "string"}, {"name": "_FILE_SIZE", "type": "long"}, {"name": "_ROW_COUNT", "type": "long"},
  {"name": "_MIN_KEY", "type": "bytes"}, {"name": "_MAX_KEY", "type": "bytes"},
  {"name": "_KEY_STATS", "type": ` + fmt.Sprintf(statsRecord, "record__FILE__KEY_STATS") + `},
  {"name": "_VALUE_STATS", "type": ` + fmt.Sprintf(statsRecord, "record__FILE__VALUE_STATS") + `},
  {"name": "_MIN_SEQUENCE_NUMBER", "type": "long"}, {"name": "_MAX_SEQUENCE_NUMBER", "type": "long"},
  {"name": "_SCHEMA_ID", "type": "long"}, {"name": "_LEVEL", "type": "int"},
  {"name": "_EXTRA_FILES", "type": {"type": "array", "items": "string"}},
  {"name": "_CREATION_TIME", "type": ["null", {"type": "long", "logicalType": "timestamp-millis"}], "default": null},
  {"name": "_DELETE_ROW_COUNT", "type": ["null", "long"], "default": null},
  {"name": "_EMBEDDED_FILE_INDEX", "type": ["null", "bytes"], "default": null},
  {"name": "_FILE_SOURCE", "type": ["null", "int"], "default": null},
  {"name": "_VALUE_STATS_COLS", "type": ["null", {"type": "array", "items": "string"}], "default": null},
  {"name": "_EXTERNAL_PATH", "type": ["null", "string"], "default": null},
  {"name": "_FIRST_ROW_ID", "type": ["null", "long"], "default": null},
  {"name": "_WRITE_COLS", "type": ["null", {"type": "array", "items": "string"}], "default": null}]}}]}`)

	manifestMetaSchema = avro.MustParse(`{"type": "record", "name": "record", "namespace": "org.apache.paimon.avro.generated", "fields": [
 {"name": "_VERSION", "type": "int"}, {"name": "_FILE_NAME", "type": "string"}, {"name": "_FILE_SIZE", "type": "long"},
 {"name": "_NUM_ADDED_FILES", "type": "long"}, {"name": "_NUM_DELETED_FILES", "type": "long"},
 {"name": "_PARTITION_STATS", "type": ` + fmt.Sprintf(statsRecord, "record__PARTITION_STATS") + `},
 {"name": "_SCHEMA_ID", "type": "long"},
 {"name": "_MIN_BUCKET", "type": ["null", "int"], "default": null}, {"name": "_MAX_BUCKET", "type": ["null", "int"], "default": null},
 {"name": "_MIN_LEVEL", "type": ["null", "int"], "default": null}, {"name": "_MAX_LEVEL", "type": ["null", "int"], "default": null},
 {"name": "_MIN_ROW_ID", "type": ["null", "long"], "default": null}, {"name": "_MAX_ROW_ID", "type": ["null", "long"], "default": null}]}`)
)

// Serializer versions of the manifest records (ManifestEntrySerializer and
// ManifestFileMetaSerializer).
const (
	manifestEntryVersion = 2
	manifestMetaVersion  = 2
)

// File kinds of a manifest entry (FileKind).
const (
	fileAdd    = 0
	fileDelete = 1
)

type avroStats struct {
	Min        []byte   `avro:"_MIN_VALUES"`
	Max        []byte   `avro:"_MAX_VALUES"`
	NullCounts []*int64 `avro:"_NULL_COUNTS"`
}

type avroFile struct {
	FileName       string     `avro:"_FILE_NAME"`
	FileSize       int64      `avro:"_FILE_SIZE"`
	RowCount       int64      `avro:"_ROW_COUNT"`
	MinKey         []byte     `avro:"_MIN_KEY"`
	MaxKey         []byte     `avro:"_MAX_KEY"`
	KeyStats       avroStats  `avro:"_KEY_STATS"`
	ValueStats     avroStats  `avro:"_VALUE_STATS"`
	MinSeq         int64      `avro:"_MIN_SEQUENCE_NUMBER"`
	MaxSeq         int64      `avro:"_MAX_SEQUENCE_NUMBER"`
	SchemaID       int64      `avro:"_SCHEMA_ID"`
	Level          int32      `avro:"_LEVEL"`
	ExtraFiles     []string   `avro:"_EXTRA_FILES"`
	CreationTime   *time.Time `avro:"_CREATION_TIME"`
	DeleteRowCount *int64     `avro:"_DELETE_ROW_COUNT"`
	EmbeddedIndex  *[]byte    `avro:"_EMBEDDED_FILE_INDEX"`
	FileSource     *int32     `avro:"_FILE_SOURCE"`
	ValueStatsCols *[]string  `avro:"_VALUE_STATS_COLS"`
	ExternalPath   *string    `avro:"_EXTERNAL_PATH"`
	FirstRowID     *int64     `avro:"_FIRST_ROW_ID"`
	WriteCols      *[]string  `avro:"_WRITE_COLS"`
}

type avroEntry struct {
	Version      int32    `avro:"_VERSION"`
	Kind         int32    `avro:"_KIND"`
	Partition    []byte   `avro:"_PARTITION"`
	Bucket       int32    `avro:"_BUCKET"`
	TotalBuckets int32    `avro:"_TOTAL_BUCKETS"`
	File         avroFile `avro:"_FILE"`
}

type avroMeta struct {
	Version        int32     `avro:"_VERSION"`
	FileName       string    `avro:"_FILE_NAME"`
	FileSize       int64     `avro:"_FILE_SIZE"`
	NumAdded       int64     `avro:"_NUM_ADDED_FILES"`
	NumDeleted     int64     `avro:"_NUM_DELETED_FILES"`
	PartitionStats avroStats `avro:"_PARTITION_STATS"`
	SchemaID       int64     `avro:"_SCHEMA_ID"`
	MinBucket      *int32    `avro:"_MIN_BUCKET"`
	MaxBucket      *int32    `avro:"_MAX_BUCKET"`
	MinLevel       *int32    `avro:"_MIN_LEVEL"`
	MaxLevel       *int32    `avro:"_MAX_LEVEL"`
	MinRowID       *int64    `avro:"_MIN_ROW_ID"`
	MaxRowID       *int64    `avro:"_MAX_ROW_ID"`
}

// entry is one manifest entry: a data file added to or deleted from one
// bucket of one partition.
type entry struct {
	kind         int32
	partition    pcodec.Row
	bucket       int32
	totalBuckets int32
	file         pcodec.DataFile
}

// serializeRow is SerializationUtils.serializeBinaryRow: the arity as a
// big-endian int32, then the row's bytes.
func serializeRow(r pcodec.Row) []byte {
	out := binary.BigEndian.AppendUint32(nil, uint32(r.Arity()))
	return append(out, r.Bytes()...)
}

func deserializeRow(field string, b []byte) (pcodec.Row, error) {
	if len(b) < 4 {
		return pcodec.Row{}, fmt.Errorf("%s: %d bytes, too short for a serialized row", field, len(b))
	}
	r, err := pcodec.NewRow(int(int32(binary.BigEndian.Uint32(b))), b[4:])
	if err != nil {
		return pcodec.Row{}, fmt.Errorf("%s: %w", field, err)
	}
	return r, nil
}

func toAvroStats(s pcodec.Stats) avroStats {
	nc := s.NullCounts
	if nc == nil {
		nc = []*int64{}
	}
	return avroStats{Min: serializeRow(s.MinValues), Max: serializeRow(s.MaxValues), NullCounts: nc}
}

func fromAvroStats(field string, a avroStats) (pcodec.Stats, error) {
	mn, err := deserializeRow(field+" min", a.Min)
	if err != nil {
		return pcodec.Stats{}, err
	}
	mx, err := deserializeRow(field+" max", a.Max)
	if err != nil {
		return pcodec.Stats{}, err
	}
	return pcodec.Stats{MinValues: mn, MaxValues: mx, NullCounts: a.NullCounts}, nil
}

func toAvroEntry(e entry) avroEntry {
	f := e.file
	a := avroEntry{Version: manifestEntryVersion, Kind: e.kind, Partition: serializeRow(e.partition),
		Bucket: e.bucket, TotalBuckets: e.totalBuckets,
		File: avroFile{FileName: f.FileName, FileSize: f.FileSize, RowCount: f.RowCount,
			MinKey: serializeRow(f.MinKey), MaxKey: serializeRow(f.MaxKey),
			KeyStats: toAvroStats(f.KeyStats), ValueStats: toAvroStats(f.ValueStats),
			MinSeq: f.MinSequenceNumber, MaxSeq: f.MaxSequenceNumber, SchemaID: f.SchemaID, Level: f.Level,
			ExtraFiles: f.ExtraFiles, DeleteRowCount: f.DeleteRowCount, ExternalPath: f.ExternalPath, FirstRowID: f.FirstRowID}}
	if a.File.ExtraFiles == nil {
		a.File.ExtraFiles = []string{}
	}
	if f.CreationTime != nil {
		t := time.UnixMilli(*f.CreationTime).UTC()
		a.File.CreationTime = &t
	}
	if f.EmbeddedIndex != nil {
		a.File.EmbeddedIndex = &f.EmbeddedIndex
	}
	if f.FileSource != nil {
		v := int32(*f.FileSource)
		a.File.FileSource = &v
	}
	if f.ValueStatsCols != nil {
		a.File.ValueStatsCols = &f.ValueStatsCols
	}
	if f.WriteCols != nil {
		a.File.WriteCols = &f.WriteCols
	}
	return a
}

func fromAvroEntry(a avroEntry) (entry, error) {
	part, err := deserializeRow("_PARTITION", a.Partition)
	if err != nil {
		return entry{}, err
	}
	f := a.File
	e := entry{kind: a.Kind, partition: part, bucket: a.Bucket, totalBuckets: a.TotalBuckets,
		file: pcodec.DataFile{FileName: f.FileName, FileSize: f.FileSize, RowCount: f.RowCount,
			MinSequenceNumber: f.MinSeq, MaxSequenceNumber: f.MaxSeq, SchemaID: f.SchemaID, Level: f.Level,
			ExtraFiles: f.ExtraFiles, DeleteRowCount: f.DeleteRowCount, ExternalPath: f.ExternalPath, FirstRowID: f.FirstRowID}}
	if e.file.MinKey, err = deserializeRow("_MIN_KEY", f.MinKey); err != nil {
		return entry{}, err
	}
	if e.file.MaxKey, err = deserializeRow("_MAX_KEY", f.MaxKey); err != nil {
		return entry{}, err
	}
	if e.file.KeyStats, err = fromAvroStats("_KEY_STATS", f.KeyStats); err != nil {
		return entry{}, err
	}
	if e.file.ValueStats, err = fromAvroStats("_VALUE_STATS", f.ValueStats); err != nil {
		return entry{}, err
	}
	if f.CreationTime != nil {
		ms := f.CreationTime.UnixMilli()
		e.file.CreationTime = &ms
	}
	if f.EmbeddedIndex != nil {
		e.file.EmbeddedIndex = *f.EmbeddedIndex
	}
	if f.FileSource != nil {
		s := pcodec.FileSource(*f.FileSource)
		e.file.FileSource = &s
	}
	if f.ValueStatsCols != nil {
		e.file.ValueStatsCols = *f.ValueStatsCols
	}
	if f.WriteCols != nil {
		e.file.WriteCols = *f.WriteCols
	}
	return e, nil
}

// encodeOCF writes records as one Avro object container file. The codec
// is deflate, which every Avro reader (Paimon Java's, fastavro in
// pypaimon) supports without extra libraries.
func encodeOCF[T any](schema *avro.Schema, recs []T) ([]byte, error) {
	var buf bytes.Buffer
	w, err := ocf.NewWriter(&buf, schema, ocf.WithCodec(ocf.DeflateCodec(-1)))
	if err != nil {
		return nil, err
	}
	for i := range recs {
		if err := w.Encode(&recs[i]); err != nil {
			return nil, err
		}
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// decodeOCF reads every record of an Avro object container file.
func decodeOCF[T any](b []byte) ([]T, error) {
	r, err := ocf.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var out []T
	for {
		var v T
		err := r.Decode(&v)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
}

// manifestMeta is one manifest list entry.
type manifestMeta = avroMeta

// readManifestList reads the manifest files a manifest list names.
func (p *Provider) readManifestList(ctx context.Context, t catalogs.TableIdent, dir, name string) ([]manifestMeta, error) {
	b, err := p.fs.Read(ctx, dir+"/manifest/"+name)
	if err != nil {
		return nil, lake.MapErr(err, fmt.Sprintf("table %s: manifest list %s", t, name))
	}
	ms, err := decodeOCF[avroMeta](b)
	if err != nil {
		return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: manifest list %s: %v", t, name, err)
	}
	return ms, nil
}

// readManifest reads the entries of one manifest file.
func (p *Provider) readManifest(ctx context.Context, t catalogs.TableIdent, dir, name string) ([]entry, error) {
	b, err := p.fs.Read(ctx, dir+"/manifest/"+name)
	if err != nil {
		return nil, lake.MapErr(err, fmt.Sprintf("table %s: manifest %s", t, name))
	}
	as, err := decodeOCF[avroEntry](b)
	if err != nil {
		return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: manifest %s: %v", t, name, err)
	}
	out := make([]entry, 0, len(as))
	for _, a := range as {
		e, err := fromAvroEntry(a)
		if err != nil {
			return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: manifest %s: %v", t, name, err)
		}
		out = append(out, e)
	}
	return out, nil
}

// fileKey identifies a data file within a table: Paimon's
// FileEntry.Identifier (partition, bucket, level, file name, extra files,
// embedded index, external path), by which a DELETE entry names the ADD
// it cancels.
func fileKey(e entry) string {
	ext := "-"
	if e.file.ExternalPath != nil {
		ext = strconv.Quote(*e.file.ExternalPath)
	}
	return fmt.Sprintf("%x/%d/%d/%q/%q/%x/%s", e.partition.Bytes(), e.bucket, e.file.Level, e.file.FileName,
		e.file.ExtraFiles, e.file.EmbeddedIndex, ext)
}

// liveFiles reads every manifest of a snapshot (base, then delta) and
// returns the data files that are added and not deleted, in order.
func (p *Provider) liveFiles(ctx context.Context, t catalogs.TableIdent, dir string, s *snapshot) ([]entry, error) {
	if s == nil {
		return nil, nil
	}
	var metas []manifestMeta
	for _, l := range []string{s.BaseManifestList, s.DeltaManifestList} {
		if l == "" {
			continue
		}
		ms, err := p.readManifestList(ctx, t, dir, l)
		if err != nil {
			return nil, err
		}
		metas = append(metas, ms...)
	}
	var order []string
	live := map[string]entry{}
	for _, m := range metas {
		es, err := p.readManifest(ctx, t, dir, m.FileName)
		if err != nil {
			return nil, err
		}
		for _, e := range es {
			k := fileKey(e)
			switch e.kind {
			case fileAdd:
				if _, ok := live[k]; !ok {
					order = append(order, k)
				}
				live[k] = e
			case fileDelete:
				delete(live, k)
			default:
				return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: manifest %s: unknown file kind %d", t, m.FileName, e.kind)
			}
		}
	}
	out := make([]entry, 0, len(live))
	for _, k := range order {
		if e, ok := live[k]; ok {
			out = append(out, e)
			delete(live, k) // a file deleted and re-added is listed once
		}
	}
	return out, nil
}

// manifestWriter writes the manifest files of one commit attempt, named
// manifest-<uuid>-<n> as Paimon's path factory names them, rolling to a
// new file when one reaches the target size (Paimon's rolling writer).
// It remembers every file it wrote, for cleanup when the attempt loses.
type manifestWriter struct {
	p       *Provider
	st      *tableState
	prefix  string
	n       int
	target  int64
	written []string
}

// write writes es as one or more manifest files and returns their
// manifest list entries; no file for no entries.
func (w *manifestWriter) write(ctx context.Context, es []entry) ([]manifestMeta, error) {
	var out []manifestMeta
	// Blocks of at most an eighth of the target, so that the size seen
	// after each record (the flushed blocks) rolls close to the target.
	block := int(min(max(w.target/8, 1<<10), 64<<10))
	for len(es) > 0 {
		var buf bytes.Buffer
		ow, err := ocf.NewWriter(&buf, manifestEntrySchema, ocf.WithCodec(ocf.DeflateCodec(-1)), ocf.WithBlockBytes(block))
		if err != nil {
			return out, err
		}
		n := 0
		// At least one entry a file: the header alone (the schema) may
		// exceed a small target.
		for n < len(es) && (n == 0 || int64(buf.Len()) < w.target) {
			rec := toAvroEntry(es[n])
			if err := ow.Encode(&rec); err != nil {
				_ = ow.Close()
				return out, catalogs.Wrap(catalogs.ErrInvalidArgument, err, fmt.Sprintf("table %s: encode manifest", w.st.ident))
			}
			n++
		}
		if err := ow.Close(); err != nil {
			return out, catalogs.Wrap(catalogs.ErrInvalidArgument, err, fmt.Sprintf("table %s: encode manifest", w.st.ident))
		}
		meta, err := w.st.manifestMeta(es[:n])
		if err != nil {
			return out, err
		}
		name := fmt.Sprintf("manifest-%s-%d", w.prefix, w.n)
		w.n++
		if err := w.p.fs.Create(ctx, w.st.dir+"/manifest/"+name, buf.Bytes()); err != nil {
			return out, lake.MapErr(err, fmt.Sprintf("table %s: write manifest %s", w.st.ident, name))
		}
		w.written = append(w.written, name)
		meta.FileName, meta.FileSize = name, int64(buf.Len())
		out = append(out, meta)
		es = es[n:]
	}
	return out, nil
}

// manifestMeta is the manifest list entry of a manifest holding es (its
// name and size aside): the counts, the partition stats and the bucket
// and level ranges.
func (st *tableState) manifestMeta(es []entry) (manifestMeta, error) {
	meta := manifestMeta{Version: manifestMetaVersion, SchemaID: st.schema.ID}
	partTypes := make([]pcodec.Type, len(st.schema.PartitionKeys))
	for i, k := range st.schema.PartitionKeys {
		partTypes[i] = st.schema.cols[st.schema.index(k)].typ
	}
	pstats := make([]colStats, len(partTypes))
	var minB, maxB, minL, maxL int32
	for i, e := range es {
		if e.kind == fileAdd {
			meta.NumAdded++
		} else {
			meta.NumDeleted++
		}
		if i == 0 || e.bucket < minB {
			minB = e.bucket
		}
		if i == 0 || e.bucket > maxB {
			maxB = e.bucket
		}
		if i == 0 || e.file.Level < minL {
			minL = e.file.Level
		}
		if i == 0 || e.file.Level > maxL {
			maxL = e.file.Level
		}
		if e.partition.Arity() == len(partTypes) {
			vals, err := e.partition.Values(partTypes)
			if err != nil {
				return meta, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: partition row: %v", st.ident, err)
			}
			for j, v := range vals {
				if v == nil {
					pstats[j].nulls++
				} else {
					pstats[j].fold(v, v)
				}
			}
		}
	}
	ps, err := statsRow(partTypes, pstats)
	if err != nil {
		return meta, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: partition stats: %v", st.ident, err)
	}
	meta.PartitionStats = toAvroStats(ps)
	meta.MinBucket, meta.MaxBucket, meta.MinLevel, meta.MaxLevel = &minB, &maxB, &minL, &maxL
	return meta, nil
}
