package catalogtest_test

import (
	"bytes"
	"context"
	"encoding/json"

	"github.com/flightgw/flightgw/catalogs"
)

// The double's distributed-commit capabilities: its receipts name staged
// batches (or streams of a backend transaction) of one table, and its
// payload is a JSON object naming the table and listing the receipts.
var _ interface {
	catalogs.ReceiptChecker
	catalogs.PayloadCodec
} = (*mem)(nil)

// memPayloadVersion is the serializer version of the double's payload.
const memPayloadVersion = 1

// memPayload is the double's payload.
type memPayload struct {
	Table    string                  `json:"table"`
	Receipts []catalogs.WriteReceipt `json:"receipts"`
}

// CheckReceipts implements catalogs.ReceiptChecker: every receipt names a
// batch staged for t, or a stream of one of t's backend transactions.
func (m *mem) CheckReceipts(_ context.Context, t catalogs.TableIdent, rs []catalogs.WriteReceipt) error {
	mrs, err := parse(t, rs)
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	tbl, err := m.table(t)
	if err != nil {
		return err
	}
	named := map[string]bool{}
	for i, r := range mrs {
		if named[string(rs[i].Metadata)] {
			return catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: receipt %d is named twice", t, i)
		}
		named[string(rs[i].Metadata)] = true
		if r.Txn != "" {
			if x, ok := m.txns[t.Key()+"\x00"+r.Txn]; !ok || x.table != tbl {
				return catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: receipt %d names no backend transaction of the table", t, i)
			}
			continue
		}
		s, ok := m.staged[r.Mem]
		if !ok && m.flaw == "receipts-after-discard" {
			continue
		}
		if !ok {
			return catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: receipt %d: staged batch %s does not exist", t, i, r.Mem)
		}
		if s.table != tbl && m.flaw != "receipts-any-table" {
			return catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: receipt %d was staged for table %s", t, i, s.table.ident)
		}
	}
	return nil
}

// CheckUnreferenced implements catalogs.ReceiptChecker.
func (m *mem) CheckUnreferenced(_ context.Context, t catalogs.TableIdent, rs []catalogs.WriteReceipt) error {
	if _, err := parse(t, rs); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	tbl, err := m.table(t)
	if err != nil || m.flaw == "refs-none" {
		return err
	}
	for i, r := range rs {
		if tbl.referenced[string(r.Metadata)] {
			return catalogs.Errorf(catalogs.ErrFailedPrecondition, "table %s: receipt %d was committed", t, i)
		}
	}
	return nil
}

// PayloadKind implements catalogs.PayloadCodec.
func (m *mem) PayloadKind() string { return "mem" }

// EncodePayload implements catalogs.PayloadCodec.
func (m *mem) EncodePayload(_ context.Context, t catalogs.TableIdent, rs []catalogs.WriteReceipt) (int, []byte, error) {
	if _, err := parse(t, rs); err != nil {
		return 0, nil, err
	}
	if m.flaw == "payload-drops-receipt" && len(rs) > 1 {
		rs = rs[:1]
	}
	b, err := json.Marshal(memPayload{Table: t.String(), Receipts: rs})
	if err != nil {
		return 0, nil, catalogs.Wrap(catalogs.ErrInvalidArgument, err, "table "+t.String()+": payload")
	}
	return memPayloadVersion, b, nil
}

// DecodePayload implements catalogs.PayloadCodec.
func (m *mem) DecodePayload(_ context.Context, t catalogs.TableIdent, version int, payload []byte) ([]catalogs.WriteReceipt, error) {
	if version != memPayloadVersion {
		return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: payload version %d, want %d", t, version, memPayloadVersion)
	}
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.DisallowUnknownFields()
	var p memPayload
	if err := dec.Decode(&p); err != nil || dec.More() {
		if m.flaw == "payload-truncated-ok" {
			return nil, nil
		}
		return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: payload does not decode: %v", t, err)
	}
	if p.Table == t.String() {
		return p.Receipts, nil
	}
	if m.flaw != "payload-trusts-table" {
		return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: payload of table %s", t, p.Table)
	}
	// The flaw: the batches the payload names are staged again for t, as a
	// codec taking file paths from the payload would publish another
	// table's files.
	mrs, err := parse(t, p.Receipts)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	tbl, err := m.table(t)
	if err != nil {
		return nil, err
	}
	var out []catalogs.WriteReceipt
	for _, r := range mrs {
		if s, ok := m.staged[r.Mem]; ok {
			id := m.nextID("batch")
			m.staged[id] = &memStaged{table: tbl, batch: s.batch}
			out = append(out, receipt(memReceipt{Mem: id}, s.batch))
		}
	}
	return out, nil
}
