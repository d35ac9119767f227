package catalogtest_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/flightgw/flightgw/catalogs"
)

// mem is the suite's second backend, a test double that is nothing like
// Iceberg: tables live in memory (no files), commits apply under one
// mutex (no compare-and-swap, no retries), columns have no field ids and
// tables no snapshots. Its variants (batchMem, txnMem, multiMem) differ in
// the optional write interfaces they offer; every variant records what
// the gateway asked of it, so the end-to-end test can check the write
// path from the backend's side.
type mem struct {
	name string
	// flaw breaks the backend in one named way, to prove that the suite
	// catches it (see TestSuiteCatchesFlaws).
	flaw string

	mu     sync.Mutex
	tables map[string]*memTable // by TableIdent.Key
	staged map[string]*memStaged
	txns   map[string]*memTxn // by table key and WriteTxn.ID
	seq    int
	offset time.Duration // the backend's clock is the wall clock plus offset
	cred   catalogs.CatalogCredential
	mints  int
	calls  memCalls
}

// credentialTTL is how long a credential the double hands out lives.
const credentialTTL = 15 * time.Minute

// memCalls is what the gateway asked of the double.
type memCalls struct {
	writeBatches int
	commits      []memCommit
	discards     int
}

// memCommit is one commit call that landed.
type memCommit struct {
	table    string
	commitID string
	receipts int
	rows     uint64
	txns     []string // the backend transactions it committed
}

type memTable struct {
	ident   catalogs.TableIdent
	schema  *arrow.Schema
	rows    []arrow.RecordBatch
	commits map[string]memLanded
	// referenced holds the metadata of every receipt ever committed
	// (catalogs.ReceiptChecker.CheckUnreferenced: current or overwritten data alike).
	referenced map[string]bool
}

// memLanded is a landed commit: its record and which receipts it held.
type memLanded struct {
	rec      catalogs.CommitRecord
	receipts string
}

// memStaged is one WriteBatch's staged batch.
type memStaged struct {
	table *memTable
	batch arrow.RecordBatch
	// schema is the table's schema after an overwrite commits the batch:
	// a replace stream's (catalogs.SchemaReplacer); nil for the table's.
	schema *arrow.Schema
}

// memTxn is one backend transaction: every stream one unit of work
// (WriteTxn.ID) opened on one table.
type memTxn struct {
	w       catalogs.WriteTxn
	table   *memTable
	streams []*memStream
	doomed  bool
	state   string // open, committed, discarded
	// commitIDs are the ids it was committed with (once, if all is well).
	commitIDs []string
}

// memReceipt is the double's receipt metadata: a staged batch, or a
// stream of a backend transaction.
type memReceipt struct {
	Mem    string `json:"mem"`
	Txn    string `json:"txn,omitempty"`
	Stream int    `json:"stream,omitempty"`
}

var _ interface {
	catalogs.Provider
	catalogs.IdempotentCommitter
	catalogs.Overwriter
	catalogs.Discarder
	catalogs.TableManager
	catalogs.Lister
	catalogs.Scanner
} = (*mem)(nil)

func newMem(name string) *mem {
	return &mem{name: name, tables: map[string]*memTable{}, staged: map[string]*memStaged{}, txns: map[string]*memTxn{}}
}

// batchMem is the double with no stream writer: the gateway writes to it
// with WriteBatch, one receipt per batch.
type batchMem struct{ *mem }

// txnMem is the double whose writes go into a backend transaction per
// unit of work (catalogs.StreamWriter), like StarRocks Stream Load.
type txnMem struct{ *mem }

// multiMem is the double that commits several tables atomically.
type multiMem struct{ *mem }

var (
	_ catalogs.StreamWriter        = txnMem{}
	_ catalogs.MultiTableCommitter = multiMem{}
)

func (m *mem) now() time.Time { return time.Now().Add(m.clock()) }

func (m *mem) clock() time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.offset
}

// advance moves the double's clock forward.
func (m *mem) advance(d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.offset += d
}

func (m *mem) nextID(prefix string) string {
	m.seq++
	return fmt.Sprintf("%s-%d", prefix, m.seq)
}

// table finds a table; the caller holds mu.
func (m *mem) table(t catalogs.TableIdent) (*memTable, error) {
	if err := t.Validate(); err != nil {
		return nil, err
	}
	tbl, ok := m.tables[t.Key()]
	if !ok {
		return nil, catalogs.Errorf(catalogs.ErrNotFound, "table %s does not exist", t)
	}
	return tbl, nil
}

// GetTableSpec implements catalogs.Provider: the schema, with field
// metadata but no field ids, and no snapshot.
func (m *mem) GetTableSpec(_ context.Context, t catalogs.TableIdent) (catalogs.TableSpec, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	tbl, err := m.table(t)
	if err != nil {
		return catalogs.TableSpec{}, err
	}
	return specOf(tbl.schema), nil
}

func specOf(s *arrow.Schema) catalogs.TableSpec {
	spec := catalogs.TableSpec{Schema: s, Properties: map[string]string{}}
	for _, f := range s.Fields() {
		spec.SchemaSpec.Fields = append(spec.SchemaSpec.Fields, catalogs.FieldMetadata{Name: f.Name, DataType: f.Type, Nullable: f.Nullable})
	}
	return spec
}

// conform checks batch against the table's schema and returns it with the
// table's columns, in the table's order (a new reference).
func conform(tbl *memTable, batch arrow.RecordBatch) (arrow.RecordBatch, error) {
	name := tbl.ident.String()
	if batch == nil {
		return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: batch is nil", name)
	}
	in := batch.Schema()
	for _, f := range in.Fields() {
		if len(in.FieldIndices(f.Name)) > 1 {
			return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: column %q appears twice", name, f.Name)
		}
		if tbl.schema.FieldIndices(f.Name) == nil {
			return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: column %q is not in the table", name, f.Name)
		}
	}
	cols := make([]arrow.Array, 0, tbl.schema.NumFields())
	for _, f := range tbl.schema.Fields() {
		idx := in.FieldIndices(f.Name)
		if idx == nil {
			return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: column %q is missing", name, f.Name)
		}
		col := batch.Column(idx[0])
		if !arrow.TypeEqual(col.DataType(), f.Type) {
			return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: column %q is %s, the table's is %s", name, f.Name, col.DataType(), f.Type)
		}
		if !f.Nullable && col.NullN() > 0 {
			return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: column %q holds a null but is required", name, f.Name)
		}
		cols = append(cols, col)
	}
	return array.NewRecordBatch(tbl.schema, cols, batch.NumRows()), nil
}

func byteCount(b arrow.RecordBatch) uint64 {
	var n uint64
	for _, c := range b.Columns() {
		for _, buf := range c.Data().Buffers() {
			if buf != nil {
				n += uint64(buf.Len())
			}
		}
	}
	return n
}

func receipt(r memReceipt, b arrow.RecordBatch) catalogs.WriteReceipt {
	raw, _ := json.Marshal(r) // a struct of strings and ints always marshals
	return catalogs.WriteReceipt{Metadata: raw, RowCount: uint64(b.NumRows()), ByteCount: byteCount(b)}
}

// WriteBatch implements catalogs.Provider: the batch is kept, invisible,
// until a commit names its receipt.
func (m *mem) WriteBatch(_ context.Context, t catalogs.TableIdent, batch arrow.RecordBatch) (catalogs.WriteReceipt, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	tbl, err := m.table(t)
	if err != nil {
		return catalogs.WriteReceipt{}, err
	}
	b, err := conform(tbl, batch)
	if err != nil {
		return catalogs.WriteReceipt{}, err
	}
	m.calls.writeBatches++
	if m.flaw == "visible-before-commit" {
		tbl.rows = append(tbl.rows, b)
	}
	id := m.nextID("batch")
	m.staged[id] = &memStaged{table: tbl, batch: b}
	return receipt(memReceipt{Mem: id}, b), nil
}

// parse reads the double's receipts.
func parse(t catalogs.TableIdent, rs []catalogs.WriteReceipt) ([]memReceipt, error) {
	out := make([]memReceipt, len(rs))
	for i, r := range rs {
		if err := json.Unmarshal(r.Metadata, &out[i]); err != nil || out[i].Mem == "" {
			return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: receipt %d is not one of this catalog's", t, i)
		}
	}
	return out, nil
}

// memPlan is what a commit of one table will apply.
type memPlan struct {
	tbl      *memTable
	commitID string
	key      string
	batches  []arrow.RecordBatch
	staged   []string
	txns     []*memTxn
	rows     uint64
	metas    []string // the receipts' metadata
	// schema is the replace streams' schema, nil for the table's.
	schema *arrow.Schema
}

// prepare checks a commit of receipts to t; landed is set when commitID
// has already landed there. The caller holds mu.
func (m *mem) prepare(t catalogs.TableIdent, commitID string, rs []catalogs.WriteReceipt) (p memPlan, landed *memLanded, err error) {
	tbl, err := m.table(t)
	if err != nil {
		return p, nil, err
	}
	p = memPlan{tbl: tbl, commitID: commitID, key: receiptsKey(rs)}
	if l, ok := tbl.commits[commitID]; ok && commitID != "" {
		return p, &l, nil
	}
	mrs, err := parse(t, rs)
	if err != nil {
		return p, nil, err
	}
	for _, r := range rs {
		p.metas = append(p.metas, string(r.Metadata))
	}
	for _, r := range mrs {
		if r.Txn == "" {
			s, ok := m.staged[r.Mem]
			if !ok || s.table != tbl {
				return p, nil, catalogs.Errorf(catalogs.ErrFailedPrecondition, "table %s: staged batch %s was committed or discarded", t, r.Mem)
			}
			p.staged = append(p.staged, r.Mem)
			p.batches = append(p.batches, s.batch)
			if s.schema != nil {
				p.schema = s.schema
			}
			p.rows += uint64(s.batch.NumRows())
			continue
		}
		x, ok := m.txns[t.Key()+"\x00"+r.Txn]
		switch {
		case !ok || x.table != tbl:
			return p, nil, catalogs.Errorf(catalogs.ErrFailedPrecondition, "table %s: no backend transaction %s", t, r.Txn)
		case x.doomed && m.flaw != "abort-ignored":
			return p, nil, catalogs.Errorf(catalogs.ErrFailedPrecondition, "table %s: backend transaction %s has an aborted stream and cannot commit", t, r.Txn)
		case x.state != "open":
			return p, nil, catalogs.Errorf(catalogs.ErrFailedPrecondition, "table %s: backend transaction %s is %s", t, r.Txn, x.state)
		case r.Stream < 1 || r.Stream > len(x.streams) || !x.streams[r.Stream-1].closed:
			return p, nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: receipt names no closed stream of transaction %s", t, r.Txn)
		}
		for _, b := range x.streams[r.Stream-1].batches {
			p.batches = append(p.batches, b)
			p.rows += uint64(b.NumRows())
		}
		if !slices.Contains(p.txns, x) {
			p.txns = append(p.txns, x)
		}
	}
	return p, nil, nil
}

// receiptsKey identifies a set of receipts, to tell a repeated commit
// from another writer's with the same commit id.
func receiptsKey(rs []catalogs.WriteReceipt) string {
	keys := make([]string, len(rs))
	for i, r := range rs {
		keys[i] = string(r.Metadata)
	}
	slices.Sort(keys)
	return strings.Join(keys, "\n")
}

// apply lands a prepared commit; the caller holds mu.
func (m *mem) apply(p memPlan, overwrite bool, now time.Time) catalogs.CommitOutcome {
	if overwrite {
		p.tbl.rows = nil
		if p.schema != nil && m.flaw != "replace-keeps-schema" {
			p.tbl.schema = p.schema
		}
		if m.flaw == "refs-current-only" {
			p.tbl.referenced = nil
		}
	}
	if p.tbl.referenced == nil {
		p.tbl.referenced = map[string]bool{}
	}
	for _, meta := range p.metas {
		p.tbl.referenced[meta] = true
	}
	p.tbl.rows = append(p.tbl.rows, p.batches...)
	for _, id := range p.staged {
		delete(m.staged, id)
	}
	var txns []string
	for _, x := range p.txns {
		x.state = "committed"
		x.commitIDs = append(x.commitIDs, p.commitID)
		txns = append(txns, x.w.ID)
	}
	out := catalogs.CommitOutcome{CommittedAt: now.UTC()}
	if m.flaw == "retries-without-cas" {
		out.Retried = 1
	}
	if p.commitID != "" {
		p.tbl.commits[p.commitID] = memLanded{rec: catalogs.CommitRecord{Outcome: out, RowCount: p.rows}, receipts: p.key}
	}
	m.calls.commits = append(m.calls.commits, memCommit{table: p.tbl.ident.Name, commitID: p.commitID,
		receipts: len(p.staged) + len(p.txns), rows: p.rows, txns: txns})
	return out
}

func (m *mem) commit(t catalogs.TableIdent, commitID string, rs []catalogs.WriteReceipt, overwrite bool) (catalogs.CommitOutcome, error) {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	p, landed, err := m.prepare(t, commitID, rs)
	if err != nil {
		return catalogs.CommitOutcome{}, err
	}
	if landed != nil {
		out := landed.rec.Outcome
		out.Duplicate = landed.receipts != p.key
		return out, nil
	}
	return m.apply(p, overwrite, now), nil
}

// Commit implements catalogs.Provider.
func (m *mem) Commit(_ context.Context, t catalogs.TableIdent, rs []catalogs.WriteReceipt) (catalogs.CommitOutcome, error) {
	return m.commit(t, "", rs, false)
}

// CommitOnce implements catalogs.IdempotentCommitter.
func (m *mem) CommitOnce(_ context.Context, t catalogs.TableIdent, commitID string, rs []catalogs.WriteReceipt) (catalogs.CommitOutcome, error) {
	return m.commit(t, commitID, rs, false)
}

// CommitOverwrite implements catalogs.Overwriter.
func (m *mem) CommitOverwrite(_ context.Context, t catalogs.TableIdent, commitID string, rs []catalogs.WriteReceipt) (catalogs.CommitOutcome, error) {
	return m.commit(t, commitID, rs, true)
}

// FindCommit implements catalogs.IdempotentCommitter.
func (m *mem) FindCommit(_ context.Context, t catalogs.TableIdent, commitID string) (catalogs.CommitRecord, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	tbl, err := m.table(t)
	if err != nil {
		return catalogs.CommitRecord{}, false, err
	}
	l, ok := tbl.commits[commitID]
	return l.rec, ok, nil
}

// MatchCommit implements catalogs.CommitMatcher: a landed commit id is
// the same commit when it landed with exactly these receipts.
func (m *mem) MatchCommit(_ context.Context, t catalogs.TableIdent, commitID string, rs []catalogs.WriteReceipt) (catalogs.CommitRecord, bool, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	tbl, err := m.table(t)
	if err != nil {
		return catalogs.CommitRecord{}, false, false, err
	}
	l, ok := tbl.commits[commitID]
	if !ok {
		return catalogs.CommitRecord{}, false, false, nil
	}
	return l.rec, true, l.receipts == receiptsKey(rs) || m.flaw == "match-ignores-files", nil
}

// Discard implements catalogs.Discarder: staged batches are dropped, and
// a backend transaction is rolled back whole.
func (m *mem) Discard(_ context.Context, t catalogs.TableIdent, rs []catalogs.WriteReceipt) error {
	mrs, err := parse(t, rs)
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls.discards++
	for _, r := range mrs {
		if r.Txn == "" {
			delete(m.staged, r.Mem)
			continue
		}
		if x, ok := m.txns[t.Key()+"\x00"+r.Txn]; ok && x.state == "open" {
			x.state = "discarded"
			for _, s := range x.streams {
				s.batches = nil
			}
		}
	}
	return nil
}

// CheckTableOptions implements catalogs.TableManager: the double takes
// no table options.
func (m *mem) CheckTableOptions(t catalogs.TableIdent, _ *arrow.Schema, opts map[string]string) error {
	for _, k := range slices.Sorted(maps.Keys(opts)) {
		return catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: option %q: catalog %q takes no table options", t, k, m.name)
	}
	return nil
}

// CreateTable implements catalogs.TableManager; the double stores every
// Arrow type.
func (m *mem) CreateTable(_ context.Context, t catalogs.TableIdent, schema *arrow.Schema, opts map[string]string) (catalogs.TableSpec, error) {
	if err := m.CheckTableOptions(t, schema, opts); err != nil {
		return catalogs.TableSpec{}, err
	}
	return m.create(t, schema)
}

// create creates a table.
func (m *mem) create(t catalogs.TableIdent, schema *arrow.Schema) (catalogs.TableSpec, error) {
	if err := t.Validate(); err != nil {
		return catalogs.TableSpec{}, err
	}
	if !slices.Equal(t.Namespace, []string{"default"}) {
		return catalogs.TableSpec{}, catalogs.Errorf(catalogs.ErrNotFound, "table %s: namespace %v does not exist", t, t.Namespace)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.tables[t.Key()]; ok {
		return catalogs.TableSpec{}, catalogs.Errorf(catalogs.ErrAlreadyExists, "table %s already exists", t)
	}
	m.tables[t.Key()] = &memTable{ident: t, schema: schema, commits: map[string]memLanded{}}
	return specOf(schema), nil
}

// DropTable implements catalogs.TableManager.
func (m *mem) DropTable(_ context.Context, t catalogs.TableIdent) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, err := m.table(t); err != nil {
		return err
	}
	delete(m.tables, t.Key())
	return nil
}

// ListNamespaces implements catalogs.Lister: the double has one.
func (m *mem) ListNamespaces(context.Context) ([][]string, error) {
	return [][]string{{"default"}}, nil
}

// ListTables implements catalogs.Lister.
func (m *mem) ListTables(_ context.Context, ns []string) ([]catalogs.TableIdent, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []catalogs.TableIdent
	for _, tbl := range m.tables {
		if slices.Equal(tbl.ident.Namespace, ns) {
			out = append(out, tbl.ident)
		}
	}
	slices.SortFunc(out, func(a, b catalogs.TableIdent) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// Scan implements catalogs.Scanner: the committed rows with the columns
// asked for; filters are left to the engine.
func (m *mem) Scan(_ context.Context, t catalogs.TableIdent, req catalogs.ScanRequest) (*catalogs.ScanResult, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	tbl, err := m.table(t)
	if err != nil {
		return nil, err
	}
	if req.SnapshotID != nil {
		return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: catalog %q has no snapshots", t, m.name)
	}
	cols := req.Columns
	if cols == nil {
		for _, f := range tbl.schema.Fields() {
			cols = append(cols, f.Name)
		}
	}
	idx := make([]int, len(cols))
	fields := make([]arrow.Field, len(cols))
	for i, c := range cols {
		j := tbl.schema.FieldIndices(c)
		if j == nil {
			return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: column %q is not in the table", t, c)
		}
		idx[i], fields[i] = j[0], tbl.schema.Field(j[0])
	}
	out := arrow.NewSchema(fields, nil)
	batches := make([]arrow.RecordBatch, len(tbl.rows))
	for i, b := range tbl.rows {
		arrs := make([]arrow.Array, len(idx))
		for k, j := range idx {
			arrs[k] = b.Column(j)
		}
		batches[i] = array.NewRecordBatch(out, arrs, b.NumRows())
	}
	rdr, err := array.NewRecordReader(out, batches)
	for _, b := range batches {
		b.Release()
	}
	if err != nil {
		return nil, fmt.Errorf("table %s: scan: %w", t, err)
	}
	return &catalogs.ScanResult{Reader: rdr}, nil
}

// GetSecurityContext implements catalogs.Provider: a token that expires
// after credentialTTL by the double's clock, replaced once it has.
func (m *mem) GetSecurityContext(_ context.Context, t catalogs.TableIdent) (catalogs.SecurityContext, error) {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, err := m.table(t); err != nil {
		return catalogs.SecurityContext{}, err
	}
	if m.cred.Token.IsZero() || (m.cred.Expired(now) && m.flaw != "stale-credential") {
		b := make([]byte, 12)
		_, _ = rand.Read(b)
		m.mints++
		m.cred = catalogs.CatalogCredential{Token: catalogs.NewSecret("memtest-" + hex.EncodeToString(b)), ExpiresAt: now.Add(credentialTTL)}
	}
	scope := t
	cred := m.cred
	cred.Scope = catalogs.CredentialScope{Kind: catalogs.ScopeTableReadWrite, Table: &scope}
	sec := catalogs.SecurityContext{Encryption: catalogs.EncryptionLevel{Kind: catalogs.EncryptionNone}, Credentials: cred}
	if m.flaw == "token-in-key-metadata" {
		sec.Encryption = catalogs.EncryptionLevel{Kind: catalogs.EncryptionClientSide, KeyMetadata: map[string]string{"token": cred.Token.Reveal()}}
	}
	return sec, nil
}

// memStream is one stream of a backend transaction.
type memStream struct {
	m       *mem
	x       *memTxn
	n       int // 1-based index in the transaction
	batches []arrow.RecordBatch
	closed  bool
	aborted bool
}

// OpenStream implements catalogs.StreamWriter: every stream of one
// WriteTxn.ID on a table joins one backend transaction.
func (v txnMem) OpenStream(_ context.Context, t catalogs.TableIdent, w catalogs.WriteTxn) (catalogs.WriteStream, error) {
	m := v.mem
	m.mu.Lock()
	defer m.mu.Unlock()
	tbl, err := m.table(t)
	if err != nil {
		return nil, err
	}
	if w.ID == "" {
		return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: a write stream needs a unit of work", t)
	}
	key := t.Key() + "\x00" + w.ID
	x, ok := m.txns[key]
	if !ok || x.table != tbl {
		x = &memTxn{w: w, table: tbl, state: "open"}
		m.txns[key] = x
	}
	if x.state != "open" || x.doomed {
		return nil, catalogs.Errorf(catalogs.ErrFailedPrecondition, "table %s: backend transaction %s is %s", t, w.ID, x.state)
	}
	s := &memStream{m: m, x: x, n: len(x.streams) + 1}
	x.streams = append(x.streams, s)
	return s, nil
}

func (s *memStream) Write(_ context.Context, batch arrow.RecordBatch) error {
	s.m.mu.Lock()
	defer s.m.mu.Unlock()
	if s.closed || s.aborted || s.x.state != "open" {
		return catalogs.Errorf(catalogs.ErrFailedPrecondition, "table %s: stream of transaction %s has ended", s.x.table.ident, s.x.w.ID)
	}
	b, err := conform(s.x.table, batch)
	if err != nil {
		return err
	}
	s.batches = append(s.batches, b)
	return nil
}

func (s *memStream) Close(context.Context) ([]catalogs.WriteReceipt, error) {
	s.m.mu.Lock()
	defer s.m.mu.Unlock()
	if s.aborted {
		return nil, catalogs.Errorf(catalogs.ErrFailedPrecondition, "table %s: stream was aborted", s.x.table.ident)
	}
	s.closed = true
	var rows, bytes uint64
	for _, b := range s.batches {
		rows += uint64(b.NumRows())
		bytes += byteCount(b)
	}
	raw, _ := json.Marshal(memReceipt{Mem: "stream", Txn: s.x.w.ID, Stream: s.n})
	return []catalogs.WriteReceipt{{Metadata: raw, RowCount: rows, ByteCount: bytes}}, nil
}

func (s *memStream) Abort(context.Context) error {
	s.m.mu.Lock()
	defer s.m.mu.Unlock()
	if s.closed || s.aborted {
		return nil
	}
	s.aborted = true
	s.batches = nil
	s.x.doomed = true
	return nil
}

// CommitTables implements catalogs.MultiTableCommitter: every table is
// checked before any lands, under the one mutex.
func (v multiMem) CommitTables(_ context.Context, commitID string, tcs []catalogs.TableCommit) ([]catalogs.CommitOutcome, error) {
	m := v.mem
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	plans := make([]memPlan, len(tcs))
	outs := make([]catalogs.CommitOutcome, len(tcs))
	landed := 0
	for i, tc := range tcs {
		p, l, err := m.prepare(tc.Table, commitID, tc.Receipts)
		if err != nil {
			return nil, err
		}
		if l != nil {
			landed++
			outs[i] = l.rec.Outcome
			outs[i].Duplicate = l.receipts != p.key
		}
		plans[i] = p
	}
	if landed == len(tcs) {
		return outs, nil
	}
	if landed > 0 {
		return nil, catalogs.Errorf(catalogs.ErrFailedPrecondition, "commit %s landed on some tables only", commitID)
	}
	for i, p := range plans {
		outs[i] = m.apply(p, tcs[i].Mode == catalogs.ModeOverwrite, now)
	}
	return outs, nil
}

// txn returns the backend transaction of unit of work id on table name.
func (m *mem) txn(name, id string) *memTxn {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, x := range m.txns {
		if x.table.ident.Name == name && x.w.ID == id {
			return x
		}
	}
	return nil
}

// snapshot copies what the gateway asked of the double.
func (m *mem) snapshot() memCalls {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.calls
	c.commits = slices.Clone(c.commits)
	return c
}
