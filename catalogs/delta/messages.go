package delta

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/catalogs/lake"
	dcodec "github.com/flightgw/flightgw/codec/delta"
)

// Interfaces of the distributed commit (docs/commit-messages.md).
var (
	_ catalogs.PayloadCodec   = (*Provider)(nil)
	_ catalogs.ReceiptChecker = (*Provider)(nil)
	_ catalogs.CommitMatcher  = (*Provider)(nil)
)

// PayloadKind implements catalogs.PayloadCodec (codec/delta's
// EnvelopeKind).
func (p *Provider) PayloadKind() string { return dcodec.EnvelopeKind }

// EncodePayload writes the receipts' add actions as the lines of a
// commit file ({"add":{...}} each), serializer version
// dcodec.ActionsVersion: what a Spark or Delta Kernel coordinator
// puts in its own commit as they are.
func (p *Provider) EncodePayload(_ context.Context, t catalogs.TableIdent, receipts []catalogs.WriteReceipt) (int, []byte, error) {
	ms, err := decodeReceipts(t, receipts)
	if err != nil {
		return 0, nil, err
	}
	var acts []dcodec.Action
	for _, m := range ms {
		for i := range m.Adds {
			acts = append(acts, dcodec.Action{Add: &m.Adds[i]})
		}
	}
	b, err := dcodec.EncodeCommit(acts)
	if err != nil {
		return 0, nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: encode add actions: %v", t, err)
	}
	return dcodec.ActionsVersion, b, nil
}

// DecodePayload reads add-action lines of any process (a gateway's
// PrepareCommit, a Spark or Kernel writer's adds; every line ending in a
// newline) into one receipt for
// the table as it is now: its schema and partition columns, never the
// payload's claims. Only add actions of new files are taken: no remove,
// metadata or protocol change, no deletion vector, every path a Parquet
// file inside the table (checkDataPath). CheckReceipts checks the rest.
func (p *Provider) DecodePayload(ctx context.Context, t catalogs.TableIdent, version int, payload []byte) ([]catalogs.WriteReceipt, error) {
	if version != dcodec.ActionsVersion {
		return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: delta payload serializer version %d (supported: %d)", t, version, dcodec.ActionsVersion)
	}
	st, err := p.load(ctx, t, -1)
	if err != nil {
		return nil, err
	}
	// Every line ends with a newline, the last too: a payload cut short
	// at a line's end must not pass for a shorter one.
	if len(payload) == 0 || payload[len(payload)-1] != '\n' {
		return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: payload: does not end with a newline (truncated?): a payload is add actions, one JSON line each", t)
	}
	acts, err := dcodec.ParseCommit("payload", payload)
	if err != nil {
		return nil, catalogs.Wrap(catalogs.ErrInvalidArgument, err, fmt.Sprintf("table %s: payload", t))
	}
	if n := bytes.Count(bytes.TrimSpace(payload), []byte("\n")) + 1; n != len(acts) || len(acts) == 0 {
		return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: payload: %d lines, %d of them actions this gateway knows: a payload is add actions only", t, n, len(acts))
	}
	m := receiptMeta{Format: receiptFormat, Table: t.String(), Schema: st.snap.Metadata.SchemaString, Partition: st.snap.Metadata.PartitionColumns}
	var rows, size uint64
	for i, a := range acts {
		if a.Add == nil {
			return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: payload line %d is not an add action (a payload adds new files only)", t, i+1)
		}
		m.Adds = append(m.Adds, *a.Add)
		if n, ok := numRecords(a.Add.Stats); ok && n >= 0 {
			rows += uint64(n)
		}
		if a.Add.Size > 0 {
			size += uint64(a.Add.Size)
		}
	}
	if err := checkAdds(st, m.Adds); err != nil {
		return nil, err
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	return []catalogs.WriteReceipt{{Metadata: b, RowCount: rows, ByteCount: size}}, nil
}

// checkAdds checks adds from another process against the table as it is
// now: each a new file (no deletion vector, no row-tracking fields a
// committer assigns), a Parquet path inside the table, with exactly the
// table's partition columns, each value one that parses as the column's
// type; no path twice.
func checkAdds(st *tableState, adds []dcodec.AddFile) error {
	t := st.ident
	seen := map[string]bool{}
	part := st.snap.Metadata.PartitionColumns
	for i, a := range adds {
		bad := func(format string, args ...any) error {
			return catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: add %d (%s): %s", t, i, a.Path, fmt.Sprintf(format, args...))
		}
		if err := checkDataPath(t, a.Path); err != nil {
			return err
		}
		rel, _ := dcodec.DecodePath(a.Path)
		if seen[rel] {
			return bad("the file is added twice")
		}
		seen[rel] = true
		if a.DeletionVector != nil {
			return bad("a new file carries no deletion vector")
		}
		if a.BaseRowID != nil || a.DefaultRowCommitVersion != nil {
			return bad("baseRowId and defaultRowCommitVersion are the committer's to assign")
		}
		if a.Size < 0 {
			return bad("negative size")
		}
		if len(a.PartitionValues) != len(part) {
			return bad("%d partition values, the table's partition columns are %v", len(a.PartitionValues), part)
		}
		for _, c := range part {
			f := st.snap.Schema.Field(c)
			if f == nil {
				return bad("partition column %q is not in the schema", c)
			}
			key, err := f.PhysicalName() // partitionValues go by physical name
			if err != nil {
				return bad("partition column %q: %v", c, err)
			}
			v, ok := a.PartitionValues[key]
			if !ok {
				return bad("no value for partition column %q (%q)", c, key)
			}
			if _, err := dcodec.ParsePartitionValue(f.Type, v); err != nil {
				return bad("partition column %q: %v", c, err)
			}
		}
	}
	return nil
}

// CheckReceipts checks receipts that come back from another process:
// they are this table's, staged for its current schema and partition
// columns, their adds pass checkAdds (across receipts: no file twice),
// and each file exists under the table's directory.
func (p *Provider) CheckReceipts(ctx context.Context, t catalogs.TableIdent, receipts []catalogs.WriteReceipt) error {
	ms, err := decodeReceipts(t, receipts)
	if err != nil {
		return err
	}
	st, err := p.load(ctx, t, -1)
	if err != nil {
		return err
	}
	var all []dcodec.AddFile
	for i, m := range ms {
		if m.Schema != st.snap.Metadata.SchemaString {
			return catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: receipt %d was staged for another schema of the table", t, i)
		}
		if len(m.Adds) > 0 && !slices.Equal(m.Partition, st.snap.Metadata.PartitionColumns) {
			return catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: receipt %d was staged for partition columns %v, the table's are %v", t, i, m.Partition, st.snap.Metadata.PartitionColumns)
		}
		all = append(all, m.Adds...)
	}
	if err := checkAdds(st, all); err != nil {
		return err
	}
	for _, a := range all {
		rel, _ := dcodec.DecodePath(a.Path)
		ok, err := p.fs.Exists(ctx, st.dir+"/"+rel)
		if err != nil {
			return lake.MapErr(err, fmt.Sprintf("table %s: data file %s", t, rel))
		}
		if !ok {
			return catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: data file %s does not exist under the table's location (aborted, reclaimed or never written)", t, rel)
		}
	}
	return nil
}

// CheckUnreferenced refuses receipts any of whose files the table
// references: a live file, or a removed one still in the log's state
// (older versions read it). Deleting it would break those versions;
// committing it again would add its rows twice.
func (p *Provider) CheckUnreferenced(ctx context.Context, t catalogs.TableIdent, receipts []catalogs.WriteReceipt) error {
	ms, err := decodeReceipts(t, receipts)
	if err != nil {
		return err
	}
	st, err := p.load(ctx, t, -1)
	if err != nil {
		return err
	}
	refs := map[string]bool{}
	for _, f := range st.snap.Files {
		if rel, err := dcodec.DecodePath(f.Path); err == nil {
			refs[rel] = true
		}
	}
	for _, r := range st.snap.Tombstones {
		if rel, err := dcodec.DecodePath(r.Path); err == nil {
			refs[rel] = true
		}
	}
	for _, m := range ms {
		for _, a := range m.Adds {
			if rel, _ := dcodec.DecodePath(a.Path); refs[rel] {
				return catalogs.Errorf(catalogs.ErrFailedPrecondition, "table %s: file %s is referenced by a version of the table (it was committed)", t, rel)
			}
		}
	}
	return nil
}

// MatchCommit looks commitID up among the app transactions and tells
// whether its version added exactly the receipts' files (in a version
// that holds several commits' txns, the receipts' files are among its
// adds). A commit whose file has expired cannot be compared: not same.
func (p *Provider) MatchCommit(ctx context.Context, t catalogs.TableIdent, commitID string, receipts []catalogs.WriteReceipt) (catalogs.CommitRecord, bool, bool, error) {
	ms, err := decodeReceipts(t, receipts)
	if err != nil {
		return catalogs.CommitRecord{}, false, false, err
	}
	st, err := p.load(ctx, t, -1)
	if err != nil {
		return catalogs.CommitRecord{}, false, false, err
	}
	rec, added, ok, err := p.landedFiles(ctx, st, commitID)
	if err != nil || !ok || added == nil {
		return rec, ok, false, err
	}
	// A version holding other commits' txns (group commit) may add more
	// files than these receipts'.
	txns := 0
	for _, tx := range st.snap.Txns {
		if tx.Version == rec.Outcome.SnapshotID {
			txns++
		}
	}
	want := map[string]bool{}
	for _, m := range ms {
		for _, a := range m.Adds {
			rel, _ := dcodec.DecodePath(a.Path)
			if !added[rel] {
				return rec, true, false, nil
			}
			want[rel] = true
		}
	}
	return rec, true, txns > 1 || len(want) == len(added), nil
}
