package iceberg

import (
	"context"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/codec/envelope"
)

// payloadKind names Iceberg's commit-message payloads in the envelope.
const payloadKind = "iceberg"

var _ catalogs.PayloadCodec = (*Provider)(nil)

// PayloadKind implements catalogs.PayloadCodec.
func (p *Provider) PayloadKind() string { return payloadKind }

// EncodePayload implements catalogs.PayloadCodec: no other engine reads
// Iceberg's staged files as commit messages, so the payload is the
// receipts themselves (envelope.EncodeReceipts), whose metadata holds the
// staged DataFiles in iceberg-go's Avro encoding.
func (p *Provider) EncodePayload(_ context.Context, t catalogs.TableIdent, receipts []catalogs.WriteReceipt) (int, []byte, error) {
	rs := make([]envelope.Receipt, len(receipts))
	for i, r := range receipts {
		rs[i] = envelope.Receipt{Metadata: r.Metadata, RowCount: r.RowCount, ByteCount: r.ByteCount}
	}
	b, err := envelope.EncodeReceipts(rs)
	if err != nil {
		return 0, nil, catalogs.Wrap(catalogs.ErrInvalidArgument, err, "table "+t.String()+": encode receipts")
	}
	return envelope.ReceiptsVersion, b, nil
}

// DecodePayload implements catalogs.PayloadCodec; CheckReceipts then
// checks what the receipts claim against the table.
func (p *Provider) DecodePayload(_ context.Context, t catalogs.TableIdent, version int, payload []byte) ([]catalogs.WriteReceipt, error) {
	if version != envelope.ReceiptsVersion {
		return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: iceberg serializer version %d (supported: [%d])", t, version, envelope.ReceiptsVersion)
	}
	rs, err := envelope.DecodeReceipts(payload)
	if err != nil {
		return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: %v", t, err)
	}
	out := make([]catalogs.WriteReceipt, len(rs))
	for i, r := range rs {
		out[i] = catalogs.WriteReceipt{Metadata: r.Metadata, RowCount: r.RowCount, ByteCount: r.ByteCount}
	}
	return out, nil
}
