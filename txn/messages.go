package txn

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/codec/envelope"
)

// Messages is the write policy of the distributed-commit actions
// (docs/commit-messages.md): workers end their transactions with Prepare,
// handing out each table's receipts sealed in a signed envelope; one
// coordinator, on any replica sharing the key, commits them once per table
// under a commit id with Commit, or deletes their files with Abort.
//
// Everything a payload may not be is refused here, before anything is
// committed or deleted: a payload another key signed, of another table or
// backend, prepared longer ago than the TTL or too far in the future,
// listed twice, naming a file twice, or already committed; a commit id
// that landed with other files. On one replica the commits and aborts of
// a table run one at a time.
type Messages struct {
	m   *Manager
	key func() []byte
	ttl time.Duration
	// locks serialise the commit messages of a table, from their checks
	// to their commit or deletion.
	locks tableLocks
}

// DefaultMessageTTL is how long a prepared payload can be committed when
// NewMessages is given no TTL: half of reclaim.min_age's default (24h), so
// that the orphan reclaimer never deletes the files of a payload that can
// still be committed.
const DefaultMessageTTL = 12 * time.Hour

// MaxClockSkew is how far in the future a payload's preparation time may
// lie: the replicas' clocks differ by this much at most.
const MaxClockSkew = 5 * time.Minute

// maxCommitID bounds a caller's commit id.
const maxCommitID = 128

// messageCommitPrefix marks the commit ids of commit messages in the
// table's history, apart from those the gateway draws itself.
const messageCommitPrefix = "msg-"

// NewMessages returns the policy of the commit messages of m's units of
// work, signed and checked with the key that key returns (called at each
// seal and open, so that the caller may draw it lazily) and committable
// for ttl after their preparation (DefaultMessageTTL when zero).
func NewMessages(m *Manager, key func() []byte, ttl time.Duration) *Messages {
	if ttl <= 0 {
		ttl = DefaultMessageTTL
	}
	return &Messages{m: m, key: key, ttl: ttl}
}

// MessageKey derives the HMAC key of commit messages from the ticket
// signing key, so that a payload never verifies as a ticket or the
// reverse.
func MessageKey(ticketKey []byte) []byte {
	m := hmac.New(sha256.New, ticketKey)
	m.Write([]byte("flightgw commit messages v2"))
	return m.Sum(nil)
}

// MessageTable is one table's payloads in a Commit or an Abort: every
// payload for it, from any number of workers. The caller resolves the
// table for the client (its realm, its name); the backend kind its
// payloads must carry is its catalogs.PayloadCodec's.
type MessageTable struct {
	Table    catalogs.TableIdent
	Provider catalogs.Provider
	Payloads [][]byte
}

// PreparedTable is one table of a prepared transaction, sealed.
type PreparedTable struct {
	Table catalogs.TableIdent
	// Kind is the payload's backend kind (catalogs.PayloadCodec).
	Kind        string
	Rows, Bytes uint64
	Receipts    int
	// Payload is the signed envelope.
	Payload []byte
}

// CommittedTable is one table of a Commit: the commit as the table
// recorded it (its snapshot and the rows that landed, never counted from
// the request).
type CommittedTable struct {
	Table    catalogs.TableIdent
	Record   catalogs.CommitRecord
	Payloads int
}

// AbortedTable is one table of an Abort.
type AbortedTable struct {
	Table    catalogs.TableIdent
	Receipts int
}

// EnvelopeTable is a table's identity in an envelope.
func EnvelopeTable(t catalogs.TableIdent) []string {
	return slices.Concat([]string{t.Catalog}, t.Namespace, []string{t.Name})
}

// CheckCommitID refuses a commit id that is empty, long or not printable.
func CheckCommitID(id string) error {
	if id == "" || len(id) > maxCommitID {
		return catalogs.Errorf(catalogs.ErrInvalidArgument, "commit_id must be 1 to %d characters, got %d", maxCommitID, len(id))
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("._:-", c)) {
			return catalogs.Errorf(catalogs.ErrInvalidArgument, "commit_id %q: only letters, digits and . _ : - are allowed", id)
		}
	}
	return nil
}

// Prepare ends the open transaction id of owner prepared (Manager.Prepare)
// and seals each table's receipts at time at, in the backend's payload
// format (catalogs.PayloadCodec), whose kind the envelope names. A table
// that cannot be sealed leaves the transaction open.
func (x *Messages) Prepare(ctx context.Context, owner, id string, at time.Time) ([]PreparedTable, error) {
	var out []PreparedTable
	_, err := x.m.Prepare(ctx, owner, id, func(s Staged) error {
		pt, err := x.seal(ctx, s, owner, at)
		if err != nil {
			return err
		}
		out = append(out, pt)
		return nil
	})
	return out, err
}

// seal encodes one table's receipts in a signed envelope.
func (x *Messages) seal(ctx context.Context, s Staged, user string, at time.Time) (PreparedTable, error) {
	codec, hasCodec := s.Provider.(catalogs.PayloadCodec)
	if !hasCodec {
		why := ""
		if _, ok := s.Provider.(catalogs.ReceiptChecker); !ok {
			// StarRocks, an upstream Flight SQL server: the receipts name
			// a transaction the backend holds open for this process, and
			// no other process could check them.
			why = ": its writes may be a transaction of the backend itself, open in this gateway process, which no other process can commit (end the transaction with EndTransaction)"
		}
		return PreparedTable{}, catalogs.Errorf(catalogs.ErrFailedPrecondition,
			"table %s: catalog %q has no commit-message format%s", s.Table, s.Table.Catalog, why)
	}
	kind := codec.PayloadKind()
	pt := PreparedTable{Table: s.Table, Kind: kind, Receipts: len(s.Receipts)}
	for _, r := range s.Receipts {
		pt.Rows += r.RowCount
		pt.Bytes += r.ByteCount
	}
	version, payload, err := codec.EncodePayload(ctx, s.Table, s.Receipts)
	if err != nil {
		return pt, fmt.Errorf("table %s: encode receipts: %v", s.Table, err) // no kind: Internal
	}
	pt.Payload, err = envelope.Seal(envelope.Envelope{Kind: kind, SerializerVersion: version,
		Table: EnvelopeTable(s.Table), CommitUser: user, PreparedAt: at, Payload: payload}, x.key())
	if err != nil {
		return pt, catalogs.Errorf(catalogs.ErrFailedPrecondition, "table %s: %v", s.Table, err)
	}
	return pt, nil
}

// open checks every payload of every table and merges each table's
// receipts, before anything is committed or deleted: one bad payload
// refuses the whole request. It returns holding the tables' locks
// (released by unlock once the commit or the deletion is done), so that
// on this replica no commit and abort of a table interleave: an abort
// deleting files between a commit's checks and its snapshot would leave
// the snapshot naming deleted files, and a commit between an abort's
// reference check and its deletion would lose them.
func (x *Messages) open(ctx context.Context, tables []MessageTable) (_ []Staged, unlock func(), err error) {
	if len(tables) == 0 {
		return nil, nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "no tables")
	}
	keys := make([]string, 0, len(tables))
	seen := map[string]bool{}
	for _, tm := range tables {
		if seen[tm.Table.Key()] {
			return nil, nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s is listed twice (list all its payloads once)", tm.Table)
		}
		seen[tm.Table.Key()] = true
		if len(tm.Payloads) == 0 {
			return nil, nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: no payloads", tm.Table)
		}
		keys = append(keys, tm.Table.Key())
	}
	release := x.locks.lock(keys)
	defer func() {
		if err != nil {
			release()
		}
	}()
	out := make([]Staged, 0, len(tables))
	for _, tm := range tables {
		checker, ok := tm.Provider.(catalogs.ReceiptChecker)
		if !ok {
			return nil, nil, catalogs.Errorf(catalogs.ErrFailedPrecondition, "table %s: catalog %q cannot check receipts from another process", tm.Table, tm.Table.Catalog)
		}
		s := Staged{Table: tm.Table, Provider: tm.Provider, Mode: Append}
		first := map[string]int{}
		for i, b := range tm.Payloads {
			// A payload listed twice would be committed once and its rows
			// reported twice.
			if j, ok := first[string(b)]; ok {
				return nil, nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: payloads %d and %d are the same payload, listed twice (list each once)", tm.Table, j, i)
			}
			first[string(b)] = i
			rs, err := x.openPayload(ctx, tm, b)
			if k := catalogs.Kind(err); k != nil && k != catalogs.ErrInvalidArgument {
				// The backend failing (its storage down, the table gone)
				// is not the payload's fault: keep its kind.
				return nil, nil, fmt.Errorf("table %s: payload %d: %w", tm.Table, i, err)
			}
			if err != nil {
				return nil, nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: payload %d: %v", tm.Table, i, err)
			}
			s.Receipts = append(s.Receipts, rs...)
		}
		if err := checker.CheckReceipts(ctx, tm.Table, s.Receipts); err != nil {
			return nil, nil, err
		}
		out = append(out, s)
	}
	return out, release, nil
}

// openPayload checks one payload against the table the request names:
// the signature, the backend kind, the table identity, the age; then
// decodes it, with the backend's catalogs.PayloadCodec when it has one.
func (x *Messages) openPayload(ctx context.Context, tm MessageTable, b []byte) ([]catalogs.WriteReceipt, error) {
	codec, ok := tm.Provider.(catalogs.PayloadCodec)
	if !ok {
		return nil, catalogs.Errorf(catalogs.ErrFailedPrecondition, "catalog %q has no commit-message format", tm.Table.Catalog)
	}
	e, err := envelope.Open(b, x.key())
	if err != nil {
		return nil, err
	}
	if want := codec.PayloadKind(); e.Kind != want {
		return nil, fmt.Errorf("backend kind %q, but catalog %q takes %q", e.Kind, tm.Table.Catalog, want)
	}
	if want := EnvelopeTable(tm.Table); !slices.Equal(e.Table, want) {
		return nil, fmt.Errorf("prepared for table %s, not this table", strings.Join(e.Table, "."))
	}
	if ahead := time.Until(e.PreparedAt); ahead > MaxClockSkew {
		// It would never expire, and the reclaimer deletes its files by
		// their own age: refuse it rather than commit files that are gone.
		return nil, fmt.Errorf("prepared at %s, %s in the future (more than the %s of clock skew allowed between replicas)",
			e.PreparedAt.Format(time.RFC3339), ahead.Round(time.Second), MaxClockSkew)
	}
	if age := time.Since(e.PreparedAt); age > x.ttl {
		return nil, fmt.Errorf("prepared %s ago, commit messages expire after %s (the orphan reclaimer may have deleted its files)",
			age.Round(time.Second), x.ttl)
	}
	return codec.DecodePayload(ctx, tm.Table, e.SerializerVersion, e.Payload)
}

// Lock holds the locks of tables as a Commit or an Abort of them does,
// until the returned function is called: what must not interleave with
// their commit messages on this replica (a test making commits wait).
func (x *Messages) Lock(tables ...catalogs.TableIdent) (unlock func()) {
	keys := make([]string, len(tables))
	for i, t := range tables {
		keys[i] = t.Key()
	}
	return x.locks.lock(keys)
}
