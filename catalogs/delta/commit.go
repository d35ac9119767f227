package delta

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/catalogs/lake"
	dcodec "github.com/flightgw/flightgw/codec/delta"
)

// engineInfo is the commitInfo.engineInfo of the gateway's commits.
const engineInfo = "flightgw"

// commitRowsKey is the commitInfo field of a version that holds several
// gateway commits (group commit): each commit id's rows.
const commitRowsKey = "flightgw.commitRows"

// commitInfo builds a commitInfo action; commitID, when set, is recorded
// as flightgw.commitId beside the txn that makes it findable, and rows,
// when the version holds several commits, as flightgw.commitRows.
func commitInfo(ts int64, op string, params map[string]any, blind bool, commitID string, rows map[string]uint64) *dcodec.CommitInfo {
	enc := func(v any) json.RawMessage { b, _ := json.Marshal(v); return b }
	ps := map[string]string{}
	for k, v := range params {
		ps[k] = fmt.Sprint(v) // operationParameters are strings in the protocol's examples
	}
	f := map[string]json.RawMessage{"timestamp": enc(ts), "operation": enc(op), "operationParameters": enc(ps),
		"engineInfo": enc(engineInfo), "clientVersion": enc(engineInfo)}
	if op == "WRITE" {
		f["isBlindAppend"] = enc(blind)
	}
	if commitID != "" {
		f["flightgw.commitId"] = enc(commitID)
	}
	if len(rows) > 1 {
		f[commitRowsKey] = enc(rows)
	}
	return &dcodec.CommitInfo{Fields: f}
}

// Commit commits the receipts as an append under a fresh commit id.
func (p *Provider) Commit(ctx context.Context, t catalogs.TableIdent, receipts []catalogs.WriteReceipt) (catalogs.CommitOutcome, error) {
	return p.commit(ctx, t, "flightgw-"+uuid.NewString(), receipts, false)
}

// CommitOnce commits the receipts as an append whose txn appId is
// commitID: a commit id found in the log's app transactions has landed,
// and is answered as a Duplicate of that version.
func (p *Provider) CommitOnce(ctx context.Context, t catalogs.TableIdent, commitID string, receipts []catalogs.WriteReceipt) (catalogs.CommitOutcome, error) {
	if commitID == "" {
		return catalogs.CommitOutcome{}, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: empty commit id", t)
	}
	return p.commit(ctx, t, commitID, receipts, false)
}

// CommitOverwrite commits the receipts' files as the table's only ones:
// one version that removes every live file and adds them (a WRITE in
// mode Overwrite, not a blind append). A lost race overwrites the
// version that won, so nothing appended meanwhile survives, as if the
// overwrite had come after it. An appendOnly table refuses it.
func (p *Provider) CommitOverwrite(ctx context.Context, t catalogs.TableIdent, commitID string, receipts []catalogs.WriteReceipt) (catalogs.CommitOutcome, error) {
	if commitID == "" {
		commitID = "flightgw-" + uuid.NewString()
	}
	return p.commit(ctx, t, commitID, receipts, true)
}

// FindCommit looks commitID up among the snapshot's app transactions
// (txn appId); the txn's version is the log version that landed it.
func (p *Provider) FindCommit(ctx context.Context, t catalogs.TableIdent, commitID string) (catalogs.CommitRecord, bool, error) {
	st, err := p.load(ctx, t, -1)
	if err != nil {
		return catalogs.CommitRecord{}, false, err
	}
	return p.landed(ctx, st, commitID)
}

// landed finds commitID's commit in st: its version, time and rows, and
// the files its version added (nil when its commit file expired). In a
// version of several gateway commits the rows are commitID's own
// (commitInfo's flightgw.commitRows).
func (p *Provider) landed(ctx context.Context, st *tableState, commitID string) (catalogs.CommitRecord, bool, error) {
	rec, _, ok, err := p.landedFiles(ctx, st, commitID)
	return rec, ok, err
}

func (p *Provider) landedFiles(ctx context.Context, st *tableState, commitID string) (catalogs.CommitRecord, map[string]bool, bool, error) {
	tx, ok := st.snap.Txns[commitID]
	if !ok {
		return catalogs.CommitRecord{}, nil, false, nil
	}
	rec := catalogs.CommitRecord{Outcome: catalogs.CommitOutcome{SnapshotID: tx.Version}}
	if tx.LastUpdated != nil {
		rec.Outcome.CommittedAt = time.UnixMilli(*tx.LastUpdated).UTC()
	}
	name := dcodec.CommitName(tx.Version)
	b, err := storeLog{fs: p.fs, dir: st.dir}.Read(ctx, name)
	if err != nil {
		if lake.IsNotExist(err) {
			return rec, nil, true, nil // the commit file expired; its rows are unknown
		}
		return rec, nil, true, lake.MapErr(err, fmt.Sprintf("table %s: read %s", st.ident, name))
	}
	acts, err := dcodec.ParseCommit(name, b)
	if err != nil {
		return rec, nil, true, p.logErr(st.ident, tx.Version, err)
	}
	files := map[string]bool{}
	var perID map[string]uint64
	for _, a := range acts {
		switch {
		case a.Add != nil:
			if rel, err := dcodec.DecodePath(a.Add.Path); err == nil {
				files[rel] = true
			}
			if n, ok := numRecords(a.Add.Stats); ok {
				rec.RowCount += uint64(n)
			}
		case a.CommitInfo != nil:
			if raw, ok := a.CommitInfo.Fields[commitRowsKey]; ok {
				_ = json.Unmarshal(raw, &perID)
			}
		}
	}
	if n, ok := perID[commitID]; ok {
		rec.RowCount = n
	}
	return rec, files, true, nil
}

func numRecords(stats string) (int64, bool) {
	var s struct {
		NumRecords *int64 `json:"numRecords"`
	}
	if stats == "" || json.Unmarshal([]byte(stats), &s) != nil || s.NumRecords == nil {
		return 0, false
	}
	return *s.NumRecords, true
}

// writableFeatures are the writer features this backend honours when it
// appends: the others codec/delta accepts for writing (invariants and
// checkConstraints in use) need work at write time that is not built
// yet, and are refused.
var writableFeatures = map[string]bool{
	dcodec.FeatureAppendOnly: true, dcodec.FeatureTimestampNtz: true, dcodec.FeatureVacuumProtocolCheck: true,
	dcodec.FeatureDeletionVectors: true, dcodec.FeatureV2Checkpoint: true, dcodec.FeatureDomainMetadata: true,
	// Data files by physical names and field ids, partition values and
	// stats by physical names (openStream), once checkWritable has found
	// every column's physical name (and id).
	dcodec.FeatureColumnMapping: true,
	// Every commit's commitInfo first, with a strictly increasing
	// inCommitTimestamp (round.Attempt).
	dcodec.FeatureInCommitTimestamp: true,
	// baseRowId and defaultRowCommitVersion on every add, the
	// delta.rowTracking high-water mark in the same commit (round.rowIDs).
	dcodec.FeatureRowTracking: true,
	// Honoured by checking they are not in use (checkWritable).
	dcodec.FeatureInvariants: true, dcodec.FeatureCheckConstraints: true,
}

// checkWritable refuses, with FailedPrecondition naming the feature, a
// table this backend cannot append to correctly.
func checkWritable(st *tableState) error {
	pr := &st.snap.Protocol
	if err := dcodec.CheckWrite(pr); err != nil {
		return catalogs.Wrap(catalogs.ErrFailedPrecondition, err, fmt.Sprintf("table %s", st.ident))
	}
	for _, f := range pr.RequiredWriterFeatures() {
		if !writableFeatures[f] {
			return catalogs.Errorf(catalogs.ErrFailedPrecondition, "table %s: writer feature %q is not supported for writing by this backend yet", st.ident, f)
		}
	}
	for k := range st.snap.Metadata.Configuration {
		if strings.HasPrefix(k, "delta.constraints.") {
			return catalogs.Errorf(catalogs.ErrFailedPrecondition, "table %s: check constraint %q (writer feature %q) is not enforced by this backend: writes are refused", st.ident, strings.TrimPrefix(k, "delta.constraints."), dcodec.FeatureCheckConstraints)
		}
	}
	if err := dcodec.CheckColumnMapping(st.snap.Schema, st.snap.Metadata.ColumnMappingMode()); err != nil {
		return catalogs.Errorf(catalogs.ErrFailedPrecondition, "table %s: feature %q: %v: writes are refused", st.ident, dcodec.FeatureColumnMapping, err)
	}
	for _, f := range st.snap.Schema.Fields {
		if _, ok := f.Metadata["delta.invariants"]; ok {
			return catalogs.Errorf(catalogs.ErrFailedPrecondition, "table %s: column %q has an invariant (writer feature %q), which this backend does not enforce: writes are refused", st.ident, f.Name, dcodec.FeatureInvariants)
		}
	}
	return nil
}

// appendOnly reports the table property delta.appendOnly.
func appendOnly(st *tableState) bool {
	return strings.EqualFold(st.snap.Metadata.Configuration["delta.appendOnly"], "true")
}
