package txn

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightgw/flightgw/catalogs"
)

// IfExists says what a write does to a table that exists.
type IfExists int

const (
	// ExistsAppend appends to it (the default).
	ExistsAppend IfExists = iota
	// ExistsFail refuses the write with ErrAlreadyExists.
	ExistsFail
	// ExistsReplace replaces its data (and its schema, when the write's
	// differs) in one commit.
	ExistsReplace
)

// Write is one write into one table: a bulk-ingest stream, an INSERT's
// result, a prepared INSERT's parameter batches.
type Write struct {
	Table    catalogs.TableIdent
	Provider catalogs.Provider
	// CreateIfMissing creates a missing table from the source's schema;
	// otherwise a missing table is ErrNotFound.
	CreateIfMissing bool
	IfExists        IfExists
	// Txn is the transaction the write joins; nil commits it on its own
	// (auto-commit) as soon as the source ends.
	Txn *Txn
	// CommitID is the id an auto-commit records (IdempotencyCommitID for
	// a client's key); empty draws a random one. It must be empty inside
	// a transaction, whose commit id is the transaction's.
	CommitID string
	// Idempotent says CommitID came from the client: when it has already
	// landed on the table, the source is read to its end and nothing is
	// written (a retry of a write whose reply was lost).
	Idempotent bool
	// TableOptions are handed to the backend's
	// catalogs.TableManager.CreateTable when the write creates the table (a
	// Paimon table's bucket, primary-key, partition; an Iceberg table's
	// partition spec, sort order and properties). A write that cannot
	// create its table, or into a backend that takes no table options,
	// is refused (checkTableOptions), and so is a replace of an existing
	// table; a create_append that finds the table existing appends to it
	// as it is, as CREATE TABLE IF NOT EXISTS does, once the backend has
	// checked the options (CheckTableOptions).
	TableOptions map[string]string
}

// Source is a stream of batches to write: flight.MessageReader satisfies
// it. Err is the error that ended the stream, already classified for the
// client by whoever built the source.
type Source interface {
	Schema() *arrow.Schema
	Next() bool
	RecordBatch() arrow.RecordBatch
	Err() error
}

// Result is what a write did.
type Result struct {
	// Rows is the number of rows written (for a repeated idempotent
	// write, the number the first one wrote).
	Rows int64
	// Created is true when the write created the table.
	Created bool
	// Repeated is true when an idempotent write had already landed.
	Repeated bool
	// Bytes is the size of the data files written; Snapshot is the
	// snapshot the write committed (0 when it joined a transaction or
	// was repeated).
	Bytes    uint64
	Snapshot int64
}

// autoCommitPrefix marks the random commit ids of auto-commit writes
// without an idempotency key: no client can send one again (Replayable).
const autoCommitPrefix = "write-"

// IdempotencyCommitID scopes a client's idempotency key to its realm and
// principal (the table scopes it too: commit ids are looked up per table),
// so that another principal choosing the same key is a different write.
func IdempotencyCommitID(realm, principal, key string) string {
	h := sha256.Sum256([]byte(realm + "\x00" + principal + "\x00" + key))
	return "idem-" + hex.EncodeToString(h[:16])
}

// write is the one write path of the gateway. It plans the write (create,
// append, replace), streams the source into the backend, and then either
// joins the staged receipts to w.Txn or commits them with the landed-commit
// check. On any failure what it staged is deleted, unless a commit's
// outcome is unknown (then nothing is, and the error says so).
//
// A table it creates becomes visible with its first commit on a backend
// that stages creates (catalogs.StagedCreator, stagedcreate.go): a write
// that fails before leaves no table, and inside a transaction the table
// appears at COMMIT. On other backends the table is created first and,
// when the write fails before its commit lands, dropped again if no one
// else has committed to it meanwhile (catalogs.Uncreator, an atomic check
// and drop), so a retry with mode create succeeds and no acknowledged row
// of another writer is lost. Inside a transaction the table is dropped so
// at ROLLBACK. A backend that cannot drop so keeps the table, and the
// error says so.
func (m *Manager) write(ctx context.Context, w Write, src Source) (Result, error) {
	if w.Txn != nil && w.CommitID != "" {
		return Result{}, catalogs.Errorf(catalogs.ErrInvalidArgument,
			"write into %s: an idempotency key cannot be used inside a transaction (the transaction's commit is the unit of retry)", w.Table)
	}
	if w.Txn == nil && w.CommitID == "" {
		w.CommitID = autoCommitPrefix + randomID()
	}
	if w.Idempotent {
		if res, done, err := repeated(ctx, w, src); done || err != nil {
			return res, err
		}
	}
	schema := src.Schema()
	if schema == nil {
		if err := src.Err(); err != nil {
			return Result{}, err
		}
		return Result{}, catalogs.Errorf(catalogs.ErrInvalidArgument, "write into %s: the stream ended before its schema", w.Table)
	}
	p, err := plan(ctx, w, schema)
	if err != nil {
		return m.failed(ctx, p, err)
	}
	ws, err := p.open(ctx, schema)
	if err != nil {
		return m.failed(ctx, p, err)
	}
	rows, err := copyBatches(ctx, w.Table, ws, src)
	if err != nil {
		if aerr := ws.Abort(context.WithoutCancel(ctx)); aerr != nil {
			m.log.Warn("abort write stream", "table", w.Table.String(), "err", aerr)
		}
		return m.failed(ctx, p, err)
	}
	receipts, err := ws.Close(ctx)
	if err != nil {
		return m.failed(ctx, p, err)
	}
	_, bytes := totals(receipts)
	res := Result{Rows: rows, Created: p.created, Bytes: bytes}
	if w.Txn != nil {
		superseded, err := w.Txn.addCreating(w.Table, w.Provider, p.mode, receipts, p.created && p.create == nil, p.create)
		if err != nil {
			receipts = append(receipts, superseded...)
			if derr := discard(context.WithoutCancel(ctx), w.Provider, w.Table, receipts); derr != nil {
				m.log.Warn("discard staged files", "table", w.Table.String(), "err", derr)
			}
			return m.failed(ctx, p, err)
		}
		if err := discard(context.WithoutCancel(ctx), w.Provider, w.Table, superseded); err != nil {
			m.log.Warn("discard superseded receipts", "table", w.Table.String(), "err", err)
		}
		return res, nil
	}
	s := &Staged{Table: w.Table, Provider: w.Provider, Mode: p.mode, Receipts: receipts, commitID: w.CommitID, create: p.create}
	out, err := commitStaged(ctx, s, w.CommitID)
	if p.create != nil && s.create == nil {
		res.Created = false // a create_append that lost the race appended
	}
	m.obs.Committed(w.Table, out, err)
	switch {
	case isUnknown(err):
		m.log.Warn("commit outcome unknown; staged files kept", "table", w.Table.String(), "commit_id", w.CommitID, "err", err)
		return Result{Created: p.created}, p.explain(err)
	case err != nil:
		if derr := discard(context.WithoutCancel(ctx), w.Provider, w.Table, receipts); derr != nil {
			m.log.Warn("discard staged files", "table", w.Table.String(), "err", derr)
		}
		return m.failed(ctx, p, err)
	case out.Duplicate:
		// Another write with the same commit id landed first: this one's
		// files are in no snapshot.
		if derr := discard(context.WithoutCancel(ctx), w.Provider, w.Table, receipts); derr != nil {
			m.log.Warn("discard staged files of a duplicate write", "table", w.Table.String(), "err", derr)
		}
		res.Repeated = true
	default:
		res.Snapshot = out.SnapshotID
	}
	return res, nil
}

// repeated answers an idempotent write whose commit id has already landed:
// it reads the source to its end (the client is retrying the whole upload)
// and writes nothing.
func repeated(ctx context.Context, w Write, src Source) (Result, bool, error) {
	ic, ok := w.Provider.(catalogs.IdempotentCommitter)
	if !ok {
		return Result{}, false, catalogs.Errorf(catalogs.ErrInvalidArgument,
			"write into %s: catalog %q does not record idempotency keys", w.Table, w.Table.Catalog)
	}
	rec, found, err := ic.FindCommit(ctx, w.Table, w.CommitID)
	if err != nil && !errors.Is(err, catalogs.ErrNotFound) {
		return Result{}, false, err
	}
	if !found {
		return Result{}, false, nil
	}
	for src.Next() {
	}
	return Result{Rows: int64(rec.RowCount), Repeated: true}, true, nil
}

// writePlan is what the write's options and the table's state decided
// before any data is written.
type writePlan struct {
	w       Write
	mode    Mode
	created bool
	// replacer opens the stream of a replace (nil: an ordinary stream).
	replacer catalogs.SchemaReplacer
	// create is the staged create the write's receipts publish (nil: the
	// table exists, or was created by plan).
	create *stagedCreate
}

// plan applies the create / append / replace rules.
func plan(ctx context.Context, w Write, schema *arrow.Schema) (writePlan, error) {
	p := writePlan{w: w, mode: Append}
	if err := checkTableOptions(w); err != nil {
		return p, err
	}
	spec, err := w.Provider.GetTableSpec(ctx, w.Table)
	exists := err == nil
	if err != nil && !errors.Is(err, catalogs.ErrNotFound) {
		return p, err
	}
	if !exists && w.Txn != nil {
		if sc := w.Txn.stagedCreateOf(w.Table); sc != nil {
			return planStaged(p, sc)
		}
	}
	if !exists {
		if !w.CreateIfMissing {
			return p, catalogs.Errorf(catalogs.ErrNotFound, "write into %s: table does not exist (use mode create or create_append)", w.Table)
		}
		tm, ok := w.Provider.(catalogs.TableManager)
		if !ok {
			return p, catalogs.Errorf(catalogs.ErrInvalidArgument, "write into %s: catalog %q cannot create tables", w.Table, w.Table.Catalog)
		}
		if sc, ok := w.Provider.(catalogs.StagedCreator); ok && sc.StagesCreate(w.TableOptions) {
			p.created = true
			p.create = &stagedCreate{schema: schema, opts: w.TableOptions, orAppend: w.IfExists == ExistsAppend}
			return p, nil
		}
		_, err := tm.CreateTable(ctx, w.Table, schema, w.TableOptions)
		switch {
		case err == nil:
			p.created = true
			return p, nil
		case !errors.Is(err, catalogs.ErrAlreadyExists):
			return p, err
		}
		// Created by someone else meanwhile: it exists after all.
		if spec, err = w.Provider.GetTableSpec(ctx, w.Table); err != nil {
			return p, err
		}
	}
	if sr, ok := w.Provider.(catalogs.SchemaReplacer); ok && w.Txn != nil && w.IfExists != ExistsReplace {
		// An append after a replace in the same transaction is written
		// under the replace's schema, so that both land in its commit.
		if mode, _, staged := w.Txn.StagedFor(w.Table); staged && mode == Overwrite {
			p.replacer = sr
		}
	}
	if tm, ok := w.Provider.(catalogs.TableManager); ok && len(w.TableOptions) > 0 && !p.created && w.IfExists == ExistsAppend {
		// A create_append onto an existing table: the options are not
		// applied, but an option no create could apply is still refused.
		if err := tm.CheckTableOptions(w.Table, schema, w.TableOptions); err != nil {
			return p, err
		}
	}
	switch w.IfExists {
	case ExistsFail:
		return p, catalogs.Errorf(catalogs.ErrAlreadyExists, "write into %s: table already exists (use mode append or replace)", w.Table)
	case ExistsReplace:
		if len(w.TableOptions) > 0 {
			// A replace keeps the table (its spec, order and properties)
			// and replaces its data: options would not be applied.
			return p, catalogs.Errorf(catalogs.ErrInvalidArgument,
				"write into %s: option %q: a replace of an existing table keeps its layout; table options apply only when the ingest creates the table",
				w.Table, slices.Sorted(maps.Keys(w.TableOptions))[0])
		}
		if _, ok := w.Provider.(catalogs.Overwriter); !ok {
			return p, catalogs.Errorf(catalogs.ErrInvalidArgument, "write into %s: catalog %q cannot replace a table's data", w.Table, w.Table.Catalog)
		}
		p.mode = Overwrite
		if sr, ok := w.Provider.(catalogs.SchemaReplacer); ok {
			p.replacer = sr
			return p, nil
		}
		if !sameColumns(spec.Schema, schema) {
			return p, catalogs.Errorf(catalogs.ErrFailedPrecondition,
				"write into %s: catalog %q cannot replace a table with other columns in one commit", w.Table, w.Table.Catalog)
		}
	}
	return p, nil
}

// failed ends a write that failed before its commit landed: a table the
// write created is dropped again unless someone else has committed to it
// (uncreate).
func (m *Manager) failed(ctx context.Context, p writePlan, err error) (Result, error) {
	if !p.created || p.create != nil || m.uncreate(ctx, p.w.Provider, p.w.Table) {
		return Result{}, err
	}
	return Result{Created: true}, p.explain(err)
}

// uncreate drops table, which this gateway created for a write that did
// not land, when no commit has landed on it since; it reports whether the
// table is gone.
func (m *Manager) uncreate(ctx context.Context, p catalogs.Provider, table catalogs.TableIdent) bool {
	u, ok := p.(catalogs.Uncreator)
	if !ok {
		return false
	}
	dropped, err := u.DropUnwritten(context.WithoutCancel(ctx), table)
	if err != nil {
		m.log.Warn("drop the table a failed create made", "table", table.String(), "err", err)
		return false
	}
	if !dropped {
		m.log.Info("table a failed create made is kept: another write committed to it", "table", table.String())
	}
	return dropped
}

// explain adds to a failed write's error that the table it created stays.
func (p writePlan) explain(err error) error {
	if err == nil || !p.created || p.create != nil {
		return err
	}
	return fmt.Errorf("%w (table %s was created by this write and is kept: retry with mode create_append)", err, p.w.Table)
}

// open opens the write stream: a replace's stream, the backend's stream
// (told its unit of work), or WriteBatch per batch, in that order of
// preference.
func (p writePlan) open(ctx context.Context, schema *arrow.Schema) (catalogs.WriteStream, error) {
	w := p.w
	if p.create != nil {
		wt := catalogs.WriteTxn{ID: w.CommitID, CommitID: w.CommitID, AutoCommit: true}
		if w.Txn != nil {
			wt = catalogs.WriteTxn{ID: w.Txn.ID(), CommitID: w.Txn.CommitID()}
		}
		return w.Provider.(catalogs.StagedCreator).OpenCreateStream(ctx, w.Table, p.create.schema, p.create.opts, wt)
	}
	if p.replacer != nil {
		return p.replacer.OpenReplaceStream(ctx, w.Table, schema)
	}
	if sw, ok := w.Provider.(catalogs.StreamWriter); ok {
		wt := catalogs.WriteTxn{ID: w.CommitID, CommitID: w.CommitID, AutoCommit: true}
		if w.Txn != nil {
			wt = catalogs.WriteTxn{ID: w.Txn.ID(), CommitID: w.Txn.CommitID()}
		}
		wt.Replace = p.mode == Overwrite
		return sw.OpenStream(ctx, w.Table, wt)
	}
	return &batchStream{p: w.Provider, table: w.Table}, nil
}

// copyBatches writes every batch of src to ws, after checking that its
// strings are UTF-8.
func copyBatches(ctx context.Context, table catalogs.TableIdent, ws catalogs.WriteStream, src Source) (int64, error) {
	var rows int64
	for src.Next() {
		batch := src.RecordBatch()
		if batch.NumRows() == 0 {
			continue
		}
		if err := checkUTF8(table, batch, rows); err != nil {
			return rows, err
		}
		if err := ws.Write(ctx, batch); err != nil {
			return rows, err
		}
		rows += batch.NumRows()
	}
	if err := src.Err(); err != nil {
		return rows, err
	}
	if err := ctx.Err(); err != nil {
		return rows, err
	}
	return rows, nil
}

// sameColumns reports whether two schemas have the same column names and
// types in the same order (nullability aside).
func sameColumns(a, b *arrow.Schema) bool {
	if a == nil || b == nil || a.NumFields() != b.NumFields() {
		return false
	}
	for i := range a.NumFields() {
		fa, fb := a.Field(i), b.Field(i)
		if fa.Name != fb.Name || !arrow.TypeEqual(fa.Type, fb.Type) {
			return false
		}
	}
	return true
}

// batchStream is the WriteStream of a backend that has only WriteBatch: a
// receipt per batch.
type batchStream struct {
	p        catalogs.Provider
	table    catalogs.TableIdent
	receipts []catalogs.WriteReceipt
}

func (b *batchStream) Write(ctx context.Context, batch arrow.RecordBatch) error {
	r, err := b.p.WriteBatch(ctx, b.table, batch)
	if err != nil {
		return err
	}
	b.receipts = append(b.receipts, r)
	return nil
}

func (b *batchStream) Close(context.Context) ([]catalogs.WriteReceipt, error) {
	r := b.receipts
	b.receipts = nil
	return r, nil
}

func (b *batchStream) Abort(ctx context.Context) error {
	r := b.receipts
	b.receipts = nil
	return discard(ctx, b.p, b.table, r)
}

func randomID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // crypto/rand never fails on supported platforms
	return hex.EncodeToString(b)
}

// checkTableOptions refuses table options the write could never apply,
// whatever the table's state, so that an option is applied or refused
// and never silently dropped.
func checkTableOptions(w Write) error {
	if len(w.TableOptions) == 0 {
		return nil
	}
	names := slices.Sorted(maps.Keys(w.TableOptions))
	if _, ok := w.Provider.(catalogs.TableManager); !ok {
		return catalogs.Errorf(catalogs.ErrInvalidArgument, "write into %s: option %q: catalog %q creates no tables and takes no table options", w.Table, names[0], w.Table.Catalog)
	}
	if !w.CreateIfMissing {
		return catalogs.Errorf(catalogs.ErrInvalidArgument,
			"write into %s: option %q: table options apply only to an ingest that creates the table (mode create, create_append or replace)", w.Table, names[0])
	}
	return nil
}
