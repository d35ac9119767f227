package paimon

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"strings"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/catalogs/lake"
)

// Deletion vectors (deletion-vectors.enabled), read as Paimon Java reads
// them: the snapshot's index manifest names, per partition and bucket,
// DELETION_VECTORS index files under index/, each a version byte then,
// for every data file with deletions, at the offset its range gives: the
// length (big-endian int32, magic included), the magic number, a
// portable RoaringBitmap of the deleted row positions, and a CRC32 of
// magic and bitmap (BitmapDeletionVector, DeletionVectorsIndexFile). A
// batch read of a primary-key table with deletion vectors skips level-0
// files (CoreOptions.batchScanSkipLevel0): their rows become visible once
// compacted, when their older versions are marked deleted.

// dvMagic is BitmapDeletionVector.MAGIC_NUMBER (32-bit positions).
const dvMagic = 1581511376

// dvVersion is DeletionVectorsIndexFile.VERSION_ID_V1.
const dvVersion = 1

// deletionFile is where one data file's deletion vector is.
type deletionFile struct {
	index          string // the index file, relative to the table's index/
	offset, length int64
}

// dvKey names a data file of a partition (serialized as the index
// manifest holds it: arity, then the row) and bucket.
func dvKey(partition []byte, bucket int32, file string) string {
	return fmt.Sprintf("%x/%d/%s", partition, bucket, file)
}

func dvEnabled(s *tableSchema) bool {
	return strings.EqualFold(strings.TrimSpace(s.Options[optDeletionVectors]), "true")
}

// loadDeletions reads the deletion vectors' places from the snapshot's
// index manifest; nil when it has none.
func (p *Provider) loadDeletions(ctx context.Context, st *tableState) (map[string]deletionFile, error) {
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
	bad := func(why string) error {
		return catalogs.Errorf(catalogs.ErrFailedPrecondition, "table %s: index manifest %s: %s", st.ident, name, why)
	}
	out := map[string]deletionFile{}
	for _, r := range recs {
		if r["_INDEX_TYPE"] != indexTypeDeletionVectors {
			continue
		}
		if k, _ := r["_KIND"].(int32); k != fileAdd {
			continue
		}
		if ext, ok := r["_EXTERNAL_PATH"].(string); ok && ext != "" {
			return nil, bad("a deletion-vector file in an external path is not read by this backend")
		}
		part, _ := r["_PARTITION"].([]byte)
		bucket, _ := r["_BUCKET"].(int32)
		index, _ := r["_FILE_NAME"].(string)
		ranges, _ := r["_DELETIONS_VECTORS_RANGES"].([]any)
		for _, x := range ranges {
			m, ok := x.(map[string]any)
			if !ok {
				return nil, bad("a deletion-vector range is not a record")
			}
			file, _ := m["f0"].(string)
			off, ok1 := m["f1"].(int32)
			n, ok2 := m["f2"].(int32)
			if file == "" || !ok1 || !ok2 || off < 0 || n < 4 {
				return nil, bad(fmt.Sprintf("deletion-vector range %v", m))
			}
			out[dvKey(part, bucket, file)] = deletionFile{index: index, offset: int64(off), length: int64(n)}
		}
	}
	return out, nil
}

// readDeletionVector reads the positions a deletion vector deletes.
func (p *Provider) readDeletionVector(ctx context.Context, st *tableState, d deletionFile) (*roaring.Bitmap, error) {
	path := st.dir + "/index/" + d.index
	b, err := p.fs.Read(ctx, path)
	if err != nil {
		return nil, lake.MapErr(err, fmt.Sprintf("table %s: deletion-vector file %s", st.ident, d.index))
	}
	bad := func(why string) error {
		return catalogs.Errorf(catalogs.ErrFailedPrecondition, "table %s: deletion-vector file %s at %d: %s", st.ident, d.index, d.offset, why)
	}
	if len(b) == 0 || b[0] != dvVersion {
		return nil, bad("not a version 1 deletion-vector file")
	}
	end := d.offset + 4 + d.length + 4
	if d.offset < 1 || end > int64(len(b)) {
		return nil, bad(fmt.Sprintf("range of %d bytes past the file's %d", d.length, len(b)))
	}
	size := int64(binary.BigEndian.Uint32(b[d.offset:]))
	data := b[d.offset+4 : d.offset+4+d.length]
	switch {
	case size != d.length:
		return nil, bad(fmt.Sprintf("length %d, the index manifest says %d", size, d.length))
	case binary.BigEndian.Uint32(data) != dvMagic:
		// Bitmap64DeletionVector (deletion-vectors.bitmap64) is not read here.
		return nil, bad(fmt.Sprintf("magic %d is not the 32-bit bitmap's (option %q)", binary.BigEndian.Uint32(data), "deletion-vectors.bitmap64"))
	case crc32.ChecksumIEEE(data) != binary.BigEndian.Uint32(b[d.offset+4+d.length:]):
		return nil, bad("checksum mismatch")
	}
	bm := roaring.New()
	if _, err := bm.ReadFrom(bytes.NewReader(data[4:])); err != nil {
		return nil, bad(fmt.Sprintf("bitmap: %v", err))
	}
	return bm, nil
}
