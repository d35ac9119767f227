package delta

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/catalogs/lake"
	dcodec "github.com/flightgw/flightgw/codec/delta"
)

// engineInfo is the commitInfo.engineInfo of the gateway's commits.
const engineInfo = "flightgw"

// commitInfo builds a commitInfo action; commitID, when set, is recorded
// as flightgw.commitId beside the txn that makes it findable.
func commitInfo(ts int64, op string, params map[string]any, blind bool, commitID string) *dcodec.CommitInfo {
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

// landed finds commitID's commit in st: its version, time and rows.
func (p *Provider) landed(ctx context.Context, st *tableState, commitID string) (catalogs.CommitRecord, bool, error) {
	tx, ok := st.snap.Txns[commitID]
	if !ok {
		return catalogs.CommitRecord{}, false, nil
	}
	rec := catalogs.CommitRecord{Outcome: catalogs.CommitOutcome{SnapshotID: tx.Version}}
	if tx.LastUpdated != nil {
		rec.Outcome.CommittedAt = time.UnixMilli(*tx.LastUpdated).UTC()
	}
	name := dcodec.CommitName(tx.Version)
	b, err := storeLog{p.fs, st.dir}.Read(ctx, name)
	if err != nil {
		if lake.IsNotExist(err) {
			return rec, true, nil // the commit file expired; its rows are unknown
		}
		return rec, true, lake.MapErr(err, fmt.Sprintf("table %s: read %s", st.ident, name))
	}
	acts, err := dcodec.ParseCommit(name, b)
	if err != nil {
		return rec, true, p.logErr(st.ident, tx.Version, err)
	}
	for _, a := range acts {
		if a.Add != nil {
			if n, ok := numRecords(a.Add.Stats); ok {
				rec.RowCount += uint64(n)
			}
		}
	}
	return rec, true, nil
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
// appends: the others codec/delta accepts for writing (columnMapping,
// rowTracking, inCommitTimestamp, invariants and checkConstraints in
// use) need work at write time that is not built yet, and are refused.
var writableFeatures = map[string]bool{
	dcodec.FeatureAppendOnly: true, dcodec.FeatureTimestampNtz: true, dcodec.FeatureVacuumProtocolCheck: true,
	dcodec.FeatureDeletionVectors: true, dcodec.FeatureV2Checkpoint: true, dcodec.FeatureDomainMetadata: true,
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
	if m := st.snap.Metadata.Configuration["delta.columnMapping.mode"]; m != "" && m != "none" {
		return catalogs.Errorf(catalogs.ErrFailedPrecondition, "table %s: column mapping mode %q (feature %q) is not supported for writing by this backend yet", st.ident, m, dcodec.FeatureColumnMapping)
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

// committer is one append's side of lake.Run.
type committer struct {
	p         *Provider
	t         catalogs.TableIdent
	commitID  string
	adds      []dcodec.AddFile
	schema    string // the schemaString the files were written for
	partition []string
	overwrite bool
	rows      uint64
	out       catalogs.CommitOutcome
	// checkpoint: the version landed is due a checkpoint.
	checkpoint bool
}

func (c *committer) Load(ctx context.Context) (*tableState, error) { return c.p.load(ctx, c.t, -1) }

func (c *committer) Landed(ctx context.Context, st *tableState) (bool, error) {
	rec, ok, err := c.p.landed(ctx, st, c.commitID)
	if ok && err == nil {
		c.out = rec.Outcome
		c.out.Duplicate = true
	}
	return ok, err
}

// Claimed: the gateway names every data file with a fresh UUID, so a
// live file of ours means another commit id landed the same payload.
func (c *committer) Claimed(_ context.Context, _, st *tableState, _ bool) (string, int64, error) {
	if len(c.adds) == 0 {
		return "", 0, nil
	}
	mine := make(map[string]bool, len(c.adds))
	for _, a := range c.adds {
		mine[a.Path] = true
	}
	for _, f := range st.snap.Files {
		if mine[f.Path] {
			return f.Path, 0, nil
		}
	}
	return "", 0, nil
}

// Attempt writes the next log version: commitInfo first, the txn, the
// adds. Blind appends never conflict with each other: a lost race only
// needs the next version, unless the winner changed the schema or the
// protocol under the files.
func (c *committer) Attempt(ctx context.Context, st *tableState) error {
	if err := checkWritable(st); err != nil {
		return err
	}
	if c.schema != "" && st.snap.Metadata.SchemaString != c.schema {
		return catalogs.Errorf(catalogs.ErrFailedPrecondition, "table %s: the schema changed since the files of commit %s were written: nothing committed", c.t, c.commitID)
	}
	if len(c.adds) > 0 && !slices.Equal(st.snap.Metadata.PartitionColumns, c.partition) {
		return catalogs.Errorf(catalogs.ErrFailedPrecondition, "table %s: the partition columns changed since the files of commit %s were written (%v, now %v): nothing committed", c.t, c.commitID, c.partition, st.snap.Metadata.PartitionColumns)
	}
	v := st.snap.Version + 1
	now := c.p.now().UnixMilli()
	mode := "Append"
	if c.overwrite {
		if appendOnly(st) {
			return catalogs.Errorf(catalogs.ErrFailedPrecondition, "table %s: delta.appendOnly is true (feature %q): an overwrite would remove files", c.t, dcodec.FeatureAppendOnly)
		}
		mode = "Overwrite"
	}
	acts := []dcodec.Action{
		{CommitInfo: commitInfo(now, "WRITE", map[string]any{"mode": mode}, !c.overwrite, c.commitID)},
		{Txn: &dcodec.Txn{AppID: c.commitID, Version: v, LastUpdated: &now}},
	}
	if c.overwrite {
		for _, f := range st.snap.Files {
			size := f.Size
			ext := true
			acts = append(acts, dcodec.Action{Remove: &dcodec.RemoveFile{Path: f.Path, DeletionTimestamp: &now, DataChange: true,
				ExtendedFileMetadata: &ext, PartitionValues: f.PartitionValues, Size: &size, Stats: f.Stats,
				DeletionVector: f.DeletionVector, BaseRowID: f.BaseRowID, DefaultRowCommitVersion: f.DefaultRowCommitVersion}})
		}
	}
	for i := range c.adds {
		a := c.adds[i]
		acts = append(acts, dcodec.Action{Add: &a})
	}
	b, err := dcodec.EncodeCommit(acts)
	if err != nil {
		return err
	}
	switch err := c.p.fs.Create(ctx, st.dir+"/_delta_log/"+dcodec.CommitName(v), b); {
	case errors.Is(err, lake.ErrExists):
		return fmt.Errorf("table %s: version %d: %w", c.t, v, lake.ErrLost)
	case err != nil:
		return lake.MapErr(err, fmt.Sprintf("table %s: write log version %d", c.t, v))
	}
	c.out = catalogs.CommitOutcome{SnapshotID: v, CommittedAt: time.UnixMilli(now).UTC()}
	c.checkpoint = checkpointDue(&st.snap.Metadata, v)
	return nil
}

// Recover re-reads the log after a failed write: the commit landed when
// its txn is there (an S3 reply lost after the object was stored).
func (c *committer) Recover(ctx context.Context, _ error) bool {
	st, err := c.Load(ctx)
	if err != nil {
		return false
	}
	done, err := c.Landed(ctx, st)
	if done && err == nil {
		c.out.Duplicate = false
	}
	return done && err == nil
}

func (p *Provider) commit(ctx context.Context, t catalogs.TableIdent, commitID string, receipts []catalogs.WriteReceipt, overwrite bool) (catalogs.CommitOutcome, error) {
	if _, err := p.tableDir(t); err != nil {
		return catalogs.CommitOutcome{}, err
	}
	rs, err := decodeReceipts(t, receipts)
	if err != nil {
		return catalogs.CommitOutcome{}, err
	}
	c := &committer{p: p, t: t, commitID: commitID, overwrite: overwrite}
	for _, r := range rs {
		if c.schema != "" && r.Schema != c.schema {
			return catalogs.CommitOutcome{}, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: the receipts were written for different schemas", t)
		}
		c.schema, c.partition = r.Schema, r.Partition
		for _, a := range r.Adds {
			if err := checkDataPath(t, a.Path); err != nil {
				return catalogs.CommitOutcome{}, err
			}
			c.adds = append(c.adds, a)
		}
	}
	retried, err := lake.Run[*tableState](ctx, p.cfg.commit, "table "+t.String(), commitID, c)
	if err != nil {
		return catalogs.CommitOutcome{}, err
	}
	c.out.Retried = retried
	if c.checkpoint && !c.out.Duplicate {
		p.checkpointAfter(ctx, t, c.out.SnapshotID)
	}
	return c.out, nil
}
