package starrocks

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/flightgw/flightgw/catalogs"
)

// parseReceipts reads the backend's receipts of table t; they are all of
// one kind, and stream receipts all of one transaction.
func parseReceipts(t catalogs.TableIdent, db string, rs []catalogs.WriteReceipt) ([]receiptMeta, error) {
	out := make([]receiptMeta, len(rs))
	for i, r := range rs {
		m := &out[i]
		if err := json.Unmarshal(r.Metadata, m); err != nil || (m.Kind != "txn" && m.Kind != "spool") {
			return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: receipt %d is not one of this catalog's", t, i)
		}
		switch {
		case m.DB != db || m.Table != t.Name:
			return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: receipt %d is of table %s.%s", t, i, m.DB, m.Table)
		case m.Kind != out[0].Kind:
			return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: receipts of streams and of WriteBatch cannot commit together", t)
		case m.Kind == "txn" && m.Label != out[0].Label:
			return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: receipts of two stream load transactions (%s, %s) cannot commit as one", t, out[0].Label, m.Label)
		}
	}
	return out, nil
}

func rowsOf(rs []catalogs.WriteReceipt) uint64 {
	var n uint64
	for _, r := range rs {
		n += r.RowCount
	}
	return n
}

func receiptsKey(rs []catalogs.WriteReceipt) string {
	keys := make([]string, len(rs))
	for i, r := range rs {
		keys[i] = string(r.Metadata)
	}
	slices.Sort(keys)
	return strings.Join(keys, "\n")
}

// Commit implements catalogs.Provider: CommitOnce without a commit id of
// the caller's (stream receipts keep their label; spooled batches get a
// fresh one).
func (p *Provider) Commit(ctx context.Context, t catalogs.TableIdent, rs []catalogs.WriteReceipt) (catalogs.CommitOutcome, error) {
	return p.commit(ctx, t, "", rs)
}

// CommitOnce implements catalogs.IdempotentCommitter: the Stream Load
// transaction labelled from commitID is prepared and committed; a label
// that has already committed is reported as landed and nothing is loaded
// again.
func (p *Provider) CommitOnce(ctx context.Context, t catalogs.TableIdent, commitID string, rs []catalogs.WriteReceipt) (catalogs.CommitOutcome, error) {
	if commitID == "" {
		return catalogs.CommitOutcome{}, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: CommitOnce needs a commit id", t)
	}
	return p.commit(ctx, t, commitID, rs)
}

func (p *Provider) commit(ctx context.Context, t catalogs.TableIdent, commitID string, rs []catalogs.WriteReceipt) (catalogs.CommitOutcome, error) {
	db, err := p.cfg.database(t)
	if err != nil {
		return catalogs.CommitOutcome{}, err
	}
	metas, err := parseReceipts(t, db, rs)
	if err != nil {
		return catalogs.CommitOutcome{}, err
	}
	if len(metas) == 0 {
		return catalogs.CommitOutcome{CommittedAt: time.Now().UTC()}, nil
	}
	if metas[0].Kind == "spool" {
		return p.commitSpool(ctx, t, db, commitID, rs, metas)
	}
	lbl := metas[0].Label
	if commitID != "" && lbl != label(commitID, db, t.Name) {
		return catalogs.CommitOutcome{}, catalogs.Errorf(catalogs.ErrInvalidArgument,
			"table %s: the receipts' stream load transaction %s was not begun for commit id %s", t, lbl, commitID)
	}
	x := p.byLabel(lbl)
	if x != nil {
		x.mu.Lock()
		defer x.mu.Unlock()
		if x.doomed != "" && !x.done {
			p.rollback(ctx, t, db, lbl)
			x.done = true
			p.forget(x)
			return catalogs.CommitOutcome{}, catalogs.Errorf(catalogs.ErrFailedPrecondition,
				"table %s: stream load transaction %s cannot commit: %s", t, lbl, x.doomed)
		}
	}
	out, err := p.finish(ctx, t, db, lbl, rowsOf(rs), receiptsKey(rs))
	if x != nil && (err == nil || catalogs.Kind(err) == catalogs.ErrFailedPrecondition) {
		x.done = true
		p.forget(x)
	}
	return out, err
}

// finish prepares and commits the transaction of label lbl, resolving
// every answer that is not a plain OK with get_load_state:
//
//   - prepare: PREPARED goes on to the commit; COMMITTED or VISIBLE has
//     landed (a repeated commit); ABORTED or UNKNOWN cannot commit
//     (ErrFailedPrecondition: the transaction timed out or was rolled
//     back).
//   - commit: OK has landed ("Transaction already commited" too); Publish
//     Timeout has landed (committed, visible soon) and is never retried;
//     otherwise COMMITTED or VISIBLE has landed, PREPARED is committed
//     again (safe: a label commits once), ABORTED or UNKNOWN cannot commit.
//
// When the state itself cannot be read the outcome is unknown: the error
// is ErrUnavailable and the caller keeps everything.
func (p *Provider) finish(ctx context.Context, t catalogs.TableIdent, db, lbl string, rows uint64, key string) (catalogs.CommitOutcome, error) {
	if out, ok := p.landedOutcome(lbl, key); ok {
		if st, err := p.http.loadState(ctx, db, lbl); err == nil && (st == stateVisible || st == stateCommitted) {
			return out, nil
		}
	}
	h := map[string]string{"label": lbl, "db": db, "table": t.Name}
	res, err := p.http.txnCall(ctx, "prepare", http.MethodPost, h, nil)
	if err != nil || res.Status != statusOK {
		st, serr := p.http.loadState(ctx, db, lbl)
		switch {
		case serr != nil:
			return catalogs.CommitOutcome{}, catalogs.Errorf(catalogs.ErrUnavailable, "table %s: prepare of stream load %s: outcome unknown: %w", t, lbl, errors.Join(err, serr))
		case st == stateCommitted || st == stateVisible:
			return p.landedNow(lbl, rows, key, res.TxnID, true), nil
		case st != statePrepared:
			return catalogs.CommitOutcome{}, catalogs.Errorf(catalogs.ErrFailedPrecondition, "table %s: stream load transaction %s cannot commit: it is %s (%s)", t, lbl, st, answerText(res, err))
		}
	}
	var last error
	for attempt := range p.cfg.retries {
		if attempt > 0 {
			if err := sleep(ctx, backoff(attempt-1)); err != nil {
				break
			}
		}
		res, err := p.http.txnCall(ctx, "commit", http.MethodPost, h, nil)
		switch {
		case err == nil && res.Status == statusOK:
			return p.landedNow(lbl, rows, key, res.TxnID, false), nil
		case err == nil && isPublishTimeout(res):
			p.log.Info("stream load committed, publish timed out (visible soon)", "table", t.String(), "label", lbl)
			return p.landedNow(lbl, rows, key, res.TxnID, false), nil
		}
		st, serr := p.http.loadState(ctx, db, lbl)
		switch {
		case serr != nil:
			return catalogs.CommitOutcome{}, catalogs.Errorf(catalogs.ErrUnavailable, "table %s: commit of stream load %s: outcome unknown: %w", t, lbl, errors.Join(err, serr))
		case st == stateCommitted || st == stateVisible:
			return p.landedNow(lbl, rows, key, res.TxnID, false), nil
		case st == statePrepared:
			last = catalogs.Errorf(catalogs.ErrUnavailable, "table %s: commit of stream load %s did not apply: %s", t, lbl, answerText(res, err))
			continue
		default:
			return catalogs.CommitOutcome{}, catalogs.Errorf(catalogs.ErrFailedPrecondition, "table %s: stream load transaction %s cannot commit: it is %s (%s)", t, lbl, st, answerText(res, err))
		}
	}
	return catalogs.CommitOutcome{}, last
}

// isPublishTimeout reports an answer saying that the transaction
// committed but its publishing timed out.
func isPublishTimeout(res result) bool {
	return res.Status == statusPublishTO || strings.Contains(strings.ToLower(res.Message), "publish timeout")
}

func answerText(res result, err error) string {
	if err != nil {
		return err.Error()
	}
	return strings.TrimSpace(res.Status + " " + res.Message)
}

// landedNow records a commit that landed now and returns its outcome.
// repeated is true when it had landed before this call.
func (p *Provider) landedNow(lbl string, rows uint64, key string, txnID int64, repeated bool) catalogs.CommitOutcome {
	p.mu.Lock()
	defer p.mu.Unlock()
	if l, ok := p.landed[lbl]; ok {
		l.out.Duplicate = l.key != key
		return l.out
	}
	out := catalogs.CommitOutcome{SnapshotID: txnID, CommittedAt: time.Now().UTC()}
	if len(p.landed) >= maxLanded {
		for k := range p.landed {
			delete(p.landed, k)
			break
		}
	}
	if !repeated {
		p.landed[lbl] = landedCommit{out: out, rows: rows, key: key}
	}
	return out
}

// landedOutcome is a commit this process saw land.
func (p *Provider) landedOutcome(lbl, key string) (catalogs.CommitOutcome, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	l, ok := p.landed[lbl]
	l.out.Duplicate = ok && l.key != key
	return l.out, ok
}

// FindCommit implements catalogs.IdempotentCommitter: the label of
// commitID on the table is looked up with get_load_state; COMMITTED and
// VISIBLE have landed. The row count is known for the commits this
// process made (get_load_state does not report it), 0 otherwise.
func (p *Provider) FindCommit(ctx context.Context, t catalogs.TableIdent, commitID string) (catalogs.CommitRecord, bool, error) {
	db, err := p.cfg.database(t)
	if err != nil {
		return catalogs.CommitRecord{}, false, err
	}
	lbl := label(commitID, db, t.Name)
	st, err := p.http.loadState(ctx, db, lbl)
	switch {
	case errors.Is(err, catalogs.ErrNotFound):
		return catalogs.CommitRecord{}, false, nil // no such database: nothing landed there
	case err != nil:
		return catalogs.CommitRecord{}, false, err
	case st != stateCommitted && st != stateVisible:
		return catalogs.CommitRecord{}, false, nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if l, ok := p.landed[lbl]; ok {
		return catalogs.CommitRecord{Outcome: l.out, RowCount: l.rows}, true, nil
	}
	return catalogs.CommitRecord{Outcome: catalogs.CommitOutcome{CommittedAt: time.Now().UTC()}}, true, nil
}

// rollback rolls a label's transaction back, logging what fails: a
// transaction StarRocks no longer has is rolled back already.
func (p *Provider) rollback(ctx context.Context, t catalogs.TableIdent, db, lbl string) {
	res, err := p.http.txnCall(ctx, "rollback", http.MethodPost, map[string]string{"label": lbl, "db": db, "table": t.Name}, nil)
	if err != nil {
		p.log.Warn("stream load rollback", "table", t.String(), "label", lbl, "err", err)
	} else if res.Status != statusOK {
		p.log.Debug("stream load rollback", "table", t.String(), "label", lbl, "status", res.Status, "message", res.Message)
	}
}

// Discard implements catalogs.Discarder: a stream receipt's transaction is
// rolled back, a spooled batch deleted.
func (p *Provider) Discard(ctx context.Context, t catalogs.TableIdent, rs []catalogs.WriteReceipt) error {
	db, err := p.cfg.database(t)
	if err != nil {
		return err
	}
	metas, err := parseReceipts(t, db, rs)
	if err != nil || len(metas) == 0 {
		return err
	}
	if metas[0].Kind == "spool" {
		return p.removeSpool(metas)
	}
	lbl := metas[0].Label
	if x := p.byLabel(lbl); x != nil {
		x.mu.Lock()
		defer x.mu.Unlock()
		x.done = true
		p.forget(x)
	}
	p.rollback(ctx, t, db, lbl)
	return nil
}

// randomID is a fresh id for a commit without one.
func randomID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
