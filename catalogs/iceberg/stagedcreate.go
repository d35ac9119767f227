package iceberg

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	ice "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/catalogs/lake"
)

// A SQL catalog's table exists once its row in iceberg_tables does, so a
// staged create is honest here: the data files are written under the
// location the table will have (no reader looks there before a row
// names it), and the commit is one CommitTable on the missing table with
// AssertCreate, the updates that create it and those of its first
// snapshot, which iceberg-go's SQL catalog applies by inserting the row in
// a serializable transaction. Of two concurrent creates one inserts the
// row; the other gets ErrAlreadyExists and its files are its caller's to
// discard. A REST catalog's create is not staged (StagesCreate false):
// iceberg-go's stage-create runs both of its phases in one CreateTable
// call, and the location the server gives the table is known only then.

var _ catalogs.StagedCreator = (*Provider)(nil)

// StagesCreate implements catalogs.StagedCreator: a create on a SQL
// catalog is staged, but for format version 1 (the catalog builds a
// created table on a version 2 base, which cannot go down to 1): that
// one, and every create on a REST catalog, is made up front.
func (p *Provider) StagesCreate(opts map[string]string) bool {
	return p.db != nil && createdVersion(opts) >= 2
}

// creation is the table a staged create makes, before it exists.
type creation struct {
	t catalogs.TableIdent
	// tbl is the table as the catalog will hold it once created: no
	// metadata location, no snapshot.
	tbl *table.Table
	// updates create it from nothing, as CommitTable applies them after
	// AssertCreate.
	updates []table.Update
	// digest names its layout (layoutDigest): the receipts of its
	// stream carry it.
	digest string
}

// newCreation is the table CreateTable would make of schema and opts,
// with the table uuid id, checked as CreateTable checks it (the
// namespace exists, the location lies in the warehouse, every type and
// option applies, the encryption can be written).
func (p *Provider) newCreation(ctx context.Context, t catalogs.TableIdent, schema *arrow.Schema, opts map[string]string, id uuid.UUID) (*creation, error) {
	ident, err := p.ident(t)
	if err != nil {
		return nil, err
	}
	sc, err := icebergSchema(schema, createdVersion(opts))
	if err != nil {
		return nil, fmt.Errorf("table %s: %w", t, err)
	}
	to, err := parseTableOptions(t, sc, opts)
	if err != nil {
		return nil, err
	}
	loc, err := p.newLocation(ctx, t)
	if err != nil {
		return nil, err
	}
	if _, err := p.checkLocation(t, loc); err != nil {
		return nil, err
	}
	if _, err := encryptionFor(t.String(), to.props, nil, loc); err != nil {
		return nil, err
	}
	order := table.SortOrder{} // as CreateTable leaves it without a sort option
	if to.order.Len() > 0 {
		order = to.order
	}
	var meta table.Metadata
	var updates []table.Update
	err = protect(catalogs.ErrInvalidArgument, "create table", func() error {
		first, err := table.NewMetadataWithUUID(sc, to.spec, order, loc, to.props, id)
		if err != nil {
			return err
		}
		// The metadata the catalog will build, from nothing, as its
		// CommitTable does: the files and the snapshot are written
		// against exactly that.
		empty, err := table.NewMetadata(ice.NewSchema(0), nil, table.UnsortedSortOrder, "", nil)
		if err != nil {
			return err
		}
		updates = creationUpdates(first)
		if meta, err = table.UpdateTableMetadata(empty, updates, ""); err != nil {
			return err
		}
		// The nothing it starts from has an empty schema 0, which no file
		// was ever written with: removed, the table has one schema, as
		// CreateTable's (a reader takes more for an evolved table).
		var stale []int
		for _, sc := range meta.Schemas() {
			if sc.ID != meta.CurrentSchema().ID {
				stale = append(stale, sc.ID)
			}
		}
		if len(stale) > 0 {
			updates = append(updates, table.NewRemoveSchemasUpdate(stale))
			meta, err = table.UpdateTableMetadata(empty, updates, "")
		}
		return err
	})
	if err != nil {
		return nil, mapErr(err, fmt.Sprintf("table %s: create", t))
	}
	props := maps.Clone(p.cfg.passthrough)
	if props == nil {
		props = map[string]string{}
	}
	maps.Copy(props, meta.Properties())
	tbl := table.New(ident, meta, "", iceio.LoadFSFunc(props, loc), nil)
	if _, err := p.checkTable(t, tbl); err != nil {
		return nil, err
	}
	return &creation{t: t, tbl: tbl, updates: updates, digest: layoutDigest(meta)}, nil
}

// creationUpdates are the updates that make meta from nothing, as
// iceberg-go's REST catalog sends them for the second phase of a staged
// create (and Iceberg Java's createChanges).
func creationUpdates(meta table.Metadata) []table.Update {
	ups := []table.Update{
		table.NewAssignUUIDUpdate(meta.TableUUID()),
		table.NewUpgradeFormatVersionUpdate(meta.Version()),
		table.NewAddSchemaUpdate(meta.CurrentSchema()),
		table.NewSetCurrentSchemaUpdate(-1),
	}
	spec := meta.PartitionSpec()
	ups = append(ups, table.NewAddPartitionSpecUpdate(&spec, true), table.NewSetDefaultSpecUpdate(-1))
	order := meta.SortOrder()
	ups = append(ups, table.NewAddSortOrderUpdate(&order), table.NewSetDefaultSortOrderUpdate(-1),
		table.NewSetLocationUpdate(meta.Location()))
	if props := meta.Properties(); len(props) > 0 {
		ups = append(ups, table.NewSetPropertiesUpdate(props))
	}
	return ups
}

// layoutDigest names what a data file written for a table depends on:
// its current schema (with ids), default partition spec, format version
// and location, not its uuid. A staged create's receipts carry it; they
// fit a table of another uuid with the same digest (a create_append that
// lost the race to an equal create appends to the winner's table).
func layoutDigest(meta table.Metadata) string {
	b, err := json.Marshal(struct {
		Schema   *ice.Schema       `json:"schema"`
		Spec     ice.PartitionSpec `json:"spec"`
		Version  int               `json:"version"`
		Location string            `json:"location"`
	}{meta.CurrentSchema(), meta.PartitionSpec(), meta.Version(), meta.Location()})
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// fits reports whether the receipt rm was written for meta's table:
// by its uuid, or for a staged create of the same layout.
func fits(rm receiptMeta, meta table.Metadata) bool {
	if rm.TableUUID == meta.TableUUID().String() {
		return true
	}
	return rm.Create != "" && rm.Replace == nil && rm.Create == layoutDigest(meta)
}

// createUUID is the uuid of the table a create makes under key (the
// commit id of its unit of work): every stream of one transaction's
// create writes for the same table; an empty create repeated after a lost
// reply knows the table for its own.
func createUUID(t catalogs.TableIdent, key string) uuid.UUID {
	if key == "" {
		return uuid.New()
	}
	return uuid.NewSHA1(uuid.NameSpaceURL, []byte("flightgw:create:"+t.Key()+":"+key))
}

// OpenCreateStream implements catalogs.StagedCreator: a stream into the
// location the table will have, under the schema and partition spec it
// will have; the table uuid follows from the unit of work's commit id
// (createUUID), and the receipts carry it to CommitCreate.
func (p *Provider) OpenCreateStream(ctx context.Context, t catalogs.TableIdent, schema *arrow.Schema, opts map[string]string, w catalogs.WriteTxn) (catalogs.WriteStream, error) {
	if !p.StagesCreate(opts) {
		return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: this create is not staged (StagesCreate)", t)
	}
	if p.storage.State() == catalogs.BreakerOpen {
		return nil, catalogs.Errorf(catalogs.ErrUnavailable, "table %s: object storage unavailable (circuit open)", t)
	}
	c, err := p.newCreation(ctx, t, schema, opts, createUUID(t, w.CommitID))
	if err != nil {
		return nil, err
	}
	// The mark before the first file: the reclaimer finds the files of
	// a create killed before its commit by it (lake.Marks).
	var keep *lake.Keeper
	// Without the call's cancel: the stream refreshes the mark later.
	if m, ok, err := p.marks(context.WithoutCancel(ctx)); err != nil {
		return nil, err
	} else if ok {
		keep = &lake.Keeper{Marks: m, Table: t, ID: lake.NewMarkID()}
		if err := keep.Start(ctx); err != nil {
			return nil, err
		}
	}
	ws, err := p.openStream(ctx, t, c.tbl, nil)
	if err != nil {
		if keep != nil {
			keep.Marks.Remove(context.WithoutCancel(ctx), t, keep.ID)
		}
		return nil, err
	}
	s := ws.(*stream)
	s.create, s.keep = c.digest, keep
	return s, nil
}

// CommitCreate implements catalogs.StagedCreator: one CommitTable with
// AssertCreate, the creation's updates and (with receipts) the first
// snapshot's, recording commitID in it. It bypasses group commit: there
// is no table to queue on before it. A busy catalog database is retried
// within commit.retry.*; a create that finds the table made by another
// is ErrAlreadyExists, one that finds its own (the table uuid its
// receipts carry, or that commitID gives an empty create) returns it.
func (p *Provider) CommitCreate(ctx context.Context, t catalogs.TableIdent, schema *arrow.Schema, opts map[string]string, commitID string, receipts []catalogs.WriteReceipt) (catalogs.CommitOutcome, error) {
	if commitID == "" {
		return catalogs.CommitOutcome{}, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: empty commit id", t)
	}
	if !p.StagesCreate(opts) {
		return catalogs.CommitOutcome{}, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: this create is not staged (StagesCreate)", t)
	}
	rms, err := parseReceipts(t, receipts)
	if err != nil {
		return catalogs.CommitOutcome{}, err
	}
	// The receipts' uuid, which they must share; an empty create's
	// follows from its commit id.
	id := createUUID(t, commitID)
	if len(rms) > 0 {
		if id, err = uuid.Parse(rms[0].TableUUID); err != nil {
			return catalogs.CommitOutcome{}, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: receipt 0: table uuid %q: %v", t, rms[0].TableUUID, err)
		}
	}
	c, err := p.newCreation(ctx, t, schema, opts, id)
	if err != nil {
		return catalogs.CommitOutcome{}, err
	}
	for i, rm := range rms {
		if rm.Create != c.digest || rm.Replace != nil || rm.TableUUID != id.String() {
			return catalogs.CommitOutcome{}, catalogs.Errorf(catalogs.ErrInvalidArgument,
				"table %s: receipt %d was not written for the table this create makes", t, i)
		}
	}
	files, err := dataFiles(t, c.tbl.Metadata(), rms)
	if err != nil {
		return catalogs.CommitOutcome{}, err
	}
	r := &createRound{p: p, t: t, c: c, commitID: commitID, files: files}
	retried, err := lake.Run(ctx, p.cfg.commit, "table "+t.String(), commitID, r)
	switch {
	case r.taken:
		return catalogs.CommitOutcome{}, catalogs.Errorf(catalogs.ErrAlreadyExists, "table %s already exists", t)
	case err != nil:
		return catalogs.CommitOutcome{}, mapErr(err, fmt.Sprintf("table %s: create", t))
	}
	r.out.Retried = retried
	p.dropMarks(context.WithoutCancel(ctx), t, rms)
	return r.out, nil
}

// createRound is a staged create's side of the floor's commit loop
// (lake.Committer): the table it loads is nil while it does not exist.
type createRound struct {
	p        *Provider
	t        catalogs.TableIdent
	c        *creation
	commitID string
	files    []ice.DataFile
	out      catalogs.CommitOutcome
	// taken is set when the table exists and is another's.
	taken bool
}

func (r *createRound) Load(ctx context.Context) (*table.Table, error) {
	tbl, err := r.p.load(ctx, r.t)
	if errors.Is(err, catalogs.ErrNotFound) {
		if _, nsErr := r.p.newLocation(ctx, r.t); nsErr != nil {
			return nil, nsErr // the namespace went away
		}
		return nil, nil
	}
	return tbl, err
}

// Landed: an existing table is this create's when its uuid is; else the
// create lost.
func (r *createRound) Landed(_ context.Context, tbl *table.Table) (bool, error) {
	if tbl == nil {
		return false, nil
	}
	if !r.ours(tbl) {
		r.taken = true
		return false, catalogs.Errorf(catalogs.ErrAlreadyExists, "table %s already exists", r.t)
	}
	return true, nil
}

// ours reports whether tbl is the table this create makes, and if so
// records the outcome of its commit.
func (r *createRound) ours(tbl *table.Table) bool {
	meta := tbl.Metadata()
	if meta.TableUUID() != r.c.tbl.Metadata().TableUUID() {
		return false
	}
	if s := findSnapshot(meta, r.commitID); s != nil {
		r.out = outcome(s, 0)
	} else {
		r.out = catalogs.CommitOutcome{CommittedAt: time.UnixMilli(meta.LastUpdatedMillis()).UTC()}
	}
	return true
}

func (r *createRound) Claimed(context.Context, *table.Table, *table.Table, bool) (string, int64, error) {
	return "", 0, nil
}

// Attempt creates the table with its first snapshot (none without files).
func (r *createRound) Attempt(ctx context.Context, _ *table.Table) error {
	change := &schemaChange{meta: r.c.tbl.Metadata(), updates: r.c.updates,
		reqs: []table.Requirement{table.AssertCreate()}, create: true}
	var err error
	if len(r.files) == 0 {
		err = r.p.createEmpty(ctx, r.c, change)
		if err == nil {
			r.out = catalogs.CommitOutcome{CommittedAt: time.Now().UTC()}
		}
	} else {
		var snap *table.Snapshot
		snap, err = r.p.attempt(ctx, r.c.tbl, ice.Properties{CommitIDKey: r.commitID}, r.files, false, change)
		if err == nil {
			r.out = outcome(snap, 0)
		}
	}
	if err != nil && isConflict(err) {
		return fmt.Errorf("table %s: %w: %w", r.t, lake.ErrLost, err)
	}
	return err
}

// Recover: the insert of the row may have failed on another's (a unique
// key, not a conflict) or landed with its reply lost; the uuid tells.
func (r *createRound) Recover(ctx context.Context, _ error) bool {
	tbl, err := r.p.load(context.WithoutCancel(ctx), r.t)
	if err != nil {
		return false
	}
	if r.ours(tbl) {
		return true
	}
	r.taken = true
	return false
}

// createEmpty creates the table without a snapshot. The metadata file a
// losing attempt wrote (iceberg-go's SQL catalog writes it before the
// insert) is deleted when the attempt certainly did not land.
func (p *Provider) createEmpty(ctx context.Context, c *creation, change *schemaChange) error {
	enc, err := tableEncryption(c.t, c.tbl)
	if err != nil {
		return err
	}
	if ctx, err = p.encryptContext(ctx, enc); err != nil {
		return err
	}
	_, err = catalogs.Guard(ctx, p.remote, false, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, protect(catalogs.ErrInvalidArgument, "create table", func() error {
			_, _, err := p.cat.CommitTable(ctx, c.tbl.Identifier(), change.reqs, change.updates)
			return err
		})
	})
	if err == nil || isRequirement(err) || !p.lostCreate(context.WithoutCancel(ctx), c) {
		return err
	}
	if fsys, ferr := fileIO(ctx, c.tbl); ferr == nil {
		p.dropLostCreation(ctx, c, fsys)
	}
	return err
}

// isRequirement reports whether err is a requirement that failed before
// anything was written.
func isRequirement(err error) bool {
	return err != nil && strings.Contains(strings.ToLower(err.Error()), "requirement failed")
}

// lostCreate reports whether the create c certainly did not land: no
// table, or another's.
func (p *Provider) lostCreate(ctx context.Context, c *creation) bool {
	now, err := catalogs.Guard(ctx, p.remote, true, func(ctx context.Context) (*table.Table, error) {
		return p.cat.LoadTable(ctx, c.tbl.Identifier())
	})
	if err != nil {
		return errors.Is(err, catalog.ErrNoSuchTable)
	}
	return now.Metadata().TableUUID() != c.tbl.Metadata().TableUUID()
}

// dropLostCreation deletes the version-0 metadata file of the create c
// that did not land: the one in the metadata directory that names c's
// table uuid, which no table of the catalog has.
func (p *Provider) dropLostCreation(ctx context.Context, c *creation, fsys iceio.IO) {
	marker := []byte(`"table-uuid":"` + c.tbl.Metadata().TableUUID().String() + `"`)
	p.dropMetadataMarked(ctx, c.tbl, fsys, metadataRoot(c.tbl), -1, marker)
}

var _ catalogs.CreateScanner = (*Provider)(nil)

// CreateSchema implements catalogs.CreateScanner: the schema of the table
// newCreation makes, as GetTableSpec reads a table.
func (p *Provider) CreateSchema(ctx context.Context, t catalogs.TableIdent, schema *arrow.Schema, opts map[string]string) (*arrow.Schema, error) {
	c, err := p.newCreation(ctx, t, schema, opts, uuid.New())
	if err != nil {
		return nil, err
	}
	spec, err := tableSpec(c.tbl)
	if err != nil {
		return nil, err
	}
	return spec.Schema, nil
}

// ScanCreate implements catalogs.CreateScanner: Scan's reader over the
// table the create makes, with no snapshot, and the receipts' files,
// decoded and checked as CommitCreate decodes them.
func (p *Provider) ScanCreate(ctx context.Context, t catalogs.TableIdent, schema *arrow.Schema, opts map[string]string, req catalogs.ScanRequest, staged []catalogs.WriteReceipt) (*catalogs.ScanResult, error) {
	if req.SnapshotID != nil {
		return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: a table this transaction creates has no snapshot yet", t)
	}
	rms, err := parseReceipts(t, staged)
	if err != nil {
		return nil, err
	}
	id := uuid.New()
	if len(rms) > 0 {
		if id, err = uuid.Parse(rms[0].TableUUID); err != nil {
			return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: receipt 0: table uuid %q: %v", t, rms[0].TableUUID, err)
		}
	}
	c, err := p.newCreation(ctx, t, schema, opts, id)
	if err != nil {
		return nil, err
	}
	for i, rm := range rms {
		if rm.Create != c.digest || rm.Replace != nil {
			return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: receipt %d was not written for the table this create makes", t, i)
		}
	}
	dfs, err := dataFiles(t, c.tbl.Metadata(), rms)
	if err != nil {
		return nil, err
	}
	return p.scan(ctx, t, c.tbl, req, dfs, false)
}
