package delta

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/catalogs/lake"
	dcodec "github.com/flightgw/flightgw/codec/delta"
)

// A Delta table exists when its log version 0 exists, so a staged create
// is honest here: the data files are written under the table's directory
// first (no reader looks at a directory without a _delta_log), and the
// commit is one put-if-absent of version 0 holding the protocol, the
// metadata and the adds. Of two concurrent creates one writes version 0;
// the other gets ErrAlreadyExists and its files are its caller's to
// discard.

var _ catalogs.StagedCreator = (*Provider)(nil)

// StagesCreate implements catalogs.StagedCreator: a create whose table
// assigns what must be the same in its data files and in version 0 at
// random or per commit (column mapping's physical names, row tracking's
// row ids) is not staged: it is created up front, as CreateTable does.
func (p *Provider) StagesCreate(opts map[string]string) bool {
	if m := opts[dcodec.PropColumnMappingMode]; m != "" && m != "none" {
		return false
	}
	return opts[dcodec.PropEnableRowTracking] != "true"
}

// newTable is the table that CreateTable would make of schema and opts at
// time now, before anything is written: its state (version -1, no files)
// and the protocol and metadata actions of its version 0.
func (p *Provider) newTable(ctx context.Context, t catalogs.TableIdent, schema *arrow.Schema, opts map[string]string, now int64) (*tableState, bool, error) {
	v0, err := p.initial(ctx, t, schema, opts, now)
	if err != nil {
		return nil, false, err
	}
	// The schema as a replay of the log would see it, so that the stream
	// conforms batches exactly as it does for an existing table.
	parsed, err := dcodec.ParseSchema(v0.md.SchemaString)
	if err != nil {
		return nil, false, catalogs.Wrap(catalogs.ErrInvalidArgument, err, fmt.Sprintf("table %s", t))
	}
	sc, err := dcodec.ArrowSchema(parsed, dcodec.LogicalNames)
	if err != nil {
		return nil, false, catalogs.Wrap(catalogs.ErrInvalidArgument, err, fmt.Sprintf("table %s: schema", t))
	}
	snap := &dcodec.Snapshot{Version: -1, Protocol: v0.proto, Metadata: v0.md, Schema: parsed, Txns: map[string]dcodec.Txn{}}
	return &tableState{ident: t, dir: v0.dir, snap: snap, schema: sc}, v0.ict, nil
}

// OpenCreateStream implements catalogs.StagedCreator: a stream into the
// directory the table will have, under the schema and partition columns
// it will have.
func (p *Provider) OpenCreateStream(ctx context.Context, t catalogs.TableIdent, schema *arrow.Schema, opts map[string]string, _ catalogs.WriteTxn) (catalogs.WriteStream, error) {
	if !p.StagesCreate(opts) {
		return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: this create is not staged (StagesCreate)", t)
	}
	st, _, err := p.newTable(ctx, t, schema, opts, p.now().UnixMilli())
	if err != nil {
		return nil, err
	}
	s, err := p.streamOn(st)
	if err != nil {
		return nil, err
	}
	// The mark before the first file: the reclaimer finds the files of
	// a create killed before its commit by it (lake.Marks).
	s.keep = &lake.Keeper{Marks: p.marks(), Table: t, ID: lake.NewMarkID()}
	if err := s.keep.Start(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// marks are the catalog's create marks, under the warehouse root.
func (p *Provider) marks() lake.Marks {
	return lake.Marks{Store: p.fs, Root: lake.MarksDir, Local: p.fs.Local}
}

var _ catalogs.CreateKeeper = (*Provider)(nil)

// KeepCreate implements catalogs.CreateKeeper: the receipts' create marks
// are written again, younger.
func (p *Provider) KeepCreate(ctx context.Context, t catalogs.TableIdent, receipts []catalogs.WriteReceipt) error {
	ms, err := decodeReceipts(t, receipts)
	if err != nil {
		return err
	}
	return p.marks().Keep(ctx, t, receiptMarks(ms))
}

// CommitCreate implements catalogs.StagedCreator: version 0, written by
// put-if-absent, holds commitInfo, protocol, metaData, the commit id's txn
// and the adds. It bypasses group commit: there is no table to queue on
// before it.
func (p *Provider) CommitCreate(ctx context.Context, t catalogs.TableIdent, schema *arrow.Schema, opts map[string]string, commitID string, receipts []catalogs.WriteReceipt) (catalogs.CommitOutcome, error) {
	if commitID == "" {
		return catalogs.CommitOutcome{}, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: empty commit id", t)
	}
	if !p.StagesCreate(opts) {
		return catalogs.CommitOutcome{}, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: this create is not staged (StagesCreate)", t)
	}
	now := p.now().UnixMilli()
	st, ict, err := p.newTable(ctx, t, schema, opts, now)
	if err != nil {
		return catalogs.CommitOutcome{}, err
	}
	rs, err := decodeReceipts(t, receipts)
	if err != nil {
		return catalogs.CommitOutcome{}, err
	}
	md := st.snap.Metadata
	proto := st.snap.Protocol
	var adds []dcodec.Action
	for i, r := range rs {
		if r.Schema != md.SchemaString || (len(r.Adds) > 0 && !slices.Equal(r.Partition, md.PartitionColumns)) {
			return catalogs.CommitOutcome{}, catalogs.Errorf(catalogs.ErrInvalidArgument,
				"table %s: receipt %d was not written for the table this create makes", t, i)
		}
		for j := range r.Adds {
			adds = append(adds, dcodec.Action{Add: &r.Adds[j]})
		}
	}
	ci := commitInfo(now, "CREATE TABLE AS SELECT", map[string]any{"mode": "ErrorIfExists", "location": st.dir,
		"partitionBy": partitionBy(md.PartitionColumns)}, false, commitID, nil)
	if ict {
		ci.SetInCommitTimestamp(now)
	}
	acts := append([]dcodec.Action{{CommitInfo: ci}, {Protocol: &proto}, {MetaData: &md},
		{Txn: &dcodec.Txn{AppID: commitID, Version: 0, LastUpdated: &now}}}, adds...)
	b, err := dcodec.EncodeCommit(acts)
	if err != nil {
		return catalogs.CommitOutcome{}, err
	}
	switch err := p.fs.Create(ctx, st.dir+"/_delta_log/"+dcodec.CommitName(0), b); {
	case errors.Is(err, lake.ErrExists):
		// Ours, when an earlier attempt's reply was lost; else the other
		// create won.
		switch rec, ok, ferr := p.FindCommit(context.WithoutCancel(ctx), t, commitID); {
		case ferr != nil:
			// Unknown whose version 0 it is: AlreadyExists would have the
			// caller delete files the table may reference.
			return catalogs.CommitOutcome{}, catalogs.Wrap(catalogs.ErrUnavailable, ferr, fmt.Sprintf("table %s: version 0 exists; whose it is cannot be told", t))
		case ok:
			return rec.Outcome, nil
		}
		return catalogs.CommitOutcome{}, catalogs.Errorf(catalogs.ErrAlreadyExists, "table %s already exists", t)
	case err != nil:
		return catalogs.CommitOutcome{}, lake.MapErr(err, fmt.Sprintf("table %s: write log version 0", t))
	}
	p.marks().Remove(context.WithoutCancel(ctx), t, receiptMarks(rs)...)
	return catalogs.CommitOutcome{SnapshotID: 0, CommittedAt: time.UnixMilli(now).UTC()}, nil
}
