package envelope

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"time"
	"unicode/utf8"
)

// Version is the envelope version Seal writes.
const Version = 2

// Bounds of the variable fields.
const (
	// MaxPayload is the largest payload an envelope may declare (the
	// largest Java array, so the largest payload a JVM engine writes).
	MaxPayload = 1<<31 - 1
	maxKind    = 32
	maxParts   = 64
	maxPart    = 1024
	maxUser    = 1024
)

// macSize is the length of the trailing HMAC-SHA256.
const macSize = sha256.Size

// Errors, wrapped by every error Parse and Open return.
var (
	// ErrMalformed: the bytes are not an envelope (truncated, a length or
	// count that does not fit, a damaged checksum).
	ErrMalformed = errors.New("malformed commit-message envelope")
	// ErrSignature: the HMAC does not match: signed with another key, or
	// altered after signing.
	ErrSignature = errors.New("commit-message envelope signature does not match")
	// ErrUnsupportedVersion: an envelope version this package does not
	// accept (the backend kind and serializer version are the backend's
	// catalogs.PayloadCodec's to accept).
	ErrUnsupportedVersion = errors.New("unsupported commit-message envelope")
)

// Envelope is what an envelope carries.
type Envelope struct {
	// Version is the envelope version read (2).
	Version int
	// Kind is the payload's format: the backend kind its
	// catalogs.PayloadCodec names (1 to 32 printable ASCII bytes).
	Kind string
	// SerializerVersion is the version of the payload's format.
	SerializerVersion int
	// Table is the table the payload was staged for: catalog, namespace
	// levels, name. Empty in a version 1 envelope.
	Table []string
	// CommitUser names who prepared the payload (the worker's principal).
	CommitUser string
	// PreparedAt is when the worker prepared it (millisecond precision).
	PreparedAt time.Time
	// Payload is the payload's bytes (in Parse and Open, not a copy).
	Payload []byte
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// magic opens every envelope, of every version.
var magic = []byte("FGCM")

// Seal writes e as a version 2 envelope signed with key. Layout, all
// integers big-endian:
//
//	4      magic "FGCM"
//	1      envelope version (2)
//	4      serializer version (int32)
//	1      kind length k, then k bytes of kind (ASCII)
//	1      table part count n (2..64), then n × (uint16 length, UTF-8 bytes)
//	2      commit user length u, then u bytes (UTF-8)
//	8      prepared at, Unix milliseconds (int64)
//	4      payload length p (uint32)
//	4      CRC32C (Castagnoli) of every byte above and of the payload
//	p      payload
//	32     HMAC-SHA256, keyed by key, of every byte above
func Seal(e Envelope, key []byte) ([]byte, error) {
	if len(key) == 0 {
		return nil, errors.New("envelope: empty signing key")
	}
	if err := checkFields(e); err != nil {
		return nil, err
	}
	return seal(e, key), nil
}

// seal writes the envelope of fields already checked.
func seal(e Envelope, key []byte) []byte {
	size := 4 + 1 + 4 + 1 + len(e.Kind) + 1 + 2 + len(e.CommitUser) + 8 + 4 + 4 + len(e.Payload) + macSize
	for _, p := range e.Table {
		size += 2 + len(p)
	}
	b := make([]byte, 0, size)
	b = append(b, magic...)
	b = append(b, Version)
	b = binary.BigEndian.AppendUint32(b, uint32(int32(e.SerializerVersion)))
	b = append(b, byte(len(e.Kind)))
	b = append(b, e.Kind...)
	b = append(b, byte(len(e.Table)))
	for _, p := range e.Table {
		b = binary.BigEndian.AppendUint16(b, uint16(len(p)))
		b = append(b, p...)
	}
	b = binary.BigEndian.AppendUint16(b, uint16(len(e.CommitUser)))
	b = append(b, e.CommitUser...)
	b = binary.BigEndian.AppendUint64(b, uint64(e.PreparedAt.UnixMilli()))
	b = binary.BigEndian.AppendUint32(b, uint32(len(e.Payload)))
	b = binary.BigEndian.AppendUint32(b, crc32.Update(crc32.Checksum(b, castagnoli), castagnoli, e.Payload))
	b = append(b, e.Payload...)
	return append(b, mac(key, b)...)
}

// checkFields refuses what Seal cannot write or Open would refuse.
func checkFields(e Envelope) error {
	if err := checkKind(e.Kind); err != nil {
		return err
	}
	if len(e.Table) < 2 || len(e.Table) > maxParts {
		return fmt.Errorf("envelope: table identity of %d parts, want 2 to %d", len(e.Table), maxParts)
	}
	for _, p := range e.Table {
		if p == "" || len(p) > maxPart || !utf8.ValidString(p) {
			return fmt.Errorf("envelope: table identity part %q is empty, longer than %d bytes or not UTF-8", p, maxPart)
		}
	}
	if len(e.CommitUser) > maxUser || !utf8.ValidString(e.CommitUser) {
		return fmt.Errorf("envelope: commit user longer than %d bytes or not UTF-8", maxUser)
	}
	if len(e.Payload) > MaxPayload {
		return fmt.Errorf("envelope: payload of %d bytes exceeds %d", len(e.Payload), MaxPayload)
	}
	return nil
}

// checkKind accepts a backend kind of 1 to maxKind printable ASCII bytes.
// Which kinds and serializer versions a gateway takes is its backends'
// business (catalogs.PayloadCodec), not the envelope's: a new format adds
// nothing here.
func checkKind(kind string) error {
	if kind == "" || len(kind) > maxKind {
		return fmt.Errorf("envelope: backend kind %q: %w (1 to %d bytes)", kind, ErrMalformed, maxKind)
	}
	for i := range len(kind) {
		if kind[i] <= ' ' || kind[i] > '~' {
			return fmt.Errorf("envelope: backend kind %q: %w (printable ASCII only)", kind, ErrMalformed)
		}
	}
	return nil
}

func mac(key, b []byte) []byte {
	h := hmac.New(sha256.New, key)
	h.Write(b)
	return h.Sum(nil)
}

// Open checks a version 2 envelope signed with key and returns what it
// carries (Payload is not a copy). It checks, in order: the structure
// (ErrMalformed naming the field that does not fit), the CRC32C
// (ErrMalformed), the signature (ErrSignature). The backend kind and the
// serializer version are the caller's to check against the backend the
// request names (its catalogs.PayloadCodec). A version 1 envelope is
// ErrUnsupportedVersion: it is unsigned.
func Open(b, key []byte) (Envelope, error) {
	e, signed, err := parse(b)
	if err != nil {
		return Envelope{}, err
	}
	if len(key) == 0 || !hmac.Equal(mac(key, b[:signed]), b[signed:]) {
		return Envelope{}, fmt.Errorf("envelope: HMAC-SHA256: %w (signed with another key, or altered)", ErrSignature)
	}
	return e, nil
}

// Parse reads an envelope without checking its signature (to inspect
// one). A version 1 envelope (unsigned, its format's own) is
// ErrUnsupportedVersion.
func Parse(b []byte) (Envelope, error) {
	e, _, err := parse(b)
	return e, err
}

// parse reads the structure and the CRC; signed is where the HMAC starts.
func parse(b []byte) (e Envelope, signed int, err error) {
	if len(b) < 5 {
		return e, 0, malformed("header", "%d bytes cannot hold magic and version", len(b))
	}
	if string(b[:4]) != string(magic) {
		return e, 0, malformed("magic", "got %q, want %q", b[:4], magic)
	}
	switch b[4] {
	case 1:
		return e, 0, fmt.Errorf("envelope: version 1 is unsigned: %w (commit messages need version %d)", ErrUnsupportedVersion, Version)
	case Version:
	default:
		return e, 0, fmt.Errorf("envelope: version %d: %w (supported: [%d])", b[4], ErrUnsupportedVersion, Version)
	}
	r := reader{b: b, off: 5}
	e.Version = Version
	e.SerializerVersion = int(int32(r.u32("serializer version")))
	e.Kind = string(r.bytes("backend kind", int(r.u8("backend kind length")), maxKind))
	if r.err == nil {
		r.err = checkKind(e.Kind)
	}
	parts := int(r.u8("table part count"))
	if r.err == nil && (parts < 2 || parts > maxParts) {
		r.err = malformed("table part count", "%d, want 2 to %d", parts, maxParts)
	}
	for i := 0; i < parts && r.err == nil; i++ {
		field := fmt.Sprintf("table part %d", i)
		p := r.bytes(field, int(r.u16(field+" length")), maxPart)
		if r.err == nil && (len(p) == 0 || !utf8.Valid(p)) {
			r.err = malformed(field, "empty or not UTF-8")
		}
		e.Table = append(e.Table, string(p))
	}
	user := r.bytes("commit user", int(r.u16("commit user length")), maxUser)
	if r.err == nil && !utf8.Valid(user) {
		r.err = malformed("commit user", "not UTF-8")
	}
	e.CommitUser = string(user)
	e.PreparedAt = time.UnixMilli(int64(r.u64("prepared at"))).UTC()
	n := int64(r.u32("payload length"))
	crcAt := r.off
	want := r.u32("checksum")
	if r.err != nil {
		return Envelope{}, 0, r.err
	}
	if rest := int64(len(b) - r.off - macSize); n != rest {
		if rest < 0 {
			return Envelope{}, 0, malformed("signature", "truncated: %d bytes after the header, the signature alone is %d", len(b)-r.off, macSize)
		}
		return Envelope{}, 0, malformed("payload length", "header says %d bytes, envelope holds %d (truncated or padded)", n, rest)
	}
	e.Payload = b[r.off : r.off+int(n)]
	if got := crc32.Update(crc32.Checksum(b[:crcAt], castagnoli), castagnoli, e.Payload); got != want {
		return Envelope{}, 0, malformed("checksum", "CRC32C %08x, header says %08x (damaged)", got, want)
	}
	return e, r.off + int(n), nil
}

// reader reads big-endian fields, remembering the first failure.
type reader struct {
	b   []byte
	off int
	err error
}

func (r *reader) take(field string, n int) []byte {
	if r.err != nil {
		return nil
	}
	if n > len(r.b)-r.off {
		r.err = malformed(field, "truncated: %d bytes needed at offset %d, %d left", n, r.off, len(r.b)-r.off)
		return nil
	}
	out := r.b[r.off : r.off+n]
	r.off += n
	return out
}

func (r *reader) u8(field string) uint8 {
	if b := r.take(field, 1); b != nil {
		return b[0]
	}
	return 0
}

func (r *reader) u16(field string) uint16 {
	if b := r.take(field, 2); b != nil {
		return binary.BigEndian.Uint16(b)
	}
	return 0
}

func (r *reader) u32(field string) uint32 {
	if b := r.take(field, 4); b != nil {
		return binary.BigEndian.Uint32(b)
	}
	return 0
}

func (r *reader) u64(field string) uint64 {
	if b := r.take(field, 8); b != nil {
		return binary.BigEndian.Uint64(b)
	}
	return 0
}

func (r *reader) bytes(field string, n, limit int) []byte {
	if r.err == nil && n > limit {
		r.err = malformed(field, "%d bytes, at most %d", n, limit)
	}
	return r.take(field, n)
}

func malformed(field, format string, args ...any) error {
	return fmt.Errorf("envelope: %s: %s: %w", field, fmt.Sprintf(format, args...), ErrMalformed)
}
