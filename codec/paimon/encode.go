package paimon

import (
	"encoding/binary"
	"fmt"
)

// EncodeList encodes messages as Java's CommitMessageSerializer.serializeList does at the
// given serializer version. A message that the version cannot express (a global index
// before version 11, global-index source metadata before version 12) is refused rather
// than silently dropped, as is one that Java could not read back as written (a deletion
// vector listed twice for one data file, an unknown file source).
func EncodeList(version int, msgs []CommitMessage) ([]byte, error) {
	return AppendList(nil, version, msgs)
}

// AppendList is EncodeList appending to dst.
func AppendList(dst []byte, version int, msgs []CommitMessage) ([]byte, error) {
	if err := CheckVersion(version); err != nil {
		return nil, err
	}
	e := encoder{version: version, out: dst}
	e.int32(int32(len(msgs)))
	for i := range msgs {
		if err := e.message(&msgs[i]); err != nil {
			return nil, fmt.Errorf("paimon: message %d: %w", i, err)
		}
	}
	return e.out, nil
}

// encoder keeps scratch writers so that encoding a large list allocates little.
type encoder struct {
	version int
	out     []byte
	row     sectionWriter // the record being written
	nested  sectionWriter // a stats or global-index row inside it
	arr     sectionWriter // an array inside either
	tmp     []byte
}

func (e *encoder) int32(v int32) { e.out = binary.BigEndian.AppendUint32(e.out, uint32(v)) }

func (e *encoder) message(m *CommitMessage) error {
	if m.Partition.data == nil {
		return fmt.Errorf("partition: unset row (use EmptyRow for an unpartitioned table)")
	}
	e.int32(int32(4 + len(m.Partition.data)))
	e.int32(int32(m.Partition.arity))
	e.out = append(e.out, m.Partition.data...)
	e.int32(m.Bucket)
	if m.TotalBuckets != nil {
		e.out = append(e.out, 1)
		e.int32(*m.TotalBuckets)
	} else {
		e.out = append(e.out, 0)
	}
	for _, l := range []struct {
		name  string
		files []DataFile
		index []IndexFile
		isIdx bool
	}{
		{name: "new files", files: m.Data.NewFiles},
		{name: "deleted files", files: m.Data.DeletedFiles},
		{name: "changelog files", files: m.Data.ChangelogFiles},
		{name: "new index files", index: m.Data.NewIndexFiles, isIdx: true},
		{name: "deleted index files", index: m.Data.DeletedIndexFiles, isIdx: true},
		{name: "compact before", files: m.Compact.CompactBefore},
		{name: "compact after", files: m.Compact.CompactAfter},
		{name: "compact changelog files", files: m.Compact.ChangelogFiles},
		{name: "compact new index files", index: m.Compact.NewIndexFiles, isIdx: true},
		{name: "compact deleted index files", index: m.Compact.DeletedIndexFiles, isIdx: true},
	} {
		if l.isIdx {
			e.int32(int32(len(l.index)))
			for i := range l.index {
				if err := e.indexFile(&l.index[i]); err != nil {
					return fmt.Errorf("%s[%d]: %w", l.name, i, err)
				}
			}
			continue
		}
		e.int32(int32(len(l.files)))
		for i := range l.files {
			if err := e.dataFile(&l.files[i]); err != nil {
				return fmt.Errorf("%s[%d]: %w", l.name, i, err)
			}
		}
	}
	return nil
}

// record appends the finished row as ObjectSerializer writes it: length, then bytes.
func (e *encoder) record() {
	e.int32(int32(len(e.row.buf)))
	e.out = append(e.out, e.row.buf...)
}

// serializedRow is SerializationUtils.serializeBinaryRow(row): arity, then the row.
func (e *encoder) serializedRow(r Row) []byte {
	e.tmp = binary.BigEndian.AppendUint32(e.tmp[:0], uint32(r.arity))
	e.tmp = append(e.tmp, r.data...)
	return e.tmp
}

func (e *encoder) strings(w *sectionWriter, pos int, ss []string) {
	e.arr.resetArray(len(ss), 8)
	for i, s := range ss {
		e.arr.writeString(i, s)
	}
	w.writeSection(pos, e.arr.buf)
}

func (e *encoder) stats(pos int, s *Stats) error {
	if s.MinValues.data == nil || s.MaxValues.data == nil {
		return fmt.Errorf("%s: unset min or max values row (use EmptyStats)", dataFileFields[pos])
	}
	w := &e.nested
	w.resetRow(statsArity, RowKindInsert)
	w.writeBytes(0, e.serializedRow(s.MinValues))
	w.writeBytes(1, e.serializedRow(s.MaxValues))
	e.arr.resetArray(len(s.NullCounts), 8)
	for i, n := range s.NullCounts {
		if n == nil {
			e.arr.setNull(i, 8)
		} else {
			e.arr.putLong(i, uint64(*n))
		}
	}
	w.writeSection(2, e.arr.buf)
	e.row.writeSection(pos, w.buf)
	return nil
}

func (e *encoder) optLong(pos int, v *int64) {
	if v == nil {
		e.row.setNull(pos, 8)
	} else {
		e.row.putLong(pos, uint64(*v))
	}
}

// dataFile is DataFileMetaSerializer.toRow followed by InternalRowSerializer.serialize.
func (e *encoder) dataFile(f *DataFile) error {
	if f.MinKey.data == nil || f.MaxKey.data == nil {
		return fmt.Errorf("file %q: unset minKey or maxKey row (use EmptyRow)", f.FileName)
	}
	w := &e.row
	w.resetRow(dataFileArity, RowKindInsert)
	w.writeString(0, f.FileName)
	w.putLong(1, uint64(f.FileSize))
	w.putLong(2, uint64(f.RowCount))
	w.writeBytes(3, e.serializedRow(f.MinKey))
	w.writeBytes(4, e.serializedRow(f.MaxKey))
	if err := e.stats(5, &f.KeyStats); err != nil {
		return fmt.Errorf("file %q: %w", f.FileName, err)
	}
	if err := e.stats(6, &f.ValueStats); err != nil {
		return fmt.Errorf("file %q: %w", f.FileName, err)
	}
	w.putLong(7, uint64(f.MinSequenceNumber))
	w.putLong(8, uint64(f.MaxSequenceNumber))
	w.putLong(9, uint64(f.SchemaID))
	w.putInt(10, uint32(f.Level))
	e.strings(w, 11, f.ExtraFiles)
	e.optLong(12, f.CreationTime)
	e.optLong(13, f.DeleteRowCount)
	if f.EmbeddedIndex == nil {
		w.setNull(14, 8)
	} else {
		w.writeBytes(14, f.EmbeddedIndex)
	}
	if f.FileSource == nil {
		w.setNull(15, 8)
	} else {
		if *f.FileSource != FileSourceAppend && *f.FileSource != FileSourceCompact {
			return fmt.Errorf("file %q: fileSource: unknown value %d", f.FileName, *f.FileSource)
		}
		w.putByte(15, byte(*f.FileSource))
	}
	if f.ValueStatsCols == nil {
		w.setNull(16, 8)
	} else {
		e.strings(w, 16, f.ValueStatsCols)
	}
	if f.ExternalPath == nil {
		w.setNull(17, 8)
	} else {
		w.writeString(17, *f.ExternalPath)
	}
	e.optLong(18, f.FirstRowID)
	if f.WriteCols == nil {
		w.setNull(19, 8)
	} else {
		e.strings(w, 19, f.WriteCols)
	}
	e.record()
	return nil
}

// indexFile is IndexFileMetaSerializer.toRow (and its predecessors) then serialize.
func (e *encoder) indexFile(f *IndexFile) error {
	if f.GlobalIndex != nil && e.version < Version11 {
		return fmt.Errorf("index file %q: globalIndex needs serializer version %d or later, encoding %d", f.FileName, Version11, e.version)
	}
	if f.GlobalIndex != nil && f.GlobalIndex.SourceMeta != nil && e.version < Version12 {
		return fmt.Errorf("index file %q: globalIndex.sourceMeta needs serializer version %d or later, encoding %d", f.FileName, Version12, e.version)
	}
	w := &e.row
	w.resetRow(indexArity(e.version), RowKindInsert)
	w.writeString(0, f.IndexType)
	w.writeString(1, f.FileName)
	w.putLong(2, uint64(f.FileSize))
	w.putLong(3, uint64(f.RowCount))
	if f.DVRanges == nil {
		w.setNull(4, 8)
	} else if err := e.dvRanges(f); err != nil {
		return err
	}
	if f.ExternalPath == nil {
		w.setNull(5, 8)
	} else {
		w.writeString(5, *f.ExternalPath)
	}
	if e.version >= Version11 {
		if f.GlobalIndex == nil {
			w.setNull(6, 8)
		} else {
			e.globalIndex(f.GlobalIndex)
		}
	}
	e.record()
	return nil
}

func (e *encoder) dvRanges(f *IndexFile) error {
	seen := make(map[string]bool, len(f.DVRanges))
	a := &e.arr
	a.resetArray(len(f.DVRanges), 8)
	for i, dv := range f.DVRanges {
		if seen[dv.DataFileName] {
			return fmt.Errorf("index file %q: dvRanges[%d]: data file %q listed twice (Java keys deletion vectors by data file)", f.FileName, i, dv.DataFileName)
		}
		seen[dv.DataFileName] = true
		n := &e.nested
		n.resetRow(dvArity, RowKindInsert)
		n.writeString(0, dv.DataFileName)
		n.putInt(1, uint32(dv.Offset))
		n.putInt(2, uint32(dv.Length))
		if dv.Cardinality == nil {
			n.setNull(3, 8)
		} else {
			n.putLong(3, uint64(*dv.Cardinality))
		}
		a.writeSection(i, n.buf)
	}
	e.row.writeSection(4, a.buf)
	return nil
}

func (e *encoder) globalIndex(g *GlobalIndex) {
	arity := globalArityV11
	if e.version >= Version12 {
		arity = globalArityV12
	}
	n := &e.nested
	n.resetRow(arity, RowKindInsert)
	n.putLong(0, uint64(g.RowRangeStart))
	n.putLong(1, uint64(g.RowRangeEnd))
	n.putInt(2, uint32(g.IndexFieldID))
	if g.ExtraFieldIDs == nil {
		n.setNull(3, 8)
	} else {
		e.arr.resetArray(len(g.ExtraFieldIDs), 4)
		for i, id := range g.ExtraFieldIDs {
			e.arr.putInt(i, uint32(id))
		}
		n.writeSection(3, e.arr.buf)
	}
	for pos, b := range [][]byte{g.IndexMeta, g.SourceMeta}[:arity-4] {
		if b == nil {
			n.setNull(4+pos, 8)
		} else {
			n.writeBytes(4+pos, b)
		}
	}
	e.row.writeSection(6, n.buf)
}
