package paimon

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/catalogs/lake"
)

// A table of Paimon's filesystem catalog exists once its schema/schema-0
// does (FileSystemCatalog.tableExists asks SchemaManager for the latest
// schema; a directory without one is no table to Paimon Java, pypaimon or
// this backend), so a staged create is honest here: the data files are
// written under the table's directory first, with the schema the create
// will write as schema 0, and the commit is a put-if-absent of
// schema/schema-0 followed by the first snapshot through the ordinary
// commit loop. Of two concurrent creates one writes schema-0; the other
// gets ErrAlreadyExists and its files are its caller's to discard (a
// create_append's are appended instead when they fit the winner's
// schema: commitFits).
//
// One window remains: a gateway killed between schema-0 and snapshot-1
// (milliseconds) leaves an empty table. A commit that fails there without
// dying drops the table again (dropCreated), unless another writer's
// snapshot landed on it meanwhile.
//
// A JDBC catalog's create is not staged: its table is a row the
// metastore holds beside schema-0, written in a separate step.

var _ catalogs.StagedCreator = (*Provider)(nil)

// StagesCreate implements catalogs.StagedCreator: a create on the
// filesystem catalog is staged; one on a JDBC metastore is made up front.
func (p *Provider) StagesCreate(map[string]string) bool { return p.meta == nil }

// newCreation is the table CreateTable would make of schema and opts, as
// a table state before its schema-0 is written (no snapshot), checked as
// CreateTable checks it, and whether it may be written (checkWritable).
func (p *Provider) newCreation(ctx context.Context, t catalogs.TableIdent, schema *arrow.Schema, opts map[string]string) (*tableState, error) {
	if !p.StagesCreate(opts) {
		return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: this create is not staged (StagesCreate)", t)
	}
	dir, err := p.tableDir(t)
	if err != nil {
		return nil, err
	}
	if ok, err := p.databaseExists(ctx, t.Namespace[0]); err != nil || !ok {
		if err == nil {
			err = catalogs.Errorf(catalogs.ErrNotFound, "table %s: database %q does not exist", t, t.Namespace[0])
		}
		return nil, lake.MapErr(err, fmt.Sprintf("table %s: database", t))
	}
	if err := checkClientOptions(t, opts); err != nil {
		return nil, err
	}
	all := maps.Clone(p.cfg.tableDefaults)
	if all == nil {
		all = map[string]string{}
	}
	maps.Copy(all, opts)
	sc, err := newSchema(t.String(), schema, all, p.now().UnixMilli())
	if err != nil {
		return nil, err
	}
	if err := sc.checkWritable(t); err != nil {
		return nil, err
	}
	return &tableState{ident: t, dir: dir, schema: sc, create: layoutDigest(sc)}, nil
}

// layoutDigest names what a data file written for a table depends on:
// its schema (ids, names, types, keys, partition, options) but not the
// time it was made. A staged create's receipts carry it; they fit a table
// whose schema has the same digest (a create_append that lost the race
// to an equal create appends to the winner's table).
func layoutDigest(s *tableSchema) string {
	c := *s
	c.TimeMillis = 0
	b, err := json.Marshal(&c)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// commitFits refuses receipts a staged create wrote for a table laid out
// otherwise than st's: another writer created the table first, with other
// columns, keys or options, so the create lost and the files are not this
// table's.
func commitFits(st *tableState, metas []receiptMeta) error {
	var digest string
	for i, m := range metas {
		if m.Create == "" {
			continue
		}
		if digest == "" {
			digest = layoutDigest(st.schema)
		}
		if m.Create != digest {
			return catalogs.Errorf(catalogs.ErrAlreadyExists,
				"table %s already exists, created by another writer with another schema or options than this create's (receipt %d)", st.ident, i)
		}
	}
	return nil
}

// OpenCreateStream implements catalogs.StagedCreator: a stream into the
// directory the table will have, under the schema it will have.
func (p *Provider) OpenCreateStream(ctx context.Context, t catalogs.TableIdent, schema *arrow.Schema, opts map[string]string, _ catalogs.WriteTxn) (catalogs.WriteStream, error) {
	st, err := p.newCreation(ctx, t, schema, opts)
	if err != nil {
		return nil, err
	}
	s, err := p.newStream(st)
	if err != nil {
		return nil, err
	}
	// The mark before the first file: the reclaimer finds the files of
	// a create killed before its commit by it (lake.Marks).
	st.keep = &lake.Keeper{Marks: p.marks(), Table: t, ID: lake.NewMarkID()}
	if err := st.keep.Start(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// marks are the catalog's create marks, under the warehouse root (not
// in a database directory: pypaimon lists every directory there as a
// table).
func (p *Provider) marks() lake.Marks {
	return lake.Marks{Store: p.fs, Root: lake.MarksDir, Local: p.fs.Local}
}

var _ catalogs.CreateKeeper = (*Provider)(nil)

// KeepCreate implements catalogs.CreateKeeper: the receipts' create marks
// are written again, younger.
func (p *Provider) KeepCreate(ctx context.Context, t catalogs.TableIdent, receipts []catalogs.WriteReceipt) error {
	_, metas, err := decodeReceipts(t, receipts)
	if err != nil {
		return err
	}
	return p.marks().Keep(ctx, t, receiptMarks(metas))
}

// CommitCreate implements catalogs.StagedCreator: schema/schema-0 by
// put-if-absent, then the receipts as snapshot-1 (or later, when another
// writer appended to the table in between) by the commit loop; an empty
// create writes schema-0 only, as CreateTable does.
func (p *Provider) CommitCreate(ctx context.Context, t catalogs.TableIdent, schema *arrow.Schema, opts map[string]string, commitID string, receipts []catalogs.WriteReceipt) (catalogs.CommitOutcome, error) {
	if commitID == "" {
		return catalogs.CommitOutcome{}, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: empty commit id", t)
	}
	st, err := p.newCreation(ctx, t, schema, opts)
	if err != nil {
		return catalogs.CommitOutcome{}, err
	}
	_, metas, err := decodeReceipts(t, receipts)
	if err != nil {
		return catalogs.CommitOutcome{}, err
	}
	for i, m := range metas {
		if m.Create != st.create {
			return catalogs.CommitOutcome{}, catalogs.Errorf(catalogs.ErrInvalidArgument,
				"table %s: receipt %d was not written for the table this create makes", t, i)
		}
	}
	b, err := json.MarshalIndent(st.schema, "", "  ")
	if err != nil {
		return catalogs.CommitOutcome{}, err
	}
	switch err := p.createLocked(ctx, t, st.dir+"/schema/schema-0", b); {
	case errors.Is(err, lake.ErrExists):
		// Ours, when an earlier call landed with its reply lost; else
		// another create won.
		switch rec, ok, ferr := p.FindCommit(context.WithoutCancel(ctx), t, commitID); {
		case ferr != nil:
			// Unknown whose table it is: AlreadyExists would have the
			// caller delete files the table may reference.
			return catalogs.CommitOutcome{}, catalogs.Wrap(catalogs.ErrUnavailable, ferr,
				fmt.Sprintf("table %s: schema-0 exists; whose it is cannot be told", t))
		case ok:
			return rec.Outcome, nil
		}
		return catalogs.CommitOutcome{}, catalogs.Errorf(catalogs.ErrAlreadyExists, "table %s already exists", t)
	case err != nil:
		return catalogs.CommitOutcome{}, lake.MapErr(err, fmt.Sprintf("table %s: write schema", t))
	}
	// A drop of an earlier failed create of the name may still hold
	// snapshot-1 (it removes its mark after that create's schema-0, which
	// this create has just replaced): its mark is gone in milliseconds.
	p.awaitDrop(ctx, st.dir)
	if len(receipts) == 0 {
		return catalogs.CommitOutcome{CommittedAt: p.now().UTC()}, nil
	}
	out, err := p.commit(ctx, t, commitID, receipts, false)
	if err == nil {
		p.marks().Remove(context.WithoutCancel(ctx), t, receiptMarks(metas)...)
		return out, nil
	}
	// The table exists without the snapshot that was to make it: drop it
	// again unless a snapshot (ours, or another writer's on the table
	// that existed meanwhile) landed, so that the failed create leaves
	// nothing and its retry can create the table.
	dctx := context.WithoutCancel(ctx)
	dropped, derr := p.dropCreated(dctx, t, st.dir)
	switch {
	case derr != nil:
		// Whether the first commit landed is not known: its files must
		// stay.
		p.log.Warn("create: first commit failed and the table could not be dropped", "table", t.String(), "err", err, "drop_err", derr)
		return catalogs.CommitOutcome{}, catalogs.Wrap(catalogs.ErrUnavailable, errors.Join(err, derr),
			fmt.Sprintf("table %s: first commit failed and the table could not be dropped", t))
	case !dropped:
		if rec, ok, ferr := p.FindCommit(dctx, t, commitID); ferr == nil && ok {
			return rec.Outcome, nil
		}
	}
	return catalogs.CommitOutcome{}, err
}

// dropCreated undoes the schema-0 of a create whose first commit failed,
// unless a snapshot-1 exists: it takes snapshot-1's place with
// put-if-absent first (as DropUnwritten does, so that no commit lands on
// the table any more), then removes schema-0 and the mark. Unlike
// DropUnwritten it leaves the data files: its own are its caller's to
// discard, and other staged creates of the same name may be writing
// theirs into the directory.
func (p *Provider) dropCreated(ctx context.Context, t catalogs.TableIdent, dir string) (bool, error) {
	mark := snapshotPath(dir, 1)
	switch err := p.createLocked(ctx, t, mark, unwrittenMark); {
	case errors.Is(err, lake.ErrExists):
		return false, nil
	case err != nil:
		return false, lake.MapErr(err, fmt.Sprintf("table %s: drop failed create", t))
	}
	if err := p.fs.Remove(ctx, dir+"/schema/schema-0"); err != nil {
		return false, lake.MapErr(err, fmt.Sprintf("table %s: drop failed create", t))
	}
	for _, f := range []string{mark, dir + "/schema", dir + "/snapshot"} {
		// A directory that is not empty holds a newer create's files.
		if err := p.fs.Remove(ctx, f); err != nil {
			p.log.Debug("drop failed create: left", "table", t.String(), "path", f, "err", err)
			break
		}
	}
	return true, nil
}

// awaitDrop waits, within the commit loop's total timeout, until
// snapshot-1 of the table directory dir holds no drop's mark
// (unwrittenMark). A mark still there then fails the commit on it, as a
// table being dropped does.
func (p *Provider) awaitDrop(ctx context.Context, dir string) {
	deadline := time.Now().Add(p.cfg.commit.TotalTimeout)
	for wait := 5 * time.Millisecond; ; wait = min(2*wait, 200*time.Millisecond) {
		b, err := p.fs.Read(ctx, snapshotPath(dir, 1))
		if err != nil || !bytes.Equal(b, unwrittenMark) || time.Now().After(deadline) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// dropEmptyCreate removes, on a local warehouse, the directories a
// discarded staged create left empty (its bucket and partition
// directories, then the table's) while no table of the name exists:
// pypaimon's list_tables (2.1) names every directory of a database, table
// or not. A directory that is not empty (another create's files) stays,
// and an object store has no directories.
func (p *Provider) dropEmptyCreate(ctx context.Context, t catalogs.TableIdent, dir string, metas []receiptMeta) {
	if p.s3 != nil {
		return
	}
	if ok, err := p.fs.Exists(ctx, dir+"/schema"); err != nil || ok {
		return
	}
	seen := map[string]bool{}
	var dirs []string
	for _, m := range metas {
		for _, rel := range m.Files {
			for d := path.Dir(rel); d != "." && d != "/" && !seen[d]; d = path.Dir(d) {
				seen[d] = true
				dirs = append(dirs, d)
			}
		}
	}
	// Deepest first, so that a partition's directory is empty once its
	// buckets' are gone.
	slices.SortFunc(dirs, func(a, b string) int { return strings.Count(b, "/") - strings.Count(a, "/") })
	for _, d := range append(dirs, "") {
		f := dir
		if d != "" {
			f += "/" + d
		}
		if err := p.fs.Remove(ctx, f); err != nil {
			p.log.Debug("discard staged create: left", "table", t.String(), "path", f, "err", err)
		}
	}
}

var _ catalogs.CreateScanner = (*Provider)(nil)

// CreateSchema implements catalogs.CreateScanner: the schema of the table
// the create makes, as GetTableSpec will read it.
func (p *Provider) CreateSchema(ctx context.Context, t catalogs.TableIdent, schema *arrow.Schema, opts map[string]string) (*arrow.Schema, error) {
	st, err := p.newCreation(ctx, t, schema, opts)
	if err != nil {
		return nil, err
	}
	return st.spec().Schema, nil
}

// ScanCreate implements catalogs.CreateScanner: Scan's reader over the
// table the create makes, with no snapshot, and the receipts' files
// (merged on read for a primary-key table, as ScanStaged merges them).
func (p *Provider) ScanCreate(ctx context.Context, t catalogs.TableIdent, schema *arrow.Schema, opts map[string]string, req catalogs.ScanRequest, staged []catalogs.WriteReceipt) (*catalogs.ScanResult, error) {
	if req.SnapshotID != nil {
		return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: a table this transaction creates has no snapshot yet", t)
	}
	st, err := p.newCreation(ctx, t, schema, opts)
	if err != nil {
		return nil, err
	}
	msgs, metas, err := decodeReceipts(t, staged)
	if err != nil {
		return nil, err
	}
	for i, m := range metas {
		if m.Create != st.create {
			return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: receipt %d was not written for the table this create makes", t, i)
		}
	}
	var es []entry
	for _, m := range msgs {
		for _, f := range m.Data.NewFiles {
			es = append(es, entry{kind: fileAdd, partition: m.Partition, bucket: m.Bucket, file: f})
		}
	}
	return p.scanEntries(ctx, st, req, es, len(es))
}
