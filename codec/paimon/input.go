package paimon

import "encoding/binary"

// input reads the big-endian framing that Java's DataOutputView writes around the rows.
// Every read is bounds-checked; the error names the field being read.
type input struct {
	buf []byte
	pos int
}

func (in *input) remaining() int { return len(in.buf) - in.pos }

func (in *input) readInt(field string) (int32, error) {
	return in.readIntSuffix(field, "")
}

// readIntSuffix names the field as field+suffix, concatenated only on error so that the
// hot path does not allocate.
func (in *input) readIntSuffix(field, suffix string) (int32, error) {
	if in.remaining() < 4 {
		return 0, malformed(field+suffix, "truncated at byte %d: need 4 bytes, have %d", in.pos, in.remaining())
	}
	v := int32(binary.BigEndian.Uint32(in.buf[in.pos:]))
	in.pos += 4
	return v, nil
}

func (in *input) readBool(field string) (bool, error) {
	if in.remaining() < 1 {
		return false, malformed(field, "truncated at byte %d: need 1 byte", in.pos)
	}
	b := in.buf[in.pos]
	in.pos++
	switch b {
	case 0:
		return false, nil
	case 1:
		return true, nil
	}
	return false, malformed(field, "boolean byte %d at byte %d is neither 0 nor 1", b, in.pos-1)
}

// readBytes returns a length-prefixed slice of the input, without copying.
func (in *input) readBytes(field string) ([]byte, error) {
	n, err := in.readIntSuffix(field, " length")
	if err != nil {
		return nil, err
	}
	if n < 0 {
		return nil, malformed(field, "negative length %d at byte %d", n, in.pos-4)
	}
	if int(n) > in.remaining() {
		return nil, malformed(field, "length %d runs past the input (%d bytes left at byte %d)", n, in.remaining(), in.pos)
	}
	b := in.buf[in.pos : in.pos+int(n) : in.pos+int(n)]
	in.pos += int(n)
	return b, nil
}

// readCount reads a list length and refuses one that the rest of the input cannot hold
// given the smallest encoding of an element, so a hostile count never drives a large
// allocation.
func (in *input) readCount(field string, minElem int) (int, error) {
	n, err := in.readIntSuffix(field, " count")
	if err != nil {
		return 0, err
	}
	if n < 0 {
		return 0, malformed(field, "negative count %d at byte %d", n, in.pos-4)
	}
	if int64(n)*int64(minElem) > int64(in.remaining()) {
		return 0, malformed(field, "count %d needs at least %d bytes, only %d left at byte %d", n, int64(n)*int64(minElem), in.remaining(), in.pos)
	}
	return int(n), nil
}
