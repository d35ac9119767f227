package paimon

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

// The transport envelope carries a payload between processes together with the
// serializer version it was written at, which the payload itself does not record.
// Layout (big-endian, 17 bytes of header then the payload):
//
//	offset 0  4 bytes  magic "FGCM"
//	offset 4  1 byte   envelope version (1)
//	offset 5  4 bytes  serializer version (int32)
//	offset 9  4 bytes  payload length (uint32)
//	offset 13 4 bytes  CRC32C (Castagnoli) of bytes 0..12 and of the payload
//	offset 17          payload
const (
	EnvelopeVersion    = 1
	EnvelopeHeaderSize = 17
)

// EnvelopeKind names the CommitMessageSerializer list format as the
// backend kind of a signed commit-message envelope (codec/envelope).
const EnvelopeKind = "paimon"

// EnvelopeMagic opens every envelope.
var EnvelopeMagic = []byte("FGCM")

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// MaxEnvelopePayload bounds the payload length an envelope may declare; Java arrays (and
// so Java payloads) cannot be larger.
const MaxEnvelopePayload = 1<<31 - 1

// Wrap puts payload, written at serializer version, in an envelope.
func Wrap(version int, payload []byte) ([]byte, error) {
	if err := CheckVersion(version); err != nil {
		return nil, err
	}
	if len(payload) > MaxEnvelopePayload {
		return nil, fmt.Errorf("paimon: envelope: payload of %d bytes exceeds %d", len(payload), MaxEnvelopePayload)
	}
	out := make([]byte, EnvelopeHeaderSize, EnvelopeHeaderSize+len(payload))
	copy(out, EnvelopeMagic)
	out[4] = EnvelopeVersion
	binary.BigEndian.PutUint32(out[5:], uint32(version))
	binary.BigEndian.PutUint32(out[9:], uint32(len(payload)))
	crc := crc32.Update(crc32.Checksum(out[:13], castagnoli), castagnoli, payload)
	binary.BigEndian.PutUint32(out[13:], crc)
	return append(out, payload...), nil
}

// IsEnvelope reports whether b starts with the envelope magic.
func IsEnvelope(b []byte) bool { return bytes.HasPrefix(b, EnvelopeMagic) }

// Unwrap checks an envelope and returns the serializer version and the payload (not a
// copy). The envelope must hold exactly one payload.
func Unwrap(b []byte) (version int, payload []byte, err error) {
	if len(b) < EnvelopeHeaderSize {
		return 0, nil, malformed("envelope", "%d bytes cannot hold the %d-byte header", len(b), EnvelopeHeaderSize)
	}
	if !IsEnvelope(b) {
		return 0, nil, malformed("envelope magic", "got %q, want %q", b[:4], EnvelopeMagic)
	}
	if b[4] != EnvelopeVersion {
		return 0, nil, fmt.Errorf("paimon: envelope version %d: %w (supported: [%d])", b[4], ErrUnsupportedVersion, EnvelopeVersion)
	}
	version = int(int32(binary.BigEndian.Uint32(b[5:])))
	n := int64(binary.BigEndian.Uint32(b[9:]))
	if n != int64(len(b)-EnvelopeHeaderSize) {
		return 0, nil, malformed("envelope payload length", "header says %d bytes, envelope holds %d", n, len(b)-EnvelopeHeaderSize)
	}
	payload = b[EnvelopeHeaderSize:]
	want := binary.BigEndian.Uint32(b[13:])
	if got := crc32.Update(crc32.Checksum(b[:13], castagnoli), castagnoli, payload); got != want {
		return 0, nil, malformed("envelope checksum", "CRC32C %08x, header says %08x", got, want)
	}
	if err := CheckVersion(version); err != nil {
		return 0, nil, err
	}
	return version, payload, nil
}

// Open decodes a payload that is either enveloped (its version is then the envelope's;
// a non-zero version that disagrees is an error) or raw (written at version, or at
// DefaultVersion when version is 0).
func Open(b []byte, version int) (int, []CommitMessage, error) {
	if IsEnvelope(b) {
		v, payload, err := Unwrap(b)
		if err != nil {
			return 0, nil, err
		}
		if version != 0 && version != v {
			return 0, nil, fmt.Errorf("paimon: envelope holds serializer version %d, but version %d was asked for", v, version)
		}
		msgs, err := DecodeList(v, payload)
		return v, msgs, err
	}
	if version == 0 {
		version = DefaultVersion
	}
	msgs, err := DecodeList(version, b)
	return version, msgs, err
}
