package txn

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/flightgw/flightgw/catalogs"
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

// Transaction states.
const (
	Open State = iota
	Committed
	RolledBack
	Expired
)

func (s State) String() string {
	return [...]string{"open", "committed", "rolled back", "expired"}[s]
}

// Staged is what one table has staged inside a transaction.
type Staged struct {
	Table    catalogs.TableIdent
	Provider catalogs.Provider
	Mode     Mode
	Receipts []catalogs.WriteReceipt
}

// Txn is one transaction. Its methods are safe for concurrent use.
type Txn struct {
	id      string
	owner   string
	session string

	mu       sync.Mutex
	state    State
	tables   []*Staged // in first-write order
	lastUsed time.Time
	// orphanedAt is when the session the transaction is bound to ended
	// (the client's connection closed); zero while it lives.
	orphanedAt time.Time
}

// ID is the transaction id given to the client.
func (t *Txn) ID() string { return t.id }

// Add joins receipts staged for table to the transaction. It fails with
// ErrFailedPrecondition when the transaction is no longer open; the caller then
// discards the receipts itself. With Overwrite, what the transaction had
// staged for the table before is superseded: Add returns those receipts
// for the caller to discard.
func (t *Txn) Add(table catalogs.TableIdent, p catalogs.Provider, mode Mode, receipts []catalogs.WriteReceipt) (superseded []catalogs.WriteReceipt, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.state != Open {
		return nil, catalogs.Errorf(catalogs.ErrFailedPrecondition, "transaction %s is %s", t.id, t.state)
	}
	t.lastUsed = time.Now()
	key := table.Key()
	for _, s := range t.tables {
		if s.Table.Key() == key {
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
	}
	t.tables = append(t.tables, &Staged{Table: table, Provider: p, Mode: mode, Receipts: append([]catalogs.WriteReceipt(nil), receipts...)})
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
		if s.Table.Key() == key {
			return s.Mode, append([]catalogs.WriteReceipt(nil), s.Receipts...), true
		}
	}
	return Append, nil, false
}

// finish moves an open transaction to state and returns what it staged.
func (t *Txn) finish(state State) ([]*Staged, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.state != Open {
		return nil, catalogs.Errorf(catalogs.ErrFailedPrecondition, "transaction %s is already %s", t.id, t.state)
	}
	t.state = state
	return t.tables, nil
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

// NewManager starts a manager whose reaper rolls back transactions idle for
// longer than idle (DefaultIdleTimeout when zero). Close stops it.
func NewManager(idle time.Duration, log *slog.Logger, opts ...Option) *Manager {
	if idle <= 0 {
		idle = DefaultIdleTimeout
	}
	if log == nil {
		log = slog.Default()
	}
	m := &Manager{idle: idle, orphan: DefaultOrphanGrace, log: log, open: map[string]*Txn{}, ended: map[string]endedTxn{},
		stop: make(chan struct{}), done: make(chan struct{})}
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
	t := &Txn{id: id, owner: owner, session: session, lastUsed: time.Now()}
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
		t.mu.Lock()
		t.lastUsed = time.Now()
		t.mu.Unlock()
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
			if best == nil || t.lastUsed.After(best.lastUsed) {
				best = t
			}
		}
	}
	return best, best != nil
}

func (m *Manager) retire(t *Txn, state State) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.open, t.id)
	m.ended[t.id] = endedTxn{owner: t.owner, state: state, at: time.Now()}
}

// Commit commits every table the transaction staged, each in one snapshot,
// in first-write order. The transaction id is the commit id, so a commit
// that a backend already applied is not applied twice.
func (m *Manager) Commit(ctx context.Context, owner, id string) error {
	t, err := m.Get(owner, id)
	if err != nil {
		return err
	}
	staged, err := t.finish(Committed)
	if err != nil {
		return err
	}
	defer m.retire(t, Committed)
	var done []string
	for i, s := range staged {
		if err := commitTable(ctx, id, s); err != nil {
			rest := staged[i+1:]
			m.discardAll(context.WithoutCancel(ctx), rest)
			m.discardAll(context.WithoutCancel(ctx), []*Staged{s})
			return fmt.Errorf("transaction %s: commit of %s failed after %s committed; %s discarded: %w",
				id, s.Table, listOrNone(done), listOrNone(names(append([]*Staged{s}, rest...))), err)
		}
		done = append(done, s.Table.String())
	}
	return nil
}

func commitTable(ctx context.Context, id string, s *Staged) error {
	commitID := "txn-" + id
	switch {
	case s.Mode == Overwrite:
		ow, ok := s.Provider.(catalogs.Overwriter)
		if !ok {
			return catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: backend cannot replace data", s.Table)
		}
		_, err := ow.CommitOverwrite(ctx, s.Table, commitID, s.Receipts)
		return err
	case len(s.Receipts) == 0:
		return nil
	default:
		if ic, ok := s.Provider.(catalogs.IdempotentCommitter); ok {
			_, err := ic.CommitOnce(ctx, s.Table, commitID, s.Receipts)
			return err
		}
		_, err := s.Provider.Commit(ctx, s.Table, s.Receipts)
		return err
	}
}

func names(s []*Staged) []string {
	out := make([]string, len(s))
	for i, x := range s {
		out[i] = x.Table.String()
	}
	return out
}

func listOrNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// Rollback discards everything the transaction staged.
func (m *Manager) Rollback(ctx context.Context, owner, id string) error {
	t, err := m.Get(owner, id)
	if err != nil {
		return err
	}
	staged, err := t.finish(RolledBack)
	if err != nil {
		return err
	}
	defer m.retire(t, RolledBack)
	return m.discardAll(ctx, staged)
}

func (m *Manager) discardAll(ctx context.Context, staged []*Staged) error {
	var errs []error
	for _, s := range staged {
		if err := Discard(ctx, s.Provider, s.Table, s.Receipts); err != nil {
			m.log.Warn("discard staged files", "table", s.Table.String(), "receipts", len(s.Receipts), "err", err)
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Discard removes staged receipts when the backend can.
func Discard(ctx context.Context, p catalogs.Provider, table catalogs.TableIdent, receipts []catalogs.WriteReceipt) error {
	if len(receipts) == 0 {
		return nil
	}
	if d, ok := p.(catalogs.Discarder); ok {
		return d.Discard(ctx, table, receipts)
	}
	return nil
}

// OpenCount returns the number of open transactions.
func (m *Manager) OpenCount() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.open)
}

func (m *Manager) reap() {
	defer close(m.done)
	tick := time.NewTicker(min(m.idle/4, m.orphan/4, 30*time.Second))
	defer tick.Stop()
	for {
		select {
		case <-m.stop:
			return
		case <-tick.C:
			m.expireIdle(time.Now())
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
		if !t.orphanedAt.IsZero() && !t.lastUsed.After(t.orphanedAt) {
			limit = min(limit, m.orphan)
		}
		if now.Sub(t.lastUsed) > limit {
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

func (m *Manager) abort(t *Txn, state State) {
	staged, err := t.finish(state)
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
