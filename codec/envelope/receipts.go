package envelope

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// ReceiptsVersion is the serializer version of the receipts payload.
const ReceiptsVersion = 1

// receiptsFormat names the receipts payload's JSON.
const receiptsFormat = "flightgw.receipts/v1"

// Receipt is one write receipt as it travels: the backend's own metadata
// (whatever its catalogs.WriteReceipt holds) and its counts. The receipts
// payload is a format a backend's catalogs.PayloadCodec may adopt as its
// own when no other engine reads its payloads.
type Receipt struct {
	Metadata  json.RawMessage `json:"metadata"`
	RowCount  uint64          `json:"row_count"`
	ByteCount uint64          `json:"byte_count"`
}

type receiptList struct {
	Format   string    `json:"format"`
	Receipts []Receipt `json:"receipts"`
}

// EncodeReceipts writes the receipts payload: a JSON object naming its
// format and listing the receipts.
func EncodeReceipts(rs []Receipt) ([]byte, error) {
	if rs == nil {
		rs = []Receipt{}
	}
	return json.Marshal(receiptList{Format: receiptsFormat, Receipts: rs})
}

// DecodeReceipts reads a receipts payload; anything else than exactly one
// such object, or a receipt without metadata, is ErrMalformed. The
// metadata is not interpreted here: the backend checks it against the
// table it is committed to.
func DecodeReceipts(b []byte) ([]Receipt, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var l receiptList
	if err := dec.Decode(&l); err != nil {
		return nil, fmt.Errorf("envelope: receipts payload: %v: %w", err, ErrMalformed)
	}
	if dec.More() {
		return nil, fmt.Errorf("envelope: receipts payload: trailing data: %w", ErrMalformed)
	}
	if l.Format != receiptsFormat {
		return nil, fmt.Errorf("envelope: receipts payload: format %q, want %q: %w", l.Format, receiptsFormat, ErrMalformed)
	}
	for i, r := range l.Receipts {
		if len(r.Metadata) == 0 || bytes.Equal(r.Metadata, []byte("null")) {
			return nil, fmt.Errorf("envelope: receipts payload: receipt %d has no metadata: %w", i, ErrMalformed)
		}
	}
	return l.Receipts, nil
}

// IsMalformed reports whether err is about bytes that are not a valid
// envelope or payload (any of this package's errors).
func IsMalformed(err error) bool {
	return errors.Is(err, ErrMalformed) || errors.Is(err, ErrSignature) || errors.Is(err, ErrUnsupportedVersion)
}
