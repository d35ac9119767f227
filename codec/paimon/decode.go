package paimon

import (
	"bytes"
	"encoding/binary"
	"fmt"
)

// Arity of the rows Java writes for each record, and the smallest bytes each can take,
// used to refuse counts the input cannot hold before allocating for them.
const (
	dataFileArity   = 20 // DataFileMeta.SCHEMA, versions 9 to 12
	statsArity      = 3  // SimpleStats.SCHEMA
	indexArityV10   = 6  // IndexFileMetaV3Deserializer.SCHEMA
	indexArityV11   = 7  // IndexFileMeta.SCHEMA with _GLOBAL_INDEX
	globalArityV11  = 5  // GlobalIndexMeta without _SOURCE_META
	globalArityV12  = 6  // GlobalIndexMeta.SCHEMA
	dvArity         = 4  // DeletionVectorMeta.SCHEMA
	minMessageBytes = 4 + 4 + 4 + 1 + 10*4
)

func minRowBytes(arity int) int { return 4 + fixedPartSize(arity) }

func indexArity(version int) int {
	if version >= Version11 {
		return indexArityV11
	}
	return indexArityV10
}

// DecodeList decodes what Java's CommitMessageSerializer.serializeList wrote at the given
// serializer version. The result does not alias data. Malformed input gives an error
// wrapping ErrMalformed that names the field at fault; trailing bytes are refused.
func DecodeList(version int, data []byte) ([]CommitMessage, error) {
	if err := CheckVersion(version); err != nil {
		return nil, err
	}
	// Records are read in place; only what the result keeps (rows, binaries, strings) is
	// copied out, so the result neither pins nor shares the caller's buffer.
	in := &input{buf: data}
	d := decoder{version: version, in: in}
	n, err := in.readCount("message list", minMessageBytes)
	if err != nil {
		return nil, err
	}
	msgs := make([]CommitMessage, n)
	for i := range msgs {
		if err := d.message(&msgs[i]); err != nil {
			return nil, fmt.Errorf("message %d: %w", i, err)
		}
	}
	if in.remaining() != 0 {
		return nil, malformed("message list", "%d trailing bytes after %d messages", in.remaining(), n)
	}
	return msgs, nil
}

type decoder struct {
	version int
	in      *input
	mem     arena
}

func (d *decoder) message(m *CommitMessage) error {
	var err error
	if m.Partition, err = d.serializedRow("partition"); err != nil {
		return err
	}
	if m.Bucket, err = d.in.readInt("bucket"); err != nil {
		return err
	}
	has, err := d.in.readBool("total buckets flag")
	if err != nil {
		return err
	}
	if has {
		tb, err := d.in.readInt("total buckets")
		if err != nil {
			return err
		}
		m.TotalBuckets = &tb
	}
	steps := []struct {
		name  string
		files *[]DataFile
		index *[]IndexFile
	}{
		{"new files", &m.Data.NewFiles, nil},
		{"deleted files", &m.Data.DeletedFiles, nil},
		{"changelog files", &m.Data.ChangelogFiles, nil},
		{"new index files", nil, &m.Data.NewIndexFiles},
		{"deleted index files", nil, &m.Data.DeletedIndexFiles},
		{"compact before", &m.Compact.CompactBefore, nil},
		{"compact after", &m.Compact.CompactAfter, nil},
		{"compact changelog files", &m.Compact.ChangelogFiles, nil},
		{"compact new index files", nil, &m.Compact.NewIndexFiles},
		{"compact deleted index files", nil, &m.Compact.DeletedIndexFiles},
	}
	for _, s := range steps {
		if s.files != nil {
			err = d.dataFiles(s.name, s.files)
		} else {
			err = d.indexFiles(s.name, s.index)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// serializedRow reads SerializationUtils.serializeBinaryRow's framing: a length, then
// the arity as a big-endian int, then the row's bytes.
func (d *decoder) serializedRow(field string) (Row, error) {
	b, err := d.in.readBytes(field)
	if err != nil {
		return Row{}, err
	}
	return rowFromSerialized(field, d.mem.copyBytes(b))
}

func rowFromSerialized(field string, b []byte) (Row, error) {
	if len(b) < 4 {
		return Row{}, malformed(field, "%d bytes cannot hold the row arity", len(b))
	}
	r, err := NewRow(int(int32(binary.BigEndian.Uint32(b))), b[4:])
	if err != nil {
		return Row{}, fmt.Errorf("%s: %w", field, err)
	}
	return r, nil
}

// record reads one ObjectSerializer record: a length, then a BinaryRow of the schema.
func (d *decoder) record(field string, arity int) (Row, error) {
	b, err := d.in.readBytes(field)
	if err != nil {
		return Row{}, err
	}
	r, err := NewRow(arity, b)
	if err != nil {
		return Row{}, fmt.Errorf("%s: %w", field, err)
	}
	return r, nil
}

func (d *decoder) dataFiles(field string, out *[]DataFile) error {
	n, err := d.in.readCount(field, minRowBytes(dataFileArity))
	if err != nil {
		return err
	}
	files := make([]DataFile, n)
	for i := range files {
		r, err := d.record(field, dataFileArity)
		if err == nil {
			err = dataFileFromRow(r, &files[i], &d.mem)
		}
		if err != nil {
			return fmt.Errorf("%s[%d]: %w", field, i, err)
		}
	}
	*out = files
	return nil
}

func (d *decoder) indexFiles(field string, out *[]IndexFile) error {
	arity := indexArity(d.version)
	n, err := d.in.readCount(field, minRowBytes(arity))
	if err != nil {
		return err
	}
	files := make([]IndexFile, n)
	for i := range files {
		r, err := d.record(field, arity)
		if err == nil {
			err = indexFileFromRow(d.version, r, &files[i], &d.mem)
		}
		if err != nil {
			return fmt.Errorf("%s[%d]: %w", field, i, err)
		}
	}
	*out = files
	return nil
}

// fieldReader reads a schema row field by field and keeps the first error, naming the
// field, so that the decoders read top to bottom like the Java fromRow methods.
type fieldReader struct {
	r     Row
	names []string
	err   error
	mem   *arena
}

func (f *fieldReader) fail(pos int, err error) {
	if f.err == nil {
		f.err = fmt.Errorf("%s: %w", f.names[pos], err)
	}
}

func (f *fieldReader) notNull(pos int) bool {
	if f.err == nil && f.r.IsNullAt(pos) {
		f.fail(pos, fmt.Errorf("null in a NOT NULL field: %w", ErrMalformed))
	}
	return f.err == nil
}

func (f *fieldReader) str(pos int) string {
	if !f.notNull(pos) {
		return ""
	}
	s, err := f.r.String(pos)
	if err != nil {
		f.fail(pos, err)
	}
	return s
}

func (f *fieldReader) optStr(pos int) *string {
	if f.err != nil || f.r.IsNullAt(pos) {
		return nil
	}
	s := f.str(pos)
	return &s
}

func (f *fieldReader) long(pos int) int64 {
	if !f.notNull(pos) {
		return 0
	}
	v, _ := f.r.BigInt(pos)
	return v
}

func (f *fieldReader) optLong(pos int) *int64 {
	if f.err != nil || f.r.IsNullAt(pos) {
		return nil
	}
	return f.mem.long(f.long(pos))
}

func (f *fieldReader) int(pos int) int32 {
	if !f.notNull(pos) {
		return 0
	}
	v, _ := f.r.Int(pos)
	return v
}

func (f *fieldReader) bytes(pos int) []byte {
	if f.err != nil || f.r.IsNullAt(pos) {
		return nil
	}
	b, err := f.r.Binary(pos)
	if err != nil {
		f.fail(pos, err)
		return nil
	}
	return f.mem.copyBytes(b)
}

func (f *fieldReader) serializedRow(pos int) Row {
	if !f.notNull(pos) {
		return Row{}
	}
	b, err := f.r.Binary(pos)
	if err != nil {
		f.fail(pos, err)
		return Row{}
	}
	r, err := rowFromSerialized("row", f.mem.copyBytes(b))
	if err != nil {
		f.fail(pos, err)
	}
	return r
}

func (f *fieldReader) strings(pos int, nullable bool) []string {
	if f.err != nil {
		return nil
	}
	if f.r.IsNullAt(pos) {
		if !nullable {
			f.notNull(pos)
		}
		return nil
	}
	a, err := f.r.Array(pos)
	if err == nil && a.n > 0 {
		_, err = a.elem(0, 8)
	}
	if err != nil {
		f.fail(pos, err)
		return nil
	}
	// Consecutive data files usually list the same columns: reuse the strings (never
	// the slice, which the caller may change).
	remember := f.mem != nil && pos < dataFileArity && a.n > 0
	if remember && bytes.Equal(f.mem.lastArr[pos], a.data) {
		return append([]string(nil), f.mem.lastStrs[pos]...)
	}
	out := make([]string, a.n)
	h := arrayHeader(a.n)
	for i := range out {
		if a.IsNullAt(i) {
			f.fail(pos, fmt.Errorf("null element %d: %w", i, ErrMalformed))
			return nil
		}
		b, err := readVarLen(a.data, h+8*i, "element", i, true)
		if err != nil {
			f.fail(pos, err)
			return nil
		}
		out[i] = f.mem.str(b)
	}
	if remember {
		f.mem.lastArr[pos], f.mem.lastStrs[pos] = a.data, out
	}
	return out
}

func (f *fieldReader) stats(pos int) Stats {
	if !f.notNull(pos) {
		return Stats{}
	}
	r, err := f.r.Row(pos, statsArity)
	if err != nil {
		f.fail(pos, err)
		return Stats{}
	}
	sf := fieldReader{r: r, names: statsFields, mem: f.mem}
	s := Stats{MinValues: sf.serializedRow(0), MaxValues: sf.serializedRow(1)}
	if sf.notNull(2) {
		a, err := r.Array(2)
		if err == nil && a.n > 0 {
			_, err = a.elem(0, 8)
		}
		if err != nil {
			sf.fail(2, err)
		} else {
			s.NullCounts = f.mem.ptrs(a.n)
			h := arrayHeader(a.n)
			for i := range s.NullCounts {
				if !a.IsNullAt(i) {
					s.NullCounts[i] = f.mem.long(int64(le.Uint64(a.data[h+8*i:])))
				}
			}
		}
	}
	if sf.err != nil {
		f.fail(pos, sf.err)
	}
	return s
}

var dataFileFields = []string{"fileName", "fileSize", "rowCount", "minKey", "maxKey",
	"keyStats", "valueStats", "minSequenceNumber", "maxSequenceNumber", "schemaId", "level",
	"extraFiles", "creationTime", "deleteRowCount", "embeddedIndex", "fileSource",
	"valueStatsCols", "externalPath", "firstRowId", "writeCols"}

var statsFields = []string{"minValues", "maxValues", "nullCounts"}

var indexFileFields = []string{"indexType", "fileName", "fileSize", "rowCount", "dvRanges",
	"externalPath", "globalIndex"}

var globalIndexFields = []string{"rowRangeStart", "rowRangeEnd", "indexFieldId",
	"extraFieldIds", "indexMeta", "sourceMeta"}

var dvFields = []string{"dataFileName", "offset", "length", "cardinality"}

// dataFileFromRow is DataFileMetaSerializer.fromRow.
func dataFileFromRow(r Row, f *DataFile, mem *arena) error {
	fr := fieldReader{r: r, names: dataFileFields, mem: mem}
	f.FileName = fr.str(0)
	f.FileSize = fr.long(1)
	f.RowCount = fr.long(2)
	f.MinKey = fr.serializedRow(3)
	f.MaxKey = fr.serializedRow(4)
	f.KeyStats = fr.stats(5)
	f.ValueStats = fr.stats(6)
	f.MinSequenceNumber = fr.long(7)
	f.MaxSequenceNumber = fr.long(8)
	f.SchemaID = fr.long(9)
	f.Level = fr.int(10)
	f.ExtraFiles = fr.strings(11, false)
	f.CreationTime = fr.optLong(12)
	f.DeleteRowCount = fr.optLong(13)
	f.EmbeddedIndex = fr.bytes(14)
	if fr.err == nil && !r.IsNullAt(15) {
		v, _ := r.TinyInt(15)
		if v != int8(FileSourceAppend) && v != int8(FileSourceCompact) {
			fr.fail(15, malformed("file source", "unknown value %d", v))
		}
		f.FileSource = mem.source(FileSource(v))
	}
	f.ValueStatsCols = fr.strings(16, true)
	f.ExternalPath = fr.optStr(17)
	f.FirstRowID = fr.optLong(18)
	f.WriteCols = fr.strings(19, true)
	return fr.err
}

// indexFileFromRow is IndexFileMetaSerializer.fromRow and its V3/V4 predecessors.
func indexFileFromRow(version int, r Row, f *IndexFile, mem *arena) error {
	fr := fieldReader{r: r, names: indexFileFields, mem: mem}
	f.IndexType = fr.str(0)
	f.FileName = fr.str(1)
	f.FileSize = fr.long(2)
	f.RowCount = fr.long(3)
	if fr.err == nil && !r.IsNullAt(4) {
		f.DVRanges = dvRanges(&fr, 4)
	}
	f.ExternalPath = fr.optStr(5)
	if fr.err == nil && version >= Version11 && !r.IsNullAt(6) {
		arity := globalArityV11
		if version >= Version12 {
			arity = globalArityV12
		}
		g, err := r.Row(6, arity)
		if err != nil {
			fr.fail(6, err)
			return fr.err
		}
		gr := fieldReader{r: g, names: globalIndexFields}
		gi := &GlobalIndex{RowRangeStart: gr.long(0), RowRangeEnd: gr.long(1), IndexFieldID: gr.int(2)}
		if gr.err == nil && !g.IsNullAt(3) {
			a, err := g.Array(3)
			if err == nil {
				gi.ExtraFieldIDs, err = int32s(a)
			}
			if err != nil {
				gr.fail(3, err)
			}
		}
		gi.IndexMeta = gr.bytes(4)
		if arity == globalArityV12 {
			gi.SourceMeta = gr.bytes(5)
		}
		if gr.err != nil {
			fr.fail(6, gr.err)
		}
		f.GlobalIndex = gi
	}
	return fr.err
}

func int32s(a Array) ([]int32, error) {
	out := make([]int32, a.n)
	for i := range out {
		o, err := a.elem(i, 4)
		if err != nil {
			return nil, err
		}
		if a.IsNullAt(i) {
			return nil, malformed("array", "null element %d in ARRAY<INT NOT NULL>", i)
		}
		out[i] = int32(le.Uint32(a.data[o:]))
	}
	return out, nil
}

func dvRanges(fr *fieldReader, pos int) []DeletionVector {
	a, err := fr.r.Array(pos)
	if err == nil && a.n > 0 {
		_, err = a.elem(0, 8)
	}
	if err != nil {
		fr.fail(pos, err)
		return nil
	}
	out := make([]DeletionVector, a.n)
	h := arrayHeader(a.n)
	for i := range out {
		if a.IsNullAt(i) {
			fr.fail(pos, malformed("element", "null deletion vector %d", i))
			return nil
		}
		b, err := readVarLen(a.data, h+8*i, "element", i, false)
		var r Row
		if err == nil {
			r, err = NewRow(dvArity, b)
		}
		if err != nil {
			fr.fail(pos, err)
			return nil
		}
		dr := fieldReader{r: r, names: dvFields}
		out[i] = DeletionVector{DataFileName: dr.str(0), Offset: dr.int(1), Length: dr.int(2), Cardinality: dr.optLong(3)}
		if dr.err != nil {
			fr.fail(pos, fmt.Errorf("element %d: %w", i, dr.err))
			return nil
		}
	}
	return out
}
