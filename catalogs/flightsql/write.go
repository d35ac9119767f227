package flightsql

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	fsql "github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	pb "github.com/apache/arrow-go/v18/arrow/flight/gen/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/flightgw/flightgw/catalogs"
)

// How a stream writes its batches upstream.
const (
	// viaIngest: one CommandStatementIngest DoPut per stream.
	viaIngest = "ingest"
	// viaInsert: a prepared INSERT ... VALUES (?, ...) executed with each
	// batch as its parameters.
	viaInsert = "insert"
)

// upTxn is the upstream transaction of one gateway unit of work: every
// stream it opens, on any table of the catalog, writes into it, and its
// first commit (or discard) ends it.
type upTxn struct {
	mu  sync.Mutex
	key string
	txn *fsql.Txn // nil: auto-commit (the upstream has no transactions)
	// conn is the transaction's own connection. Servers bind an open
	// transaction to the session (flightgw: the connection) and run the
	// session's other calls in it: the shared connection would put every
	// unit of work's reads and writes in one transaction.
	conn   *conn
	doomed string // why it cannot commit, once a stream aborted or a write failed
	done   bool
	out    catalogs.CommitOutcome
	err    error // how it ended, when it did not commit
	n      int
	// replaced is, by table key, the number of the unit of work's last
	// replace stream of the table: the streams before it were replaced
	// inside the upstream transaction (Discard of their receipts).
	replaced map[string]int
}

// receiptMeta is the backend's receipt: one stream of a unit of work.
type receiptMeta struct {
	Unit   string `json:"flightsql"`
	Auto   bool   `json:"auto,omitempty"`
	Schema string `json:"schema"`
	Table  string `json:"table"`
	Stream int    `json:"stream"`
	// Replace: the stream replaced the table's data (an ingest with
	// TABLE_EXISTS_OPTION_REPLACE).
	Replace bool `json:"replace,omitempty"`
}

// writeVia decides how the upstream takes writes, from its capabilities
// and the write_mode property.
func (p *Provider) writeVia(c caps, t catalogs.TableIdent) (string, error) {
	if c.readOnly {
		return "", p.lacks(c, "writes (it is read-only)", &t)
	}
	switch {
	case p.cfg.writeMode == writeModeInsert || (p.cfg.writeMode == writeModeAuto && c.transactions && (!c.ingest || !c.ingestInTxn)):
		if !c.transactions || !c.sql {
			return "", p.lacks(c, "transactions with SQL (prepared INSERT inside a transaction)", &t)
		}
		return viaInsert, nil
	case c.ingest:
		if c.transactions && !c.ingestInTxn {
			return "", p.lacks(c, "bulk ingest inside a transaction", &t)
		}
		return viaIngest, nil
	}
	return "", p.lacks(c, "bulk ingest", &t)
}

// OpenStream implements catalogs.StreamWriter: the first stream of
// a unit of work begins its upstream transaction; later streams, of any
// table of the catalog, join it. An upstream without transactions takes
// auto-commit writes only: each stream's data land when the stream ends
// (not atomically with anything else), and a write inside a Flight SQL
// transaction is refused.
func (p *Provider) OpenStream(ctx context.Context, t catalogs.TableIdent, w catalogs.WriteTxn) (catalogs.WriteStream, error) {
	if w.ID == "" {
		return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: a write stream needs a unit of work", t)
	}
	name, err := p.upstreamName(ctx, t)
	if err != nil {
		return nil, err
	}
	c, err := p.capabilities(ctx)
	if err != nil {
		return nil, err
	}
	via, err := p.writeVia(c, t)
	if err != nil {
		return nil, err
	}
	if w.Replace && via != viaIngest {
		return nil, catalogs.Errorf(catalogs.ErrFailedPrecondition,
			"table %s: ingest mode replace needs a bulk ingest with TABLE_EXISTS_OPTION_REPLACE inside the transaction, and upstream %s takes this catalog's writes by prepared INSERT (no bulk ingest in transactions, or write_mode insert)",
			t, c.label(p.cfg.addr))
	}
	if !c.transactions && !w.AutoCommit {
		return nil, catalogs.Errorf(catalogs.ErrFailedPrecondition,
			"table %s: upstream %s has no transactions, so a write inside a Flight SQL transaction cannot be atomic there: write outside a transaction (each ingest then lands on its own when it ends)", t, c.label(p.cfg.addr))
	}
	x, err := p.unit(ctx, w.ID, c.transactions)
	if err != nil {
		return nil, err
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	switch {
	case x.done:
		return nil, catalogs.Errorf(catalogs.ErrFailedPrecondition, "table %s: the upstream transaction of this unit of work has ended", t)
	case x.doomed != "":
		return nil, catalogs.Errorf(catalogs.ErrFailedPrecondition, "table %s: the upstream transaction cannot take more data: %s", t, x.doomed)
	}
	x.n++
	if w.Replace {
		if x.replaced == nil {
			x.replaced = map[string]int{}
		}
		x.replaced[t.Key()] = x.n
	}
	schema, _ := p.schemaOf(t)
	return &stream{p: p, x: x, t: t, schema: schema, name: name, via: via, n: x.n, replace: w.Replace}, nil
}

// unit finds or begins the upstream transaction of a unit of work. The
// begin runs without the provider's lock (it is a network call); of two
// streams of one unit of work racing to begin, the second's transaction
// is rolled back and the first's joined.
func (p *Provider) unit(ctx context.Context, key string, transactions bool) (*upTxn, error) {
	p.mu.Lock()
	x, ok := p.txns[key]
	if !ok {
		// An ended unit of work is not begun again: a stream after its
		// rollback would start a second upstream transaction, which the
		// COMMIT would then commit alone.
		x, ok = p.ended[key]
	}
	p.mu.Unlock()
	if ok {
		return x, nil
	}
	x = &upTxn{key: key, conn: p.main}
	// A forwarded caller's unit of work has a connection of its own whose
	// every call, the reaper's rollback too, carries that caller's token.
	fwd, forwarding, err := p.callerToken(ctx)
	if err != nil {
		return nil, err
	}
	if forwarding {
		cfg := p.cfg
		cfg.user, cfg.password, cfg.token = "", catalogs.Secret{}, catalogs.Secret{}
		if x.conn, err = dial(cfg, p.name, p.cfg.addr, p.remote); err != nil {
			return nil, err
		}
		x.conn.token, x.conn.caller = fwd, true
	}
	if transactions {
		tc := x.conn
		if !forwarding {
			if tc, err = dial(p.cfg, p.name, p.cfg.addr, p.remote); err != nil {
				return nil, err
			}
		}
		// Not retried: a begin whose answer was lost leaves a transaction
		// upstream that its own timeout ends.
		txn, err := call(ctx, tc, false, "begin a transaction", func(ctx context.Context) (*fsql.Txn, error) {
			return tc.client.BeginTransaction(ctx)
		})
		if err != nil {
			_ = tc.close()
			return nil, err
		}
		x.txn, x.conn = txn, tc
	}
	p.mu.Lock()
	first, raced := p.txns[key]
	if !raced {
		p.txns[key] = x
	}
	p.mu.Unlock()
	if raced {
		x.doomed = "a concurrent stream began the unit of work's transaction"
		p.endTxn(context.WithoutCancel(ctx), x, false)
		return first, nil
	}
	return x, nil
}

// forget drops an ended transaction from the open ones.
func (p *Provider) forget(x *upTxn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.txns[x.key] == x {
		delete(p.txns, x.key)
		if len(p.ended) >= maxEnded {
			for k := range p.ended {
				delete(p.ended, k)
				break
			}
		}
		p.ended[x.key] = x
	}
}

// maxEnded bounds the memory of ended transactions.
const maxEnded = 10000

// stream is one write stream of a unit of work.
type stream struct {
	p      *Provider
	x      *upTxn
	t      catalogs.TableIdent
	schema string
	name   string
	via    string
	n      int
	// replace: the stream's ingest replaces the table's data.
	replace bool
	rows    uint64
	bytes   uint64

	// ingest: the open DoPut.
	cancel context.CancelFunc
	put    flight.FlightService_DoPutClient
	wr     *flight.Writer
	// insert: the prepared statement.
	prep *fsql.PreparedStatement

	closed, aborted bool
}

// doom marks the transaction as unable to commit.
func (s *stream) doom(why string) {
	s.x.mu.Lock()
	defer s.x.mu.Unlock()
	if s.x.doomed == "" {
		s.x.doomed = why
	}
}

// Write implements catalogs.WriteStream. A failed write dooms the unit
// of work: the upstream may hold part of the batch in its transaction.
func (s *stream) Write(ctx context.Context, batch arrow.RecordBatch) error {
	if s.closed || s.aborted {
		return catalogs.Errorf(catalogs.ErrFailedPrecondition, "table %s: write stream has ended", s.t)
	}
	if batch == nil {
		return catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: batch is nil", s.t)
	}
	var err error
	if s.via == viaInsert {
		err = s.insert(ctx, batch)
	} else {
		err = s.ingest(ctx, batch)
	}
	if err != nil {
		s.doom("a write failed: " + err.Error())
		return err
	}
	s.rows += uint64(batch.NumRows())
	return nil
}

// ingest sends a batch on the stream's DoPut, opening it first.
func (s *stream) ingest(ctx context.Context, batch arrow.RecordBatch) error {
	if s.put == nil {
		if err := s.openPut(ctx, batch.Schema(), s.ingestOptions()); err != nil {
			return err
		}
	}
	if err := s.wr.Write(batch); err != nil {
		// io.EOF: the upstream ended the call; its status says why.
		return s.finishPut()
	}
	return nil
}

// ingestOptions is the stream's table rule.
func (s *stream) ingestOptions() *pb.CommandStatementIngest_TableDefinitionOptions {
	if s.replace {
		return ingestReplace
	}
	return ingestAppend
}

// ingestAppend, ingestReplace and ingestCreate are the ingests' table
// rules: append to or replace a table that must exist, or create one that
// must not.
var (
	ingestReplace = &pb.CommandStatementIngest_TableDefinitionOptions{
		IfNotExist: pb.CommandStatementIngest_TableDefinitionOptions_TABLE_NOT_EXIST_OPTION_FAIL,
		IfExists:   pb.CommandStatementIngest_TableDefinitionOptions_TABLE_EXISTS_OPTION_REPLACE}
	ingestAppend = &pb.CommandStatementIngest_TableDefinitionOptions{
		IfNotExist: pb.CommandStatementIngest_TableDefinitionOptions_TABLE_NOT_EXIST_OPTION_FAIL,
		IfExists:   pb.CommandStatementIngest_TableDefinitionOptions_TABLE_EXISTS_OPTION_APPEND}
	ingestCreate = &pb.CommandStatementIngest_TableDefinitionOptions{
		IfNotExist: pb.CommandStatementIngest_TableDefinitionOptions_TABLE_NOT_EXIST_OPTION_CREATE,
		IfExists:   pb.CommandStatementIngest_TableDefinitionOptions_TABLE_EXISTS_OPTION_FAIL}
)

// openPut starts the DoPut of a CommandStatementIngest carrying the
// transaction id. It lives until Close or Abort (its own context: a
// stream outlives the call of its first Write).
func (s *stream) openPut(ctx context.Context, schema *arrow.Schema, opts *pb.CommandStatementIngest_TableDefinitionOptions) error {
	cmd := &pb.CommandStatementIngest{TableDefinitionOptions: opts, Table: s.t.Name, Schema: &s.schema, Catalog: s.p.catalogOpt()}
	if s.x.txn != nil {
		cmd.TransactionId = s.x.txn.ID()
	}
	desc, err := descriptor(cmd)
	if err != nil {
		return err
	}
	pctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, cancel) // the caller's cancellation still ends the upload
	octx, err := s.x.conn.outgoing(pctx)
	if err == nil {
		s.put, err = s.x.conn.client.Client.DoPut(octx)
	}
	if err != nil {
		stop()
		cancel()
		return s.x.conn.classify(err, "ingest into "+s.t.String())
	}
	s.cancel = func() { stop(); cancel() }
	s.wr = flight.NewRecordWriter(s.put, ipc.WithSchema(schema))
	s.wr.SetFlightDescriptor(desc)
	return nil
}

// finishPut ends the DoPut and reads the upstream's answer.
func (s *stream) finishPut() error {
	defer s.cancel()
	werr := s.wr.Close()
	if err := s.put.CloseSend(); err != nil && werr == nil {
		werr = err
	}
	var err error
	for {
		var res *pb.PutResult
		if res, err = s.put.Recv(); err != nil {
			break
		}
		_ = res
	}
	if errors.Is(err, io.EOF) {
		err = nil
		if werr != nil && !errors.Is(werr, io.EOF) {
			err = werr
		}
	}
	s.p.remote.Record(err)
	return s.x.conn.classify(err, "ingest into "+s.t.String())
}

// descriptor is the DoPut descriptor of a Flight SQL command.
func descriptor(cmd proto.Message) (*flight.FlightDescriptor, error) {
	a, err := anypb.New(cmd)
	if err != nil {
		return nil, err
	}
	b, err := proto.Marshal(a)
	if err != nil {
		return nil, err
	}
	return &flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: b}, nil
}

// insert executes the stream's prepared INSERT with batch as its
// parameter rows.
func (s *stream) insert(ctx context.Context, batch arrow.RecordBatch) error {
	if s.prep == nil {
		c, _ := s.p.cachedCaps()
		cols := make([]string, batch.NumCols())
		marks := make([]string, batch.NumCols())
		for i, f := range batch.Schema().Fields() {
			cols[i], marks[i] = quoteIdent(c.quote, f.Name), "?"
		}
		q := fmt.Sprintf("INSERT INTO %s (%s) VALUES (%s)", s.name, strings.Join(cols, ", "), strings.Join(marks, ", "))
		prep, err := call(ctx, s.x.conn, false, "prepare an INSERT into "+s.t.String(), func(ctx context.Context) (*fsql.PreparedStatement, error) {
			return s.x.txn.Prepare(ctx, q)
		})
		if err != nil {
			return err
		}
		s.prep = prep
	}
	s.prep.SetParameters(batch)
	_, err := call(ctx, s.x.conn, false, "insert into "+s.t.String(), func(ctx context.Context) (int64, error) {
		return s.prep.ExecuteUpdate(ctx)
	})
	return err
}

// Close implements catalogs.WriteStream: the upload ends, and the receipt
// names the unit of work; nothing is visible until it commits (but with
// an auto-commit upstream, where it is now).
func (s *stream) Close(ctx context.Context) ([]catalogs.WriteReceipt, error) {
	if s.aborted {
		return nil, catalogs.Errorf(catalogs.ErrFailedPrecondition, "table %s: stream was aborted", s.t)
	}
	if s.closed {
		return nil, catalogs.Errorf(catalogs.ErrFailedPrecondition, "table %s: stream is closed", s.t)
	}
	s.closed = true
	var err error
	if s.replace && s.put == nil {
		// A replace with no rows still replaces: an ingest of none, in
		// the table's columns (the write's, which txn checked).
		err = s.emptyReplace(ctx)
	}
	switch {
	case err != nil:
	case s.put != nil:
		err = s.finishPut()
	case s.prep != nil:
		_ = s.prep.Close(ctx)
	}
	if err != nil {
		s.doom("an upload failed: " + err.Error())
		return nil, err
	}
	raw, _ := json.Marshal(receiptMeta{Unit: s.x.key, Auto: s.x.txn == nil, Schema: s.schema, Table: s.t.Name, Stream: s.n, Replace: s.replace})
	return []catalogs.WriteReceipt{{Metadata: raw, RowCount: s.rows, ByteCount: s.bytes}}, nil
}

// emptyReplace opens the DoPut of a replace that got no batch.
func (s *stream) emptyReplace(ctx context.Context) error {
	spec, err := s.p.GetTableSpec(ctx, s.t)
	if err != nil {
		return err
	}
	return s.openPut(ctx, spec.Schema, ingestReplace)
}

// Abort implements catalogs.WriteStream: the upload is cut and the whole
// upstream transaction rolled back, so nothing of the unit of work lands
// (its commit then fails ErrFailedPrecondition).
func (s *stream) Abort(ctx context.Context) error {
	if s.closed || s.aborted {
		return nil
	}
	s.aborted = true
	if s.cancel != nil {
		s.cancel()
	}
	if s.prep != nil {
		_ = s.prep.Close(context.WithoutCancel(ctx))
	}
	s.doom("a stream of the unit of work was aborted")
	if s.x.txn != nil {
		s.p.endTxn(context.WithoutCancel(ctx), s.x, false)
	}
	return nil
}

// parseReceipts reads the receipts of table t: all of one unit of work.
func parseReceipts(t catalogs.TableIdent, schema string, rs []catalogs.WriteReceipt) ([]receiptMeta, error) {
	out := make([]receiptMeta, len(rs))
	for i, r := range rs {
		m := &out[i]
		if err := json.Unmarshal(r.Metadata, m); err != nil || m.Unit == "" {
			return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: receipt %d is not one of this catalog's", t, i)
		}
		switch {
		case m.Schema != schema || m.Table != t.Name:
			return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: receipt %d is of table %s.%s", t, i, m.Schema, m.Table)
		case m.Unit != out[0].Unit:
			return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: receipts of two upstream transactions cannot commit as one", t)
		}
	}
	return out, nil
}

// endTxn ends x upstream (EndTransaction COMMIT or ROLLBACK), once; its
// outcome is kept for the other tables of the unit of work. The caller
// holds no lock of x.
func (p *Provider) endTxn(ctx context.Context, x *upTxn, commit bool) (catalogs.CommitOutcome, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.done {
		return x.out, x.err
	}
	if commit && x.doomed != "" {
		commit = false
		x.err = catalogs.Errorf(catalogs.ErrFailedPrecondition, "the upstream transaction cannot commit: %s (it was rolled back)", x.doomed)
	}
	if !commit && x.err == nil {
		x.err = catalogs.Errorf(catalogs.ErrFailedPrecondition, "the upstream transaction was rolled back: %s", x.doomed)
	}
	x.done = true
	defer p.forget(x)
	if x.txn == nil {
		if x.conn != p.main {
			_ = x.conn.close() // a forwarded caller's
		}
		x.out = catalogs.CommitOutcome{CommittedAt: time.Now().UTC()}
		return x.out, x.err
	}
	what := "commit the transaction"
	if !commit {
		what = "roll the transaction back"
	}
	defer func() { _ = x.conn.close() }()
	_, err := call(ctx, x.conn, false, what, func(ctx context.Context) (struct{}, error) {
		if commit {
			return struct{}{}, x.txn.Commit(ctx)
		}
		return struct{}{}, x.txn.Rollback(ctx)
	})
	switch {
	case err != nil && commit:
		// Flight SQL has no way to ask whether a transaction committed:
		// an unanswered commit stays unknown (ErrUnavailable).
		x.err = err
	case err != nil:
		p.log.Warn("upstream rollback", "err", err)
	case commit:
		x.out = catalogs.CommitOutcome{CommittedAt: time.Now().UTC()}
	}
	return x.out, x.err
}

// Commit implements catalogs.Provider: the unit of work's upstream
// transaction commits (EndTransaction COMMIT) with the first table's
// commit; the other tables of the unit of work find it committed. A unit
// of work one of whose streams aborted or failed is rolled back instead
// and fails ErrFailedPrecondition.
func (p *Provider) Commit(ctx context.Context, t catalogs.TableIdent, rs []catalogs.WriteReceipt) (catalogs.CommitOutcome, error) {
	schema, err := p.schemaOf(t)
	if err != nil {
		return catalogs.CommitOutcome{}, err
	}
	metas, err := parseReceipts(t, schema, rs)
	if err != nil {
		return catalogs.CommitOutcome{}, err
	}
	if len(metas) == 0 {
		return catalogs.CommitOutcome{CommittedAt: time.Now().UTC()}, nil
	}
	x := p.byKey(metas[0].Unit)
	if x == nil {
		return catalogs.CommitOutcome{}, catalogs.Errorf(catalogs.ErrFailedPrecondition, "table %s: the upstream transaction of the receipts is not open in this gateway (it ended, or this process restarted)", t)
	}
	out, err := p.endTxn(ctx, x, true)
	if err != nil {
		return out, fmt.Errorf("table %s: %w", t, err)
	}
	return out, nil
}

// CommitOverwrite implements catalogs.Overwriter: the replace happened
// upstream as the stream wrote (WriteTxn.Replace: an ingest with
// TABLE_EXISTS_OPTION_REPLACE in the upstream transaction), and lands
// with the transaction's commit, as Commit. Receipts with no replace
// stream among them are refused: the upstream could not replace after
// the fact. The table's spec is read again: the upstream's replace may
// have recreated the table with the upload's types.
func (p *Provider) CommitOverwrite(ctx context.Context, t catalogs.TableIdent, _ string, rs []catalogs.WriteReceipt) (catalogs.CommitOutcome, error) {
	schema, err := p.schemaOf(t)
	if err != nil {
		return catalogs.CommitOutcome{}, err
	}
	metas, err := parseReceipts(t, schema, rs)
	if err != nil {
		return catalogs.CommitOutcome{}, err
	}
	if !slices.ContainsFunc(metas, func(m receiptMeta) bool { return m.Replace }) {
		return catalogs.CommitOutcome{}, catalogs.Errorf(catalogs.ErrFailedPrecondition,
			"table %s: catalog %q replaces a table as its stream writes (opened with WriteTxn.Replace); these receipts' streams appended", t, p.name)
	}
	defer p.forgetSpec(t)
	return p.Commit(ctx, t, rs)
}

func (p *Provider) byKey(key string) *upTxn {
	p.mu.Lock()
	defer p.mu.Unlock()
	if x, ok := p.txns[key]; ok {
		return x
	}
	if x, ok := p.ended[key]; ok {
		return x
	}
	return nil
}

// Discard implements catalogs.Discarder: the unit of work's upstream
// transaction is rolled back. Receipts of an auto-commit upstream cannot
// be undone: their data landed when their streams ended.
func (p *Provider) Discard(ctx context.Context, t catalogs.TableIdent, rs []catalogs.WriteReceipt) error {
	schema, err := p.schemaOf(t)
	if err != nil {
		return err
	}
	metas, err := parseReceipts(t, schema, rs)
	if err != nil || len(metas) == 0 {
		return err
	}
	if metas[0].Auto {
		p.log.Warn("discard of auto-commit writes: the upstream has no transactions, the data have landed", "table", t.String())
	}
	if x := p.byKey(metas[0].Unit); x != nil {
		x.mu.Lock()
		if replacedLater(x, t, metas) {
			// A replace later in the unit of work supersedes these
			// streams (txn discards what it superseded): the upstream's
			// replace removed their rows inside its transaction, which
			// must go on.
			x.mu.Unlock()
			return nil
		}
		if x.doomed == "" {
			x.doomed = "the unit of work was discarded"
		}
		x.mu.Unlock()
		p.endTxn(ctx, x, false)
	}
	return nil
}

// replacedLater tells whether every stream of metas came before the last
// replace of table t in x. The caller holds x.mu.
func replacedLater(x *upTxn, t catalogs.TableIdent, metas []receiptMeta) bool {
	last, ok := x.replaced[t.Key()]
	if !ok || x.done {
		return false
	}
	for _, m := range metas {
		if m.Stream >= last {
			return false
		}
	}
	return true
}

// WriteBatch implements catalogs.Provider: one batch in a unit of work of
// its own, committed by Commit with its receipt.
func (p *Provider) WriteBatch(ctx context.Context, t catalogs.TableIdent, batch arrow.RecordBatch) (catalogs.WriteReceipt, error) {
	ws, err := p.OpenStream(ctx, t, catalogs.WriteTxn{ID: randomID()})
	if err != nil {
		return catalogs.WriteReceipt{}, err
	}
	if err := ws.Write(ctx, batch); err != nil {
		_ = ws.Abort(ctx)
		return catalogs.WriteReceipt{}, err
	}
	rs, err := ws.Close(ctx)
	if err != nil {
		return catalogs.WriteReceipt{}, err
	}
	return rs[0], nil
}

// CheckTableOptions implements catalogs.TableManager: a bulk ingest
// carries no table options, so every option is refused naming it.
func (p *Provider) CheckTableOptions(t catalogs.TableIdent, _ *arrow.Schema, opts map[string]string) error {
	for _, k := range slices.Sorted(maps.Keys(opts)) {
		return catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: table option %q: catalog %q (an upstream Flight SQL server) takes no table options", t, k, p.name)
	}
	return nil
}

// CreateTable implements catalogs.TableManager: a bulk ingest of no rows
// that creates the table (outside any transaction: the upstream's DDL).
func (p *Provider) CreateTable(ctx context.Context, t catalogs.TableIdent, schema *arrow.Schema, opts map[string]string) (catalogs.TableSpec, error) {
	if err := p.CheckTableOptions(t, schema, opts); err != nil {
		return catalogs.TableSpec{}, err
	}
	name, err := p.upstreamName(ctx, t)
	if err != nil {
		return catalogs.TableSpec{}, err
	}
	if schema == nil || schema.NumFields() == 0 {
		return catalogs.TableSpec{}, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: a table needs at least one column", t)
	}
	c, _ := p.cachedCaps()
	if !c.ingest || c.readOnly {
		return catalogs.TableSpec{}, p.lacks(c, "creating tables (bulk ingest)", &t)
	}
	ns, _ := p.schemaOf(t)
	s := &stream{p: p, x: &upTxn{conn: p.main}, t: t, schema: ns, name: name, via: viaIngest}
	// The DDL as the caller when the token is forwarded; the new table's
	// metadata is read as the catalog.
	cctx, err := p.asCaller(ctx)
	if err != nil {
		return catalogs.TableSpec{}, err
	}
	if err := s.openPut(cctx, schema, ingestCreate); err != nil {
		return catalogs.TableSpec{}, err
	}
	if err := s.finishPut(); err != nil {
		return catalogs.TableSpec{}, err
	}
	p.log.Info("created table upstream", "table", t.String())
	p.forgetSpec(t)
	return p.GetTableSpec(ctx, t)
}

// DropTable implements catalogs.TableManager with the upstream's SQL.
func (p *Provider) DropTable(ctx context.Context, t catalogs.TableIdent) error {
	if _, err := p.GetTableSpec(ctx, t); err != nil {
		return err
	}
	name, err := p.upstreamName(ctx, t)
	if err != nil {
		return err
	}
	if ctx, err = p.asCaller(ctx); err != nil {
		return err
	}
	defer p.forgetSpec(t)
	_, err = call(ctx, p.main, false, "drop table "+t.String(), func(ctx context.Context) (int64, error) {
		return p.main.client.ExecuteUpdate(ctx, "DROP TABLE "+name)
	})
	return err
}

// randomID is a fresh unit-of-work id.
func randomID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
