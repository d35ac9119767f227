package txn

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/internal/recovered"
)

// Mode says how a table's staged receipts land at commit.
type Mode int

const (
	// Append adds the staged files to the table.
	Append Mode = iota
	// Overwrite replaces all of the table's data with the staged files.
	Overwrite
)

// State of a transaction.
type State int

// Transaction states. A commit that fails leaves the transaction Open (its
// tables that landed stay landed), so that COMMIT can be retried or the
// rest rolled back.
const (
	Open State = iota
	Committed
	RolledBack
	Expired
	Committing
	// Prepared: ended by Prepare, its receipts handed to the caller.
	Prepared
)

func (s State) String() string {
	return [...]string{"open", "committed", "rolled back", "expired", "committing", "prepared"}[s]
}

// Staged is what one table has staged inside a transaction.
type Staged struct {
	Table    catalogs.TableIdent
	Provider catalogs.Provider
	Mode     Mode
	Receipts []catalogs.WriteReceipt
	// landed is set once the table's commit has landed (an earlier COMMIT
	// attempt that failed on a later table); it is never committed or
	// discarded again.
	landed bool
	// unknown is set when a commit attempt's outcome could not be told:
	// before its receipts are discarded the commit id is looked up again.
	unknown bool
	// commitID is the id its commit records.
	commitID string
	// snapshot is the snapshot its commit made, once landed.
	snapshot int64
	// created is set when a write of the transaction created the table:
	// a ROLLBACK drops it again (Manager.uncreate).
	created bool
	// create is set when the commit publishes the table too (a staged
	// create): before it lands the table does not exist.
	create *stagedCreate
}

// totals are the rows and bytes of receipts.
func totals(receipts []catalogs.WriteReceipt) (rows, bytes uint64) {
	for _, r := range receipts {
		rows += r.RowCount
		bytes += r.ByteCount
	}
	return rows, bytes
}

// Txn is one transaction. Its methods are safe for concurrent use.
type Txn struct {
	id      string
	owner   string
	session string
	// lastUsed is a UnixNano time, read without the lock by the manager.
	lastUsed atomic.Int64

	mu     sync.Mutex
	state  State
	tables []*Staged // in first-write order
	// orphanedAt is when the session the transaction is bound to ended
	// (the client's connection closed); zero while it lives.
	orphanedAt time.Time
}

// ID is the transaction id given to the client.
func (t *Txn) ID() string { return t.id }

// CommitID is the commit id every table of the transaction records.
func (t *Txn) CommitID() string { return "txn-" + t.id }

func (t *Txn) touch() { t.lastUsed.Store(time.Now().UnixNano()) }

func (t *Txn) used() time.Time { return time.Unix(0, t.lastUsed.Load()) }

// add joins receipts staged for table to the transaction. It fails with
// ErrFailedPrecondition when the transaction is not open (ended, or a
// COMMIT is under way); the caller then discards the receipts itself. With
// Overwrite, what the transaction had staged for the table before is
// superseded: add returns those receipts for the caller to discard.
func (t *Txn) add(table catalogs.TableIdent, p catalogs.Provider, mode Mode, receipts []catalogs.WriteReceipt, created bool) (superseded []catalogs.WriteReceipt, err error) {
	return t.addCreating(table, p, mode, receipts, created, nil)
}

// addCreating is add for a write whose receipts also publish the table
// (create, a staged create; nil for none).
func (t *Txn) addCreating(table catalogs.TableIdent, p catalogs.Provider, mode Mode, receipts []catalogs.WriteReceipt, created bool, create *stagedCreate) (superseded []catalogs.WriteReceipt, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.state != Open {
		return nil, catalogs.Errorf(catalogs.ErrFailedPrecondition, "transaction %s is %s", t.id, t.state)
	}
	t.touch()
	key := table.Key()
	for _, s := range t.tables {
		if s.Table.Key() != key {
			continue
		}
		if s.landed {
			return nil, catalogs.Errorf(catalogs.ErrFailedPrecondition,
				"transaction %s: table %s was already committed by an earlier COMMIT of this transaction", t.id, table)
		}
		if err := s.joinCreate(t.id, create); err != nil {
			return nil, err
		}
		s.created = s.created || created
		if mode == Overwrite {
			// A later replace supersedes what the transaction staged
			// before: those files must not land.
			old := s.Receipts
			s.Mode = Overwrite
			s.Receipts = append([]catalogs.WriteReceipt(nil), receipts...)
			return old, nil
		}
		s.Receipts = append(s.Receipts, receipts...)
		return nil, nil
	}
	t.tables = append(t.tables, &Staged{Table: table, Provider: p, Mode: mode,
		Receipts: append([]catalogs.WriteReceipt(nil), receipts...), commitID: t.CommitID(), created: created, create: create})
	return nil, nil
}

// StagedFor returns what the open transaction staged for table: its mode
// and a copy of its receipts; ok is false when it staged nothing for it
// or is no longer open.
func (t *Txn) StagedFor(table catalogs.TableIdent) (mode Mode, receipts []catalogs.WriteReceipt, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.state != Open {
		return Append, nil, false
	}
	key := table.Key()
	for _, s := range t.tables {
		if s.Table.Key() == key && !s.landed {
			return s.Mode, append([]catalogs.WriteReceipt(nil), s.Receipts...), true
		}
	}
	return Append, nil, false
}

// begin moves an open transaction to state (Committing, RolledBack or
// Expired) and returns what it staged.
func (t *Txn) begin(state State) ([]*Staged, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch t.state {
	case Open:
	case Committing:
		return nil, catalogs.Errorf(catalogs.ErrFailedPrecondition, "transaction %s: a COMMIT is under way", t.id)
	default:
		return nil, catalogs.Errorf(catalogs.ErrFailedPrecondition, "transaction %s is already %s", t.id, t.state)
	}
	t.state = state
	return t.tables, nil
}

// reopen moves a transaction whose COMMIT failed back to Open.
func (t *Txn) reopen() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.state = Open
	t.touch()
}

// setState ends a COMMIT.
func (t *Txn) setState(state State) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.state = state
}

// Manager creates, finds and ends transactions.
type Manager struct {
	idle   time.Duration
	orphan time.Duration
	log    *slog.Logger
	mu     sync.Mutex
	open   map[string]*Txn
	ended  map[string]endedTxn // tombstones, so a second EndTransaction gets a precise answer
	stop   chan struct{}
	done   chan struct{}
	closed bool
	obs    Observer
	// maintaining holds the keys of the tables a maintenance run is under
	// way on (maintain.go).
	maintaining sync.Map
	// keepEvery is how often the reaper refreshes the marks of the staged
	// creates open transactions hold (keepCreates); kept is when it last
	// did.
	keepEvery time.Duration
	kept      time.Time
}

type endedTxn struct {
	owner string
	state State
	at    time.Time
}

// DefaultIdleTimeout is how long an untouched transaction lives.
const DefaultIdleTimeout = 10 * time.Minute

// DefaultOrphanGrace is how long a transaction outlives the end of its
// session (a closed client connection) without being used by id. A client
// that reconnects and names the transaction id keeps it; one that went away
// does not hold staged files for the whole idle timeout.
const DefaultOrphanGrace = time.Minute

// Option configures a Manager.
type Option func(*Manager)

// WithOrphanGrace sets how long a transaction outlives its session
// (DefaultOrphanGrace when not positive).
func WithOrphanGrace(d time.Duration) Option {
	return func(m *Manager) {
		if d > 0 {
			m.orphan = d
		}
	}
}

// WithKeepEvery sets how often the marks of the staged creates open
// transactions hold are refreshed (catalogs.CreateKeepEvery when not
// positive).
func WithKeepEvery(d time.Duration) Option {
	return func(m *Manager) {
		if d > 0 {
			m.keepEvery = d
		}
	}
}

// NewManager starts a manager whose reaper rolls back transactions idle for
// longer than idle (DefaultIdleTimeout when zero). Close stops it.
func NewManager(idle time.Duration, log *slog.Logger, opts ...Option) *Manager {
	if idle <= 0 {
		idle = DefaultIdleTimeout
	}
	if log == nil {
		log = slog.Default()
	}
	m := &Manager{idle: idle, orphan: DefaultOrphanGrace, keepEvery: catalogs.CreateKeepEvery, log: log, open: map[string]*Txn{}, ended: map[string]endedTxn{},
		stop: make(chan struct{}), done: make(chan struct{}), obs: noObserver{}}
	for _, o := range opts {
		o(m)
	}
	go m.reap()
	return m
}

func newID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // crypto/rand never fails on supported platforms
	return hex.EncodeToString(b)
}

// Begin opens a transaction owned by owner and bound to session (empty for
// none), with a random id.
func (m *Manager) Begin(owner, session string) (*Txn, error) {
	return m.BeginWithID(newID(), owner, session)
}

// BeginWithID is Begin with the id given (a gateway in a cluster tags ids
// with its address); an id already in use is refused.
func (m *Manager) BeginWithID(id, owner, session string) (*Txn, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, catalogs.Errorf(catalogs.ErrUnavailable, "server is shutting down")
	}
	if _, ok := m.open[id]; ok || id == "" {
		return nil, catalogs.Errorf(catalogs.ErrAlreadyExists, "transaction id %s is already in use", printable(id))
	}
	if _, ok := m.ended[id]; ok {
		return nil, catalogs.Errorf(catalogs.ErrAlreadyExists, "transaction id %s is already in use", printable(id))
	}
	t := &Txn{id: id, owner: owner, session: session}
	t.touch()
	m.open[t.id] = t
	return t, nil
}

// Get returns the open transaction id of owner. An unknown id, or one of
// another owner, is ErrNotFound (the id of someone else's transaction does
// not exist for the caller); an ended one is ErrFailedPrecondition saying how it
// ended.
func (m *Manager) Get(owner, id string) (*Txn, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if t, ok := m.open[id]; ok && t.owner == owner {
		t.touch()
		return t, nil
	}
	if e, ok := m.ended[id]; ok && e.owner == owner {
		return nil, catalogs.Errorf(catalogs.ErrFailedPrecondition, "transaction %s is already %s", printable(id), e.state)
	}
	return nil, catalogs.Errorf(catalogs.ErrNotFound, "transaction %s not found", printable(id))
}

// printable bounds and sanitizes a client-supplied id for messages.
func printable(id string) string {
	if len(id) > 160 {
		id = id[:160] + "…"
	}
	return fmt.Sprintf("%q", id)
}

// ForSession returns the most recently begun open transaction of owner in
// session, if any.
func (m *Manager) ForSession(owner, session string) (*Txn, bool) {
	if session == "" {
		return nil, false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var best *Txn
	for _, t := range m.open {
		if t.owner == owner && t.session == session {
			if best == nil || t.used().After(best.used()) {
				best = t
			}
		}
	}
	return best, best != nil
}

// endedAs returns how the ended transaction id of owner ended, or Open
// when the manager has no record of it.
func (m *Manager) endedAs(owner, id string) State {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e, ok := m.ended[id]; ok && e.owner == owner {
		return e.state
	}
	return Open
}

func (m *Manager) retire(t *Txn, state State) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.open, t.id)
	m.ended[t.id] = endedTxn{owner: t.owner, state: state, at: time.Now()}
}

// Commit commits every table the transaction staged, under the commit id
// txn-<id>, and then ends it. Tables of one catalog that can commit
// several tables atomically (catalogs.MultiTableCommitter) commit in one
// catalog operation; otherwise each table commits in one snapshot, in
// first-write order, each with the landed-commit check.
//
// When a table's commit fails, the tables before it stay committed and
// the transaction stays open: COMMIT may be retried (what landed is found
// by its commit id and not applied twice) or the rest rolled back. Staged
// files are deleted only when their commit certainly did not land. COMMIT
// of a transaction that has already committed succeeds again, so a client
// that lost the reply can retry.
func (m *Manager) Commit(ctx context.Context, owner, id string) error {
	t, err := m.Get(owner, id)
	if err != nil {
		if m.endedAs(owner, id) == Committed {
			return nil
		}
		return err
	}
	staged, err := t.begin(Committing)
	if err != nil {
		return err
	}
	start := time.Now()
	if err := m.commitAll(ctx, t, staged); err != nil {
		t.reopen()
		return err
	}
	t.setState(Committed)
	m.retire(t, Committed)
	m.logCommitted(t, staged, time.Since(start))
	return nil
}

// logCommitted writes the one line of a committed transaction: what it
// wrote, how long the commit took, and each table's snapshot.
func (m *Manager) logCommitted(t *Txn, staged []*Staged, took time.Duration) {
	var rows, bytes uint64
	snaps := make([]string, len(staged))
	for i, s := range staged {
		r, b := totals(s.Receipts)
		rows, bytes = rows+r, bytes+b
		snaps[i] = fmt.Sprintf("%s@%d", s.Table, s.snapshot)
	}
	m.log.Info("transaction committed", "txn", t.id, "tables", len(staged), "rows", rows, "bytes", bytes,
		"duration", took, "snapshots", strings.Join(snaps, ","))
}

// commitAll commits what is not yet landed of staged.
func (m *Manager) commitAll(ctx context.Context, t *Txn, staged []*Staged) error {
	var pending []*Staged
	for _, s := range staged {
		if !s.landed {
			pending = append(pending, s)
		}
	}
	if mc, ok := oneMultiCommitter(pending); ok {
		outs, err := commitTables(ctx, mc, pending, t.CommitID())
		m.observeAll(pending, outs, err)
		if err != nil {
			for _, s := range pending {
				s.unknown = s.unknown || isUnknown(err)
			}
			return fmt.Errorf("transaction %s: atomic commit of %s failed, nothing committed; the transaction is still open (retry COMMIT or ROLLBACK): %w",
				t.id, listOrNone(names(pending)), err)
		}
		for i, s := range pending {
			m.landed(ctx, s, outs[i])
		}
		return nil
	}
	for i, s := range pending {
		out, err := commitStaged(ctx, s, t.CommitID())
		m.obs.Committed(s.Table, out, err)
		if err != nil {
			s.unknown = s.unknown || isUnknown(err)
			return fmt.Errorf("transaction %s: commit of %s failed (committed: %s; not committed: %s); the transaction is still open (retry COMMIT or ROLLBACK): %w",
				t.id, s.Table, listOrNone(landedNames(staged)), listOrNone(names(pending[i:])), err)
		}
		m.landed(ctx, s, out)
	}
	return nil
}

// landed records that s's commit landed; a Duplicate outcome (the commit
// id landed with other data) leaves s's own files unreferenced, so they
// are discarded.
func (m *Manager) landed(ctx context.Context, s *Staged, out catalogs.CommitOutcome) {
	s.landed, s.snapshot = true, out.SnapshotID
	if out.Duplicate {
		if err := discard(context.WithoutCancel(ctx), s.Provider, s.Table, s.Receipts); err != nil {
			m.log.Warn("discard receipts of a duplicate commit", "table", s.Table.String(), "err", err)
		}
	}
}

// oneMultiCommitter returns the atomic multi-table committer when every
// pending table belongs to one catalog that offers one, and there are at
// least two tables.
func oneMultiCommitter(pending []*Staged) (catalogs.MultiTableCommitter, bool) {
	if len(pending) < 2 {
		return nil, false
	}
	for _, s := range pending {
		if s.create != nil {
			return nil, false // a staged create publishes on its own
		}
	}
	mc, ok := pending[0].Provider.(catalogs.MultiTableCommitter)
	if !ok {
		return nil, false
	}
	for _, s := range pending[1:] {
		if s.Provider != pending[0].Provider {
			return nil, false
		}
	}
	return mc, true
}

func names(s []*Staged) []string {
	out := make([]string, len(s))
	for i, x := range s {
		out[i] = x.Table.String()
	}
	return out
}

func landedNames(s []*Staged) []string {
	var out []string
	for _, x := range s {
		if x.landed {
			out = append(out, x.Table.String())
		}
	}
	return out
}

func listOrNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// Rollback discards everything the transaction staged that has not
// landed. Tables that an earlier, partly failed COMMIT committed stay
// committed; the error says so. ROLLBACK of a transaction already rolled
// back (or expired) succeeds again.
func (m *Manager) Rollback(ctx context.Context, owner, id string) error {
	t, err := m.Get(owner, id)
	if err != nil {
		if st := m.endedAs(owner, id); st == RolledBack || st == Expired {
			return nil
		}
		return err
	}
	staged, err := t.begin(RolledBack)
	if err != nil {
		return err
	}
	m.retire(t, RolledBack)
	err = m.discardAll(ctx, staged)
	if done := landedNames(staged); len(done) > 0 {
		return errors.Join(catalogs.Errorf(catalogs.ErrFailedPrecondition,
			"transaction %s rolled back, but %s had already been committed by an earlier COMMIT and stay committed", t.id, listOrNone(done)), err)
	}
	return err
}

// discardAll deletes the staged files of every table whose commit did not
// land. A table whose commit outcome was unknown is looked up by its
// commit id first; if that cannot be told, its files are kept (the orphan
// reclaimer removes them once they are old enough and unreferenced).
func (m *Manager) discardAll(ctx context.Context, staged []*Staged) error {
	var errs []error
	for _, s := range staged {
		if s.landed {
			continue
		}
		if s.unknown {
			if landed, err := m.lookup(ctx, s); landed || err != nil {
				if err != nil {
					m.log.Warn("commit outcome unknown; staged files kept", "table", s.Table.String(), "err", err)
				}
				continue
			}
		}
		if err := discard(ctx, s.Provider, s.Table, s.Receipts); err != nil {
			m.log.Warn("discard staged files", "table", s.Table.String(), "receipts", len(s.Receipts), "err", err)
			errs = append(errs, err)
		}
		if s.created {
			// The transaction's create becomes visible only with its
			// COMMIT: rolled back, the table goes too.
			m.uncreate(ctx, s.Provider, s.Table)
		}
	}
	return errors.Join(errs...)
}

// lookup tells whether s's commit under the transaction's commit id
// landed after all.
func (m *Manager) lookup(ctx context.Context, s *Staged) (bool, error) {
	ic, ok := s.Provider.(catalogs.IdempotentCommitter)
	if !ok {
		return false, fmt.Errorf("table %s: the catalog cannot look commits up", s.Table)
	}
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), lookupTimeout)
	defer cancel()
	_, landed, err := ic.FindCommit(lctx, s.Table, s.commitID)
	if err != nil && s.create != nil && errors.Is(err, catalogs.ErrNotFound) {
		return false, nil // a staged create whose table does not exist did not land
	}
	return landed, err
}

// OpenCount returns the number of open transactions.
func (m *Manager) OpenCount() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.open)
}

func (m *Manager) reap() {
	defer close(m.done)
	tick := time.NewTicker(min(m.idle/4, m.orphan/4, m.keepEvery/2, 30*time.Second))
	defer tick.Stop()
	for {
		select {
		case <-m.stop:
			return
		case <-tick.C:
			// A panic while discarding one transaction's files is logged
			// (recovered.Catch) and the reaper goes on: it must not end
			// the process, nor stop reaping the others.
			func() {
				var err error
				defer recovered.Catch(&err, "transaction reaper")
				m.expireIdle(time.Now())
				m.keepCreates(time.Now())
			}()
		}
	}
}

// SessionEnded marks the open transactions bound to session as orphaned:
// unless used by id within the orphan grace, the reaper rolls them back.
func (m *Manager) SessionEnded(session string) {
	if session == "" {
		return
	}
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, t := range m.open {
		if t.session == session {
			t.mu.Lock()
			t.orphanedAt = now
			t.mu.Unlock()
		}
	}
}

// expireIdle rolls back transactions idle since before now-idle (or
// orphaned and unused for the orphan grace) and forgets tombstones older than an
// hour.
func (m *Manager) expireIdle(now time.Time) {
	m.mu.Lock()
	var stale []*Txn
	for _, t := range m.open {
		t.mu.Lock()
		limit := m.idle
		if !t.orphanedAt.IsZero() && !t.used().After(t.orphanedAt) {
			limit = min(limit, m.orphan)
		}
		if now.Sub(t.used()) > limit && t.state == Open {
			stale = append(stale, t)
		}
		t.mu.Unlock()
	}
	for id, e := range m.ended {
		if now.Sub(e.at) > time.Hour {
			delete(m.ended, id)
		}
	}
	m.mu.Unlock()
	for _, t := range stale {
		m.abort(t, Expired)
	}
}

// keepCreates refreshes, every keepEvery, the marks of the staged
// creates open transactions hold (catalogs.CreateKeeper): their files
// belong to no table until COMMIT, and the orphan reclaimer of any
// replica keeps them only while a mark is younger than its min age,
// however long the transaction lives. A failure is logged; the next
// round tries again.
func (m *Manager) keepCreates(now time.Time) {
	if now.Sub(m.kept) < m.keepEvery {
		return
	}
	m.kept = now
	type hold struct {
		k        catalogs.CreateKeeper
		table    catalogs.TableIdent
		receipts []catalogs.WriteReceipt
	}
	var holds []hold
	m.mu.Lock()
	for _, t := range m.open {
		t.mu.Lock()
		for _, s := range t.tables {
			k, ok := s.Provider.(catalogs.CreateKeeper)
			if ok && s.create != nil && !s.landed && len(s.Receipts) > 0 {
				holds = append(holds, hold{k, s.Table, slices.Clone(s.Receipts)})
			}
		}
		t.mu.Unlock()
	}
	m.mu.Unlock()
	for _, h := range holds {
		ctx, cancel := context.WithTimeout(context.Background(), m.keepEvery)
		if err := h.k.KeepCreate(ctx, h.table, h.receipts); err != nil {
			m.log.Warn("refresh the marks of a staged create", "table", h.table.String(), "err", err)
		}
		cancel()
	}
}

func (m *Manager) abort(t *Txn, state State) {
	staged, err := t.begin(state)
	if err != nil {
		return
	}
	m.retire(t, state)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	m.log.Info("transaction rolled back", "txn", t.id, "reason", state.String(), "tables", len(staged))
	_ = m.discardAll(ctx, staged)
}

// Close stops the reaper and rolls back every open transaction, discarding
// its staged files. Begin fails afterwards.
func (m *Manager) Close() {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return
	}
	m.closed = true
	open := make([]*Txn, 0, len(m.open))
	for _, t := range m.open {
		open = append(open, t)
	}
	m.mu.Unlock()
	close(m.stop)
	<-m.done
	for _, t := range open {
		m.abort(t, RolledBack)
	}
}

// Held returns the receipts that the manager's live transactions hold for
// table (staged, not yet committed or discarded), so that the orphan
// reclaimer keeps their files whatever their age.
func (m *Manager) Held(_ context.Context, table catalogs.TableIdent) []catalogs.WriteReceipt {
	m.mu.Lock()
	open := make([]*Txn, 0, len(m.open))
	for _, t := range m.open {
		open = append(open, t)
	}
	m.mu.Unlock()
	key := table.Key()
	var out []catalogs.WriteReceipt
	for _, t := range open {
		t.mu.Lock()
		for _, s := range t.tables {
			if s.Table.Key() == key && !s.landed {
				out = append(out, s.Receipts...)
			}
		}
		t.mu.Unlock()
	}
	return out
}
