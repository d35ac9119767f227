package starrocks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightgw/flightgw/catalogs"
)

// loadTxn is one open Stream Load transaction: every stream one unit of
// work opened on one table.
type loadTxn struct {
	// mu serialises the transaction's calls: StarRocks takes the loads of
	// one transaction from one client at a time.
	mu     sync.Mutex
	key    string
	ident  catalogs.TableIdent
	db     string
	label  string
	cols   []column
	txnID  int64
	begun  bool
	doomed string // why it cannot commit, once a stream aborted or a load failed
	done   bool
	n      int // streams opened
}

// receiptMeta is the backend's receipt: a stream of a Stream Load
// transaction, or a batch spooled by WriteBatch.
type receiptMeta struct {
	Kind   string `json:"starrocks"` // "txn" or "spool"
	DB     string `json:"db"`
	Table  string `json:"table"`
	Label  string `json:"label,omitempty"`
	Stream int    `json:"stream,omitempty"`
	File   string `json:"file,omitempty"`
}

func txnKey(t catalogs.TableIdent, unit string) string { return t.Key() + "\x00" + unit }

// OpenStream implements catalogs.StreamWriter: the first stream of a
// unit of work on a table begins its Stream Load transaction, labelled
// from WriteTxn.CommitID; later streams join it.
func (p *Provider) OpenStream(ctx context.Context, t catalogs.TableIdent, w catalogs.WriteTxn) (catalogs.WriteStream, error) {
	if w.ID == "" {
		return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: a write stream needs a unit of work", t)
	}
	db, cols, err := p.columns(ctx, t)
	if err != nil {
		return nil, err
	}
	commitID := w.CommitID
	if commitID == "" {
		commitID = w.ID
	}
	key := txnKey(t, w.ID)
	p.mu.Lock()
	x, ok := p.txns[key]
	if !ok {
		x = &loadTxn{key: key, ident: t, db: db, label: label(commitID, db, t.Name), cols: cols}
		p.txns[key] = x
	}
	p.mu.Unlock()
	x.mu.Lock()
	defer x.mu.Unlock()
	switch {
	case x.done:
		return nil, catalogs.Errorf(catalogs.ErrFailedPrecondition, "table %s: stream load transaction %s has ended", t, x.label)
	case x.doomed != "":
		return nil, catalogs.Errorf(catalogs.ErrFailedPrecondition, "table %s: stream load transaction %s cannot take more data: %s", t, x.label, x.doomed)
	case !x.begun:
		if err := p.begin(ctx, x); err != nil {
			p.forget(x)
			return nil, err
		}
	}
	x.cols = cols
	x.n++
	return &stream{p: p, x: x, n: x.n}, nil
}

// forget drops a transaction from the open ones.
func (p *Provider) forget(x *loadTxn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.txns[x.key] == x {
		delete(p.txns, x.key)
	}
}

// byLabel finds an open transaction of this process by its label.
func (p *Provider) byLabel(lbl string) *loadTxn {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, x := range p.txns {
		if x.label == lbl {
			return x
		}
	}
	return nil
}

func (p *Provider) txnHeaders(x *loadTxn) map[string]string {
	return map[string]string{"label": x.label, "db": x.db, "table": x.ident.Name}
}

// errLanded marks a label whose transaction has already committed.
var errLanded = errors.New("the unit of work has already committed")

// begin starts x's transaction. A label that already names a running
// transaction is one whose begin answer was lost (the label is this unit
// of work's): StarRocks aborts it on the second begin, so begin waits for
// that and begins again. A label that already committed means the unit of
// work has committed: no more data may join it.
func (p *Provider) begin(ctx context.Context, x *loadTxn) error {
	h := p.txnHeaders(x)
	h["timeout"] = strconv.Itoa(int(p.cfg.txnTimeout / time.Second))
	if p.cfg.idleTimeout > 0 {
		h["idle_transaction_timeout"] = strconv.Itoa(max(1, int(p.cfg.idleTimeout/time.Second)))
	}
	var last error
	for attempt := range p.cfg.retries {
		if attempt > 0 {
			if err := sleep(ctx, backoff(attempt-1)); err != nil {
				break
			}
		}
		res, err := p.http.txnCall(ctx, "begin", http.MethodPost, h, nil)
		switch {
		case err != nil && errors.Is(err, catalogs.ErrUnavailable):
			// No answer: the transaction may have begun.
			if st, serr := p.http.loadState(ctx, x.db, x.label); serr == nil && st == statePrepare {
				x.begun = true
				return nil
			}
			last = err
			continue
		case err != nil:
			return err
		case res.Status == statusOK:
			x.txnID, x.begun = res.TxnID, true
			return nil
		case res.Status == statusLabelExists || res.Status == statusLabelExists2:
			if res.ExistingJobStatus == "FINISHED" || res.ExistingJobStatus == stateVisible || res.ExistingJobStatus == stateCommitted {
				return catalogs.Errorf(catalogs.ErrFailedPrecondition, "table %s: stream load label %s: %w", x.ident, x.label, errLanded)
			}
			p.waitEnded(ctx, x.db, x.label)
			last = catalogs.Errorf(catalogs.ErrUnavailable, "table %s: stream load label %s is in use (%s)", x.ident, x.label, res.ExistingJobStatus)
			continue
		default:
			// Fail: nothing began, beginning again is safe.
			last = catalogs.Errorf(catalogs.ErrUnavailable, "table %s: starrocks could not begin stream load transaction %s: %s %s", x.ident, x.label, res.Status, res.Message)
		}
	}
	return last
}

// waitEnded polls a label until its transaction is no longer running.
func (p *Provider) waitEnded(ctx context.Context, db, lbl string) {
	for i := range 20 {
		st, err := p.http.loadState(ctx, db, lbl)
		if err != nil || (st != statePrepare && st != statePrepared) {
			return
		}
		if sleep(ctx, backoff(min(i, 3))) != nil {
			return
		}
	}
}

// stream is one write stream of a Stream Load transaction.
type stream struct {
	p       *Provider
	x       *loadTxn
	n       int
	rows    uint64
	bytes   uint64
	closed  bool
	aborted bool
}

// Write implements catalogs.WriteStream: the batch is checked, encoded
// and sent with /api/transaction/load. A load that fails leaves the
// transaction aborted by StarRocks: the unit of work cannot commit.
func (s *stream) Write(ctx context.Context, batch arrow.RecordBatch) error {
	x := s.x
	if s.closed || s.aborted {
		return catalogs.Errorf(catalogs.ErrFailedPrecondition, "table %s: write stream has ended", x.ident)
	}
	if err := checkBatch(x.ident, x.cols, batch); err != nil {
		return err
	}
	body, err := encodeJSON(x.ident, batch)
	if err != nil {
		return err
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.doomed != "" || x.done {
		return catalogs.Errorf(catalogs.ErrFailedPrecondition, "table %s: stream load transaction %s cannot take more data: %s", x.ident, x.label, x.doomed)
	}
	h := s.p.txnHeaders(x)
	for k, v := range jsonHeaders {
		h[k] = v
	}
	res, err := s.p.http.txnCall(ctx, "load", http.MethodPut, h, body)
	if err != nil {
		x.doomed = "a load got no answer: " + err.Error()
		return err
	}
	if res.Status != statusOK {
		x.doomed = fmt.Sprintf("a load failed: %s %s", res.Status, res.Message)
		return loadError(x.ident, x.label, res)
	}
	s.rows += uint64(batch.NumRows())
	s.bytes += uint64(len(body))
	return nil
}

// loadError classifies a failed load: rows StarRocks filtered (bad data)
// are the client's; anything else is the cluster's.
func loadError(t catalogs.TableIdent, lbl string, res result) error {
	if res.NumberFilteredRows > 0 || strings.Contains(strings.ToLower(res.Message), "filtered") {
		return catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: starrocks rejected %d rows of the batch: %s (error log: %s)", t, res.NumberFilteredRows, res.Message, res.ErrorURL)
	}
	return catalogs.Errorf(catalogs.ErrUnavailable, "table %s: stream load %s failed: %s %s", t, lbl, res.Status, res.Message)
}

// Close implements catalogs.WriteStream: the receipt names the
// transaction; nothing is visible until it commits.
func (s *stream) Close(context.Context) ([]catalogs.WriteReceipt, error) {
	if s.aborted {
		return nil, catalogs.Errorf(catalogs.ErrFailedPrecondition, "table %s: stream was aborted", s.x.ident)
	}
	s.closed = true
	raw, _ := json.Marshal(receiptMeta{Kind: "txn", DB: s.x.db, Table: s.x.ident.Name, Label: s.x.label, Stream: s.n})
	return []catalogs.WriteReceipt{{Metadata: raw, RowCount: s.rows, ByteCount: s.bytes}}, nil
}

// Abort implements catalogs.WriteStream: the whole transaction is rolled
// back, so nothing of the unit of work can land (its commit then fails
// ErrFailedPrecondition).
func (s *stream) Abort(ctx context.Context) error {
	if s.closed || s.aborted {
		return nil
	}
	s.aborted = true
	x := s.x
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.doomed == "" {
		x.doomed = "a stream of the unit of work was aborted"
	}
	if x.done {
		return nil
	}
	if _, err := s.p.http.txnCall(ctx, "rollback", http.MethodPost, s.p.txnHeaders(x), nil); err != nil {
		s.p.log.Warn("rollback of an aborted stream's transaction", "table", x.ident.String(), "label", x.label, "err", err)
	}
	return nil
}
