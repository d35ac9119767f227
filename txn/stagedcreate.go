package txn

import (
	"context"
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightgw/flightgw/catalogs"
)

// stagedCreate is a table a write creates on a catalogs.StagedCreator: it
// does not exist until the commit of the write (or of its transaction)
// publishes it with its first snapshot.
type stagedCreate struct {
	schema *arrow.Schema
	opts   map[string]string
	// orAppend is set for a create_append: when another writer created
	// the table first, the receipts are appended to it instead.
	orAppend bool
}

// stagedCreateOf returns the staged create of table by the open
// transaction t, nil when it stages none.
func (t *Txn) stagedCreateOf(table catalogs.TableIdent) *stagedCreate {
	t.mu.Lock()
	defer t.mu.Unlock()
	key := table.Key()
	for _, s := range t.tables {
		if s.Table.Key() == key && !s.landed {
			return s.create
		}
	}
	return nil
}

// CreatingFor reports whether the open transaction t is creating table
// by a staged create (the table exists nowhere else yet), with the schema
// and options it is created from and the receipts staged for it.
func (t *Txn) CreatingFor(table catalogs.TableIdent) (schema *arrow.Schema, opts map[string]string, receipts []catalogs.WriteReceipt, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.state != Open {
		return nil, nil, nil, false
	}
	key := table.Key()
	for _, s := range t.tables {
		if s.Table.Key() == key && !s.landed && s.create != nil {
			return s.create.schema, s.create.opts, append([]catalogs.WriteReceipt(nil), s.Receipts...), true
		}
	}
	return nil, nil, nil, false
}

// joinCreate records on s a staged create of a later write of the
// transaction; two creates of one table in one transaction must agree on
// its schema.
func (s *Staged) joinCreate(txnID string, c *stagedCreate) error {
	switch {
	case c == nil:
		return nil
	case s.create == nil:
		s.create = c
		return nil
	case !s.create.schema.Equal(c.schema):
		return catalogs.Errorf(catalogs.ErrFailedPrecondition,
			"transaction %s: table %s is created twice in the transaction with different columns", txnID, s.Table)
	}
	return nil
}

// planStaged plans a write into a table that the write's transaction
// creates and that does not exist before its COMMIT: it is written as
// the transaction's create stages it.
func planStaged(p writePlan, c *stagedCreate) (writePlan, error) {
	w := p.w
	switch w.IfExists {
	case ExistsFail:
		return p, catalogs.Errorf(catalogs.ErrAlreadyExists,
			"write into %s: table already exists (created by this transaction; use mode append or replace)", w.Table)
	case ExistsReplace:
		if len(w.TableOptions) > 0 {
			return p, catalogs.Errorf(catalogs.ErrInvalidArgument,
				"write into %s: table options apply only when the ingest creates the table, and this transaction creates it already", w.Table)
		}
		p.mode = Overwrite
	}
	p.create = c
	return p, nil
}

// commitCreate publishes s's table with its first snapshot. A
// create_append that finds the table created by another writer appends
// to it instead (s.create is then cleared); the backend refuses files
// written for other columns.
func commitCreate(ctx context.Context, s *Staged, commitID string) (catalogs.CommitOutcome, error) {
	sc, ok := s.Provider.(catalogs.StagedCreator)
	if !ok {
		return catalogs.CommitOutcome{}, catalogs.Errorf(catalogs.ErrFailedPrecondition, "table %s: catalog cannot stage creates", s.Table)
	}
	out, err := sc.CommitCreate(ctx, s.Table, s.create.schema, s.create.opts, commitID, s.Receipts)
	if errors.Is(err, catalogs.ErrAlreadyExists) && s.create.orAppend {
		s.create = nil
		return commitOnce(ctx, s, commitID)
	}
	return out, err
}

// publishCreates publishes, empty, every table the transaction t stages
// the create of, before Prepare hands its receipts out: a coordinator's
// commit of them only appends, so the table must exist by then (as it
// does on a backend without staged creates, from the worker's write on).
// The create records the commit id txn-<id>-create, so that a Prepare
// retried after a lost reply finds it landed. A create that finds the
// table created by another writer is ErrAlreadyExists, unless it is a
// create_append.
func publishCreates(ctx context.Context, t *Txn, staged []*Staged) error {
	for _, s := range staged {
		if s.create == nil {
			continue
		}
		sc, ok := s.Provider.(catalogs.StagedCreator)
		if !ok {
			return catalogs.Errorf(catalogs.ErrFailedPrecondition, "table %s: catalog cannot stage creates", s.Table)
		}
		_, err := sc.CommitCreate(ctx, s.Table, s.create.schema, s.create.opts, t.CommitID()+"-create", nil)
		if err != nil && !(errors.Is(err, catalogs.ErrAlreadyExists) && s.create.orAppend) {
			return fmt.Errorf("transaction %s: create table %s before handing its writes out: %w", t.id, s.Table, err)
		}
		s.create = nil
	}
	return nil
}
