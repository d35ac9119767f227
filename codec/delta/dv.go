package delta

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math/bits"
	"path"
	"strings"

	"github.com/google/uuid"
)

// Deletion vectors (PROTOCOL.md "Deletion Vectors" and appendix "Deletion Vector Format").
//
// A DV is a RoaringBitmapArray: a 4-byte little-endian magic number and a 64-bit Roaring
// bitmap in the portable format (8-byte bucket count; per bucket a 4-byte key, the high 32
// bits, and a standard 32-bit Roaring bitmap of the low bits). Inline DVs ('i') hold it in
// Z85; on-disk DVs ('u', 'p') sit in a file at offset, framed by a big-endian 4-byte size
// and a big-endian CRC-32 of the bitmap bytes.

const (
	// magicPortable is the protocol's magic number for the portable 64-bit format.
	magicPortable = 1681511377
	// magicNative is the older layout Delta's own RoaringBitmapArray also reads: a 4-byte
	// bitmap count, then per bitmap a 4-byte size and a 32-bit Roaring bitmap, keys implied
	// by position. Accepted because the reference reader accepts it.
	magicNative = 1681511376

	uuidZ85Len = 20

	roaringCookieNoRuns = 12346
	roaringCookieRuns   = 12347
	roaringNoOffsetMax  = 4 // with runs, offsets are written only from this many containers
	arrayContainerMax   = 4096
)

const z85Alphabet = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"

var z85Decode = func() (t [256]int16) {
	for i := range t {
		t[i] = -1
	}
	for i := 0; i < len(z85Alphabet); i++ {
		t[z85Alphabet[i]] = int16(i)
	}
	return t
}()

// DecodeZ85 decodes Z85 text (a multiple of 5 characters) into 4 bytes per 5 characters,
// big-endian, as Delta's Base85Codec does.
func DecodeZ85(s string) ([]byte, error) {
	if len(s)%5 != 0 {
		return nil, fmt.Errorf("%w: z85 text of %d characters is not a multiple of 5", ErrMalformed, len(s))
	}
	out := make([]byte, 0, len(s)/5*4)
	for i := 0; i < len(s); i += 5 {
		var v uint64
		for j := 0; j < 5; j++ {
			d := z85Decode[s[i+j]]
			if d < 0 {
				return nil, fmt.Errorf("%w: byte %q at %d is not z85", ErrMalformed, s[i+j], i+j)
			}
			v = v*85 + uint64(d)
		}
		if v > 0xFFFFFFFF {
			return nil, fmt.Errorf("%w: z85 block at %d overflows 32 bits", ErrMalformed, i)
		}
		out = binary.BigEndian.AppendUint32(out, uint32(v))
	}
	return out, nil
}

// EncodeZ85 encodes b, zero-padded to a multiple of 4 bytes, as Delta's Base85Codec does.
func EncodeZ85(b []byte) string {
	if r := len(b) % 4; r != 0 {
		b = append(b[:len(b):len(b)], make([]byte, 4-r)...)
	}
	var sb strings.Builder
	for i := 0; i < len(b); i += 4 {
		v := binary.BigEndian.Uint32(b[i:])
		var c [5]byte
		for j := 4; j >= 0; j-- {
			c[j] = z85Alphabet[v%85]
			v /= 85
		}
		sb.Write(c[:])
	}
	return sb.String()
}

// AbsolutePath is where an on-disk DV lives, relative to the table root for 'u' (the
// random prefix becomes a directory) and as written for 'p'. Inline DVs have no path.
func (dv *DeletionVector) AbsolutePath() (string, error) {
	switch dv.StorageType {
	case "u":
		s := dv.PathOrInlineDv
		if len(s) < uuidZ85Len {
			return "", fmt.Errorf("%w: deletion vector path %q is shorter than an encoded UUID", ErrMalformed, s)
		}
		prefix, enc := s[:len(s)-uuidZ85Len], s[len(s)-uuidZ85Len:]
		raw, err := DecodeZ85(enc)
		if err != nil {
			return "", err
		}
		id, err := uuid.FromBytes(raw)
		if err != nil {
			return "", fmt.Errorf("%w: deletion vector uuid: %v", ErrMalformed, err)
		}
		return path.Join(prefix, "deletion_vector_"+id.String()+".bin"), nil
	case "p":
		return DecodePath(dv.PathOrInlineDv)
	default:
		return "", fmt.Errorf("%w: a %q deletion vector has no file", ErrMalformed, dv.StorageType)
	}
}

// InlineBitmap returns the RoaringBitmapArray bytes of an inline ('i') DV.
func (dv *DeletionVector) InlineBitmap() ([]byte, error) {
	if dv.StorageType != "i" {
		return nil, fmt.Errorf("%w: deletion vector is not inline", ErrMalformed)
	}
	raw, err := DecodeZ85(dv.PathOrInlineDv)
	if err != nil {
		return nil, err
	}
	if dv.SizeInBytes < 0 || int(dv.SizeInBytes) > len(raw) {
		return nil, fmt.Errorf("%w: inline deletion vector holds %d bytes, sizeInBytes says %d", ErrMalformed, len(raw), dv.SizeInBytes)
	}
	return raw[:dv.SizeInBytes], nil
}

// StoredBitmap extracts the bitmap of an on-disk DV from the bytes of its file at the
// descriptor's offset (0 when absent): size, bitmap, CRC-32, checking both.
func (dv *DeletionVector) StoredBitmap(file []byte) ([]byte, error) {
	off := 0
	if dv.Offset != nil {
		off = int(*dv.Offset)
	}
	if off == 0 {
		// The file starts with its format version byte; a DV never starts at 0.
		return nil, fmt.Errorf("%w: deletion vector offset 0 points at the file's version byte", ErrMalformed)
	}
	if len(file) < 1 || file[0] != 1 {
		return nil, fmt.Errorf("%w: deletion vector file format version is not 1", ErrMalformed)
	}
	if off < 0 || off > len(file) || len(file)-off < 8 {
		return nil, fmt.Errorf("%w: deletion vector at offset %d overruns a %d-byte file", ErrMalformed, off, len(file))
	}
	size := binary.BigEndian.Uint32(file[off:])
	if int64(size) != int64(dv.SizeInBytes) {
		return nil, fmt.Errorf("%w: deletion vector size in file %d, descriptor says %d", ErrMalformed, size, dv.SizeInBytes)
	}
	if uint64(len(file)-off-8) < uint64(size) {
		return nil, fmt.Errorf("%w: deletion vector of %d bytes overruns the file", ErrMalformed, size)
	}
	data := file[off+4 : off+4+int(size)]
	want := binary.BigEndian.Uint32(file[off+4+int(size):])
	if got := crc32.ChecksumIEEE(data); got != want {
		return nil, fmt.Errorf("%w: deletion vector checksum %08x, file says %08x", ErrMalformed, got, want)
	}
	return data, nil
}

// DecodeBitmapArray decodes a RoaringBitmapArray into its row indexes, ascending and
// unique. maxRows bounds the answer: a run container describes 65536 rows in 6 bytes, so
// the bound, not the input's size, limits what decoding allocates. Pass the descriptor's
// cardinality or the data file's row count.
func DecodeBitmapArray(b []byte, maxRows int64) ([]uint64, error) {
	if maxRows < 0 {
		return nil, fmt.Errorf("delta: DecodeBitmapArray needs a row bound, got %d", maxRows)
	}
	r := reader{b: b}
	magic := r.u32()
	var rows []uint64
	add := func(high uint32, low []uint32) error {
		for _, l := range low {
			rows = append(rows, uint64(high)<<32|uint64(l))
			if maxRows >= 0 && int64(len(rows)) > maxRows {
				return fmt.Errorf("%w: deletion vector holds more than %d rows", ErrMalformed, maxRows)
			}
		}
		return nil
	}
	switch {
	case r.err != nil:
		return nil, r.err
	case magic == magicPortable:
		n := r.u64()
		if r.err != nil {
			return nil, r.err
		}
		// Each bucket takes at least 12 bytes (key and an empty bitmap header).
		if n > uint64(len(b))/12 {
			return nil, fmt.Errorf("%w: deletion vector claims %d buckets in %d bytes", ErrMalformed, n, len(b))
		}
		var last int64 = -1
		for i := uint64(0); i < n; i++ {
			key := r.u32()
			if r.err != nil {
				return nil, r.err
			}
			if key&0x80000000 != 0 || int64(key) <= last {
				return nil, fmt.Errorf("%w: deletion vector bucket key %d out of order or negative", ErrMalformed, key)
			}
			last = int64(key)
			low, err := r.roaring32(maxRows)
			if err != nil {
				return nil, err
			}
			if err := add(key, low); err != nil {
				return nil, err
			}
		}
	case magic == magicNative:
		n := r.u32()
		if r.err != nil {
			return nil, r.err
		}
		if n&0x80000000 != 0 || uint64(n) > uint64(len(b))/12 {
			return nil, fmt.Errorf("%w: deletion vector claims %d bitmaps in %d bytes", ErrMalformed, n, len(b))
		}
		for i := uint32(0); i < n; i++ {
			size := r.u32()
			start := r.off
			low, err := r.roaring32(maxRows)
			if err != nil {
				return nil, err
			}
			if uint64(r.off-start) != uint64(size) {
				return nil, fmt.Errorf("%w: deletion vector bitmap %d is %d bytes, header says %d", ErrMalformed, i, r.off-start, size)
			}
			if err := add(i, low); err != nil {
				return nil, err
			}
		}
	default:
		return nil, fmt.Errorf("%w: deletion vector magic number %d is not %d", ErrMalformed, magic, magicPortable)
	}
	if r.off != len(b) {
		return nil, fmt.Errorf("%w: %d bytes after the deletion vector", ErrMalformed, len(b)-r.off)
	}
	return rows, nil
}

// reader reads little-endian numbers, recording the first overrun.
type reader struct {
	b   []byte
	off int
	err error
}

func (r *reader) need(n int) bool {
	if r.err != nil {
		return false
	}
	if n < 0 || len(r.b)-r.off < n {
		r.err = fmt.Errorf("%w: deletion vector truncated at byte %d", ErrMalformed, r.off)
		return false
	}
	return true
}

func (r *reader) u16() uint16 {
	if !r.need(2) {
		return 0
	}
	v := binary.LittleEndian.Uint16(r.b[r.off:])
	r.off += 2
	return v
}

func (r *reader) u32() uint32 {
	if !r.need(4) {
		return 0
	}
	v := binary.LittleEndian.Uint32(r.b[r.off:])
	r.off += 4
	return v
}

func (r *reader) u64() uint64 {
	if !r.need(8) {
		return 0
	}
	v := binary.LittleEndian.Uint64(r.b[r.off:])
	r.off += 8
	return v
}

// roaring32 decodes one standard 32-bit Roaring bitmap (RoaringFormatSpec) at the reader's
// position and returns its values, ascending.
func (r *reader) roaring32(maxRows int64) ([]uint32, error) {
	cookie := r.u32()
	if r.err != nil {
		return nil, r.err
	}
	var n int
	var runFlags []byte
	hasOffsets := true
	switch {
	case cookie&0xFFFF == roaringCookieRuns:
		n = int(cookie>>16) + 1
		if !r.need((n + 7) / 8) {
			return nil, r.err
		}
		runFlags = r.b[r.off : r.off+(n+7)/8]
		r.off += (n + 7) / 8
		hasOffsets = n >= roaringNoOffsetMax
	case cookie == roaringCookieNoRuns:
		c := r.u32()
		if r.err != nil {
			return nil, r.err
		}
		if c > 1<<16 {
			return nil, fmt.Errorf("%w: roaring bitmap claims %d containers", ErrMalformed, c)
		}
		n = int(c)
	default:
		return nil, fmt.Errorf("%w: roaring bitmap cookie %d", ErrMalformed, cookie)
	}
	// Each container has a 4-byte descriptor; check before allocating by n.
	if !r.need(4 * n) {
		return nil, r.err
	}
	keys := make([]uint16, n)
	cards := make([]int, n)
	for i := 0; i < n; i++ {
		keys[i] = r.u16()
		cards[i] = int(r.u16()) + 1
		if i > 0 && keys[i] <= keys[i-1] {
			return nil, fmt.Errorf("%w: roaring container keys out of order", ErrMalformed)
		}
	}
	if hasOffsets {
		if !r.need(4 * n) {
			return nil, r.err
		}
		r.off += 4 * n // offsets are redundant for a sequential reader
	}
	var out []uint32
	for i := 0; i < n; i++ {
		base := uint32(keys[i]) << 16
		isRun := runFlags != nil && runFlags[i/8]&(1<<(i%8)) != 0
		if maxRows >= 0 && int64(len(out)+cards[i]) > maxRows && !isRun {
			return nil, fmt.Errorf("%w: deletion vector holds more than %d rows", ErrMalformed, maxRows)
		}
		switch {
		case isRun:
			runs := int(r.u16())
			if !r.need(4 * runs) {
				return nil, r.err
			}
			total := 0
			prevEnd := -1
			for j := 0; j < runs; j++ {
				start := int(r.u16())
				length := int(r.u16())
				if start <= prevEnd || start+length > 0xFFFF {
					return nil, fmt.Errorf("%w: roaring run out of order or past its container", ErrMalformed)
				}
				prevEnd = start + length
				total += length + 1
				if maxRows >= 0 && int64(len(out)+length+1) > maxRows {
					return nil, fmt.Errorf("%w: deletion vector holds more than %d rows", ErrMalformed, maxRows)
				}
				for v := start; v <= start+length; v++ {
					out = append(out, base|uint32(v))
				}
			}
			if total != cards[i] {
				return nil, fmt.Errorf("%w: roaring run container holds %d values, header says %d", ErrMalformed, total, cards[i])
			}
		case cards[i] <= arrayContainerMax:
			if !r.need(2 * cards[i]) {
				return nil, r.err
			}
			prev := -1
			for j := 0; j < cards[i]; j++ {
				v := int(r.u16())
				if v <= prev {
					return nil, fmt.Errorf("%w: roaring array container out of order", ErrMalformed)
				}
				prev = v
				out = append(out, base|uint32(v))
			}
		default:
			if !r.need(8192) {
				return nil, r.err
			}
			start := len(out)
			for w := 0; w < 1024; w++ {
				word := binary.LittleEndian.Uint64(r.b[r.off+8*w:])
				for word != 0 {
					bit := bits.TrailingZeros64(word)
					out = append(out, base|uint32(w*64+bit))
					word &= word - 1
				}
			}
			r.off += 8192
			if len(out)-start != cards[i] {
				return nil, fmt.Errorf("%w: roaring bitmap container holds %d values, header says %d", ErrMalformed, len(out)-start, cards[i])
			}
		}
	}
	return out, nil
}

// DeletedRows returns the row indexes the DV deletes, given the bitmap bytes (from
// InlineBitmap or StoredBitmap); their number must equal the descriptor's cardinality.
func (dv *DeletionVector) DeletedRows(bitmap []byte) ([]uint64, error) {
	rows, err := DecodeBitmapArray(bitmap, dv.Cardinality)
	if err != nil {
		return nil, err
	}
	if int64(len(rows)) != dv.Cardinality {
		return nil, fmt.Errorf("%w: deletion vector holds %d rows, cardinality says %d", ErrMalformed, len(rows), dv.Cardinality)
	}
	return rows, nil
}
