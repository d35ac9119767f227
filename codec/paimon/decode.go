package paimon

import (
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
	d := decoder{version: version, in: input{buf: data}}
	n, err := d.in.readCount("message list", minMessageBytes)
	if err != nil {
		return nil, err
	}
	msgs := make([]CommitMessage, n)
	for i := range msgs {
		if err := d.message(&msgs[i]); err != nil {
			return nil, fmt.Errorf("message %d: %w", i, err)
		}
	}
	if d.in.remaining() != 0 {
		return nil, malformed("message list", "%d trailing bytes after %d messages", d.in.remaining(), n)
	}
	return msgs, nil
}

// decoder reads the input in place and copies into its arena only what the result
// keeps (rows, binaries, strings), so that the result neither pins nor shares the
// caller's buffer. Copying the whole input instead (one memmove, every field a
// sub-slice) measured no faster: it allocates 13 MB instead of 9 MB for the benchmark
// payload, and the collector's extra cycles and page faults ate what the memmove saved.
type decoder struct {
	version int
	in      input
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
	steps := [...]struct {
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
	// The arity read unsigned: a negative one fails the check and is worded below.
	if len(b) >= 4 {
		arity := int(binary.BigEndian.Uint32(b))
		if arity <= len(b) && fixedPartSize(arity) <= len(b)-4 {
			return Row{arity: arity, data: b[4:]}, nil
		}
	}
	return rowFromSerializedSlow(field, b)
}

func rowFromSerializedSlow(field string, b []byte) (Row, error) {
	if len(b) < 4 {
		return Row{}, malformed(field, "%d bytes cannot hold the row arity", len(b))
	}
	r, err := NewRow(int(int32(binary.BigEndian.Uint32(b))), b[4:])
	if err != nil {
		return Row{}, fmt.Errorf("%s: %w", field, err)
	}
	return r, nil
}

// record reads one ObjectSerializer record, a length then a BinaryRow of the schema,
// into fr: a reader over the row in place (the fields the result keeps are copied).
func (d *decoder) record(field string, arity int, names []string, fr *fieldReader) error {
	b, err := d.in.readBytes(field)
	if err == nil && len(b) < fixedPartSize(arity) {
		_, err = NewRow(arity, b)
		err = fmt.Errorf("%s: %w", field, err)
	}
	if err != nil {
		return err
	}
	fr.reset(b, names, &d.mem)
	return nil
}

func (d *decoder) dataFiles(field string, out *[]DataFile) error {
	n, err := d.in.readCount(field, minRowBytes(dataFileArity))
	if err != nil {
		return err
	}
	files := make([]DataFile, n)
	for i := range files {
		var fr fieldReader
		err := d.record(field, dataFileArity, dataFileFields, &fr)
		if err == nil {
			err = fr.dataFile(&files[i])
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
		var fr fieldReader
		err := d.record(field, arity, indexFileFields, &fr)
		if err == nil {
			err = fr.indexFile(d.version, &files[i])
		}
		if err != nil {
			return fmt.Errorf("%s[%d]: %w", field, i, err)
		}
	}
	*out = files
	return nil
}

// fieldReader reads a schema row field by field and keeps the first error, naming the
// field, so that the decoders read top to bottom like the Java fromRow methods. Schema
// rows have at most 20 fields: the null bits are the header word's upper 56 bits and
// field pos's slot is the 8 bytes at 8+8*pos, inside the fixed part NewRow checked.
type fieldReader struct {
	data  []byte
	nulls uint64
	names []string
	err   error
	mem   *arena
}

// reset points f at a row whose fixed part was checked to fit. It sets the fields one
// by one: assigning a composite literal builds it on the stack and copies it, and that
// copy stalled on store forwarding (most of nested's time in a perf profile).
func (f *fieldReader) reset(row []byte, names []string, mem *arena) {
	f.data, f.nulls, f.names, f.err, f.mem = row, le.Uint64(row)>>8, names, nil, mem
}

// nested reads the ROW field pos (not null) of the given schema into nf.
func (f *fieldReader) nested(pos, arity int, names []string, nf *fieldReader) bool {
	b, ok := f.varLen(pos, false)
	if ok && len(b) < fixedPartSize(arity) {
		_, err := NewRow(arity, b)
		f.fail(pos, err)
		ok = false
	}
	if ok {
		nf.reset(b, names, f.mem)
	}
	return ok
}

func (f *fieldReader) fail(pos int, err error) {
	if f.err == nil {
		f.err = fmt.Errorf("%s: %w", f.names[pos], err)
	}
}

func (f *fieldReader) isNull(pos int) bool { return f.nulls>>pos&1 != 0 }

func (f *fieldReader) slot(pos int) uint64 { return le.Uint64(f.data[8+8*pos:]) }

// present reports whether field pos is to be read: no error so far and not null.
func (f *fieldReader) present(pos int) bool { return f.err == nil && !f.isNull(pos) }

// notNull reports whether field pos is to be read, failing if it is null: it is
// NOT NULL in the schema.
func (f *fieldReader) notNull(pos int) bool {
	return f.err == nil && f.nulls>>pos&1 == 0 || f.failNull(pos)
}

func (f *fieldReader) failNull(pos int) bool {
	if f.err == nil {
		f.fail(pos, fmt.Errorf("null in a NOT NULL field: %w", ErrMalformed))
	}
	return false
}

// varLen returns the bytes field pos's slot points at: inline ones (if inlineOK) or an
// offset and size inside the row. The common case, an offset and size in range, is
// checked here; readVarLen handles the rest and words the errors. An inline slot has
// its top bit set, so its "offset" is at least 2^31 and never in range: rows come from
// int32-framed records.
func (f *fieldReader) varLen(pos int, inlineOK bool) ([]byte, bool) {
	v := f.slot(pos)
	if end := v>>32 + v&0xffffffff; end <= uint64(len(f.data)) {
		return f.data[v>>32 : end : end], true
	}
	return f.varLenSlow(pos, inlineOK)
}

func (f *fieldReader) varLenSlow(pos int, inlineOK bool) ([]byte, bool) {
	b, err := readVarLen(f.data, 8+8*pos, "field", pos, inlineOK)
	if err != nil {
		f.fail(pos, err)
		return nil, false
	}
	return b, true
}

// binary returns the bytes of a CHAR, VARCHAR or BINARY field, which may be inline.
func (f *fieldReader) binary(pos int) ([]byte, bool) { return f.varLen(pos, true) }

func (f *fieldReader) str(pos int) string {
	if !f.notNull(pos) {
		return ""
	}
	b, _ := f.binary(pos)
	return f.mem.str(b)
}

func (f *fieldReader) optStr(pos int) *string {
	if !f.present(pos) {
		return nil
	}
	return f.mem.strPtr(f.str(pos))
}

// long reads a BIGINT NOT NULL field. Fixed-width reads cannot fail, so unlike the
// others they go on after an error (what they read is dropped with the record).
func (f *fieldReader) long(pos int) int64 {
	if f.isNull(pos) {
		f.failNull(pos)
		return 0
	}
	return int64(f.slot(pos))
}

func (f *fieldReader) optLong(pos int) *int64 {
	if !f.present(pos) {
		return nil
	}
	return f.mem.long(int64(f.slot(pos)))
}

// int reads an INT NOT NULL field, like long.
func (f *fieldReader) int(pos int) int32 {
	if f.isNull(pos) {
		f.failNull(pos)
		return 0
	}
	return int32(uint32(f.slot(pos)))
}

// bytes returns a copy of a nullable BYTES field.
func (f *fieldReader) bytes(pos int) []byte {
	if !f.present(pos) {
		return nil
	}
	b, _ := f.binary(pos)
	return f.mem.copyBytes(b)
}

func (f *fieldReader) serializedRow(pos int) Row {
	if !f.notNull(pos) {
		return Row{}
	}
	b, ok := f.binary(pos)
	if !ok {
		return Row{}
	}
	if len(b) >= 4 {
		if arity := int(binary.BigEndian.Uint32(b)); arity <= len(b) && fixedPartSize(arity) <= len(b)-4 {
			return Row{arity: arity, data: f.mem.copyBytes(b[4:])}
		}
	}
	_, err := rowFromSerializedSlow("row", b)
	f.fail(pos, err)
	return Row{}
}

// array returns the ARRAY field pos (not null) with its elements' region checked for
// elements of the given width (NewArray and Array.elem word the errors).
func (f *fieldReader) array(pos, width int) (Array, bool) {
	b, ok := f.varLen(pos, false)
	if !ok {
		return Array{}, false
	}
	if len(b) >= 4 {
		n := int64(int32(le.Uint32(b)))
		if n >= 0 && int64(arrayHeader(int(n)))+n*int64(width) <= int64(len(b)) {
			return Array{n: int(n), data: b}, true
		}
	}
	a, err := NewArray(b)
	if err == nil {
		_, err = a.elem(0, width)
	}
	f.fail(pos, err)
	return Array{}, false
}

func (f *fieldReader) strings(pos int, nullable bool) []string {
	if f.err != nil {
		return nil
	}
	if f.isNull(pos) {
		if !nullable {
			f.notNull(pos)
		}
		return nil
	}
	a, ok := f.array(pos, 8)
	if !ok {
		return nil
	}
	if a.n == 0 {
		return []string{} // no heap pointer for the collector to follow
	}
	// Consecutive data files usually list the same columns: reuse the strings (never
	// the slice, which the caller may change).
	remember := pos < dataFileArity
	if remember && string(f.mem.lastArr[pos]) == string(a.data) {
		out := f.mem.strings(a.n)
		copy(out, f.mem.lastStrs[pos])
		return out
	}
	out := f.mem.strings(a.n)
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

// longs reads an ARRAY<BIGINT> such as the null counts; nil marks a null element.
func (f *fieldReader) longs(pos int) []*int64 {
	a, ok := f.array(pos, 8)
	if !ok {
		return nil
	}
	out, vals := f.mem.ptrs(a.n), f.mem.longs(a.n)
	elems := a.data[arrayHeader(a.n):]
	for i := range out {
		if !a.IsNullAt(i) {
			vals[i] = int64(le.Uint64(elems[8*i:]))
			out[i] = &vals[i]
		}
	}
	return out
}

// stats reads a SimpleStats row into s.
func (f *fieldReader) stats(pos int, s *Stats) {
	if !f.notNull(pos) {
		return
	}
	var sf fieldReader
	if !f.nested(pos, statsArity, statsFields, &sf) {
		return
	}
	s.MinValues = sf.serializedRow(0)
	s.MaxValues = sf.serializedRow(1)
	if sf.notNull(2) {
		s.NullCounts = sf.longs(2)
	}
	if sf.err != nil {
		f.fail(pos, sf.err)
	}
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

// dataFile is DataFileMetaSerializer.fromRow.
func (fr *fieldReader) dataFile(f *DataFile) error {
	f.FileName = fr.str(0)
	f.FileSize = fr.long(1)
	f.RowCount = fr.long(2)
	f.MinKey = fr.serializedRow(3)
	f.MaxKey = fr.serializedRow(4)
	fr.stats(5, &f.KeyStats)
	fr.stats(6, &f.ValueStats)
	f.MinSequenceNumber = fr.long(7)
	f.MaxSequenceNumber = fr.long(8)
	f.SchemaID = fr.long(9)
	f.Level = fr.int(10)
	f.ExtraFiles = fr.strings(11, false)
	f.CreationTime = fr.optLong(12)
	f.DeleteRowCount = fr.optLong(13)
	f.EmbeddedIndex = fr.bytes(14)
	if fr.present(15) {
		v := int8(fr.slot(15))
		if v != int8(FileSourceAppend) && v != int8(FileSourceCompact) {
			fr.fail(15, malformed("file source", "unknown value %d", v))
		}
		f.FileSource = fr.mem.source(FileSource(v))
	}
	f.ValueStatsCols = fr.strings(16, true)
	f.ExternalPath = fr.optStr(17)
	f.FirstRowID = fr.optLong(18)
	f.WriteCols = fr.strings(19, true)
	return fr.err
}

// indexFile is IndexFileMetaSerializer.fromRow and its V3/V4 predecessors.
func (fr *fieldReader) indexFile(version int, f *IndexFile) error {
	f.IndexType = fr.str(0)
	f.FileName = fr.str(1)
	f.FileSize = fr.long(2)
	f.RowCount = fr.long(3)
	if fr.present(4) {
		f.DVRanges = fr.dvRanges(4)
	}
	f.ExternalPath = fr.optStr(5)
	if version >= Version11 && fr.present(6) {
		f.GlobalIndex = fr.globalIndex(version, 6)
	}
	return fr.err
}

func (fr *fieldReader) globalIndex(version, pos int) *GlobalIndex {
	arity := globalArityV11
	if version >= Version12 {
		arity = globalArityV12
	}
	var gr fieldReader
	if !fr.nested(pos, arity, globalIndexFields, &gr) {
		return nil
	}
	gi := &GlobalIndex{RowRangeStart: gr.long(0), RowRangeEnd: gr.long(1), IndexFieldID: gr.int(2)}
	if gr.present(3) {
		if a, ok := gr.array(3, 4); ok {
			gi.ExtraFieldIDs = int32s(&gr, 3, a)
		}
	}
	gi.IndexMeta = gr.bytes(4)
	if arity == globalArityV12 {
		gi.SourceMeta = gr.bytes(5)
	}
	if gr.err != nil {
		fr.fail(pos, gr.err)
	}
	return gi
}

// int32s reads an ARRAY<INT NOT NULL> whose elements' region array checked.
func int32s(fr *fieldReader, pos int, a Array) []int32 {
	out := make([]int32, a.n)
	h := arrayHeader(a.n)
	for i := range out {
		if a.IsNullAt(i) {
			fr.fail(pos, malformed("array", "null element %d in ARRAY<INT NOT NULL>", i))
			return nil
		}
		out[i] = int32(le.Uint32(a.data[h+4*i:]))
	}
	return out
}

func (fr *fieldReader) dvRanges(pos int) []DeletionVector {
	a, ok := fr.array(pos, 8)
	if !ok {
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
		var dr fieldReader
		dr.reset(r.data, dvFields, fr.mem)
		out[i] = DeletionVector{DataFileName: dr.str(0), Offset: dr.int(1), Length: dr.int(2), Cardinality: dr.optLong(3)}
		if dr.err != nil {
			fr.fail(pos, fmt.Errorf("element %d: %w", i, dr.err))
			return nil
		}
	}
	return out
}
