package starrocks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightgw/flightgw/catalogs"
)

// spoolPath is where WriteBatch keeps a staged batch of this catalog.
func (p *Provider) spoolPath(name string) (string, error) {
	if name == "" || strings.ContainsAny(name, `/\`) || strings.Contains(name, "..") || !strings.HasSuffix(name, ".json") {
		return "", catalogs.Errorf(catalogs.ErrInvalidArgument, "catalog %q: %q is not a staged batch of this catalog", p.name, name)
	}
	return filepath.Join(p.cfg.spoolDir, "flightgw-starrocks-"+p.name, name), nil
}

// WriteBatch implements catalogs.Provider. A Stream Load transaction's
// label must be known when it begins, and a lone batch's commit id is not
// known until its commit: so the batch is checked, encoded and spooled to
// a local file (nothing is sent), and the commit loads every spooled batch
// of the commit in one transaction labelled from the commit id. The
// gateway's write path uses OpenStream instead; WriteBatch receipts
// name files of this process's spool directory and commit there only.
func (p *Provider) WriteBatch(ctx context.Context, t catalogs.TableIdent, batch arrow.RecordBatch) (catalogs.WriteReceipt, error) {
	db, cols, err := p.columns(ctx, t)
	if err != nil {
		return catalogs.WriteReceipt{}, err
	}
	if err := checkBatch(t, cols, batch); err != nil {
		return catalogs.WriteReceipt{}, err
	}
	body, err := encodeJSON(t, batch)
	if err != nil {
		return catalogs.WriteReceipt{}, err
	}
	name := randomID() + ".json"
	path, _ := p.spoolPath(name)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return catalogs.WriteReceipt{}, catalogs.Wrap(catalogs.ErrUnavailable, err, fmt.Sprintf("table %s: spool", t))
	}
	if err := os.WriteFile(path, body, 0o600); err != nil {
		return catalogs.WriteReceipt{}, catalogs.Wrap(catalogs.ErrUnavailable, err, fmt.Sprintf("table %s: spool", t))
	}
	raw, _ := json.Marshal(receiptMeta{Kind: "spool", DB: db, Table: t.Name, File: name})
	return catalogs.WriteReceipt{Metadata: raw, RowCount: uint64(batch.NumRows()), ByteCount: uint64(len(body))}, nil
}

// commitSpool loads spooled batches in one Stream Load transaction and
// commits it.
func (p *Provider) commitSpool(ctx context.Context, t catalogs.TableIdent, db, commitID string, rs []catalogs.WriteReceipt, metas []receiptMeta) (catalogs.CommitOutcome, error) {
	if commitID == "" {
		commitID = "commit-" + randomID()
	}
	lbl := label(commitID, db, t.Name)
	key := receiptsKey(rs)
	x := &loadTxn{ident: t, db: db, label: lbl}
	if err := p.begin(ctx, x); err != nil {
		if !errors.Is(err, errLanded) {
			return catalogs.CommitOutcome{}, err
		}
		// The commit id has landed: these batches are not loaded again.
		out, ok := p.landedOutcome(lbl, key)
		if !ok {
			out = p.landedNow(lbl, rowsOf(rs), key, 0, true)
			out.Duplicate = true
		}
		return out, p.removeSpool(metas)
	}
	h := p.txnHeaders(x)
	for k, v := range jsonHeaders {
		h[k] = v
	}
	for _, m := range metas {
		path, err := p.spoolPath(m.File)
		if err != nil {
			p.rollback(ctx, t, db, lbl)
			return catalogs.CommitOutcome{}, err
		}
		body, err := os.ReadFile(path)
		if err != nil {
			p.rollback(ctx, t, db, lbl)
			return catalogs.CommitOutcome{}, catalogs.Errorf(catalogs.ErrFailedPrecondition, "table %s: staged batch %s was committed or discarded", t, m.File)
		}
		res, err := p.http.txnCall(ctx, "load", http.MethodPut, h, body)
		if err == nil && res.Status != statusOK {
			err = loadError(t, lbl, res)
		}
		if err != nil {
			p.rollback(ctx, t, db, lbl)
			return catalogs.CommitOutcome{}, err
		}
	}
	out, err := p.finish(ctx, t, db, lbl, rowsOf(rs), key)
	if err != nil {
		if catalogs.Kind(err) != catalogs.ErrUnavailable {
			p.rollback(ctx, t, db, lbl)
		}
		return out, err
	}
	return out, p.removeSpool(metas)
}

// removeSpool deletes spooled batches; a missing one is gone already.
func (p *Provider) removeSpool(metas []receiptMeta) error {
	var errs []error
	for _, m := range metas {
		path, err := p.spoolPath(m.File)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, catalogs.Wrap(catalogs.ErrUnavailable, err, "remove staged batch "+m.File))
		}
	}
	return errors.Join(errs...)
}
