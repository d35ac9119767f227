package txn

import (
	"context"
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
// work, signed and checked with key (called when first needed) and
// committable for ttl after their preparation (DefaultMessageTTL when
// zero).
func NewMessages(m *Manager, key func() []byte, ttl time.Duration) *Messages {
	if ttl <= 0 {
		ttl = DefaultMessageTTL
	}
	return &Messages{m: m, key: key, ttl: ttl}
}

// MessageTable is one table's payloads in a Commit or an Abort: every
// payload for it, from any number of workers. The caller resolves the
// table for the client (its realm, its name); Kind is its catalog's type,
// the backend kind its payloads must carry.
type MessageTable struct {
	Table    catalogs.TableIdent
	Provider catalogs.Provider
	Kind     string
	Payloads [][]byte
}

// PreparedTable is one table of a prepared transaction, sealed.
type PreparedTable struct {
	Table       catalogs.TableIdent
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
// and seals each table's receipts at time at, in the backend's own
// payload format when it has one (catalogs.PayloadCodec), else as the
// receipts themselves (iceberg). kindOf is the catalog type of a table:
// the envelope's backend kind. A table that cannot be sealed leaves the
// transaction open.
func (x *Messages) Prepare(ctx context.Context, owner, id string, kindOf func(catalogs.TableIdent) string, at time.Time) ([]PreparedTable, error) {
	var out []PreparedTable
	_, err := x.m.Prepare(ctx, owner, id, func(s Staged) error {
		pt, err := x.seal(ctx, s, kindOf(s.Table), owner, at)
		if err != nil {
			return err
		}
		out = append(out, pt)
		return nil
	})
	return out, err
}

// seal encodes one table's receipts in a signed envelope.
func (x *Messages) seal(ctx context.Context, s Staged, kind, user string, at time.Time) (PreparedTable, error) {
	codec, hasCodec := s.Provider.(catalogs.PayloadCodec)
	if !hasCodec && kind != envelope.KindIceberg {
		return PreparedTable{}, catalogs.Errorf(catalogs.ErrFailedPrecondition,
			"table %s: catalog type %q has no commit-message format (iceberg and paimon have)", s.Table, kind)
	}
	pt := PreparedTable{Table: s.Table, Kind: kind, Receipts: len(s.Receipts)}
	rs := make([]envelope.Receipt, len(s.Receipts))
	for i, r := range s.Receipts {
		rs[i] = envelope.Receipt{Metadata: r.Metadata, RowCount: r.RowCount, ByteCount: r.ByteCount}
		pt.Rows += r.RowCount
		pt.Bytes += r.ByteCount
	}
	version, payload, err := envelope.ReceiptsVersion, []byte(nil), error(nil)
	if hasCodec {
		version, payload, err = codec.EncodePayload(ctx, s.Table, s.Receipts)
	} else {
		payload, err = envelope.EncodeReceipts(rs)
	}
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

// Commit checks every payload of every table and commits each table's
// merged receipts once under commitID, through the one commit policy
// (Manager.CommitReceipts). A table on which commitID landed with these
// very files is answered from that commit and appends nothing; with other
// files the request is refused (FailedPrecondition naming the snapshot),
// and so are payloads already committed under another id. A commit that
// fails deletes nothing: the files are the caller's, to retry with the
// same commit id or to abort.
func (x *Messages) Commit(ctx context.Context, commitID string, tables []MessageTable) ([]CommittedTable, error) {
	if err := CheckCommitID(commitID); err != nil {
		return nil, err
	}
	staged, unlock, err := x.open(ctx, tables)
	if err != nil {
		return nil, err
	}
	defer unlock()
	landed, err := matchLanded(ctx, commitID, staged)
	if err != nil {
		return nil, err
	}
	if err := refuseReplay(ctx, commitID, staged, landed); err != nil {
		return nil, err
	}
	outs, err := x.m.CommitReceipts(ctx, messageCommitPrefix+commitID, staged)
	if err != nil {
		done := make([]string, len(outs))
		for i := range outs {
			done[i] = staged[i].Table.String()
		}
		return nil, fmt.Errorf("%s: committed: %s; the rest did not (retry with the same commit_id, or GetCommitStatus): %w",
			commitID, listOrNone(done), err)
	}
	res := make([]CommittedTable, 0, len(outs))
	for i, out := range outs {
		// What landed answers, not the request: another coordinator may
		// have landed the commit id first, with other payloads.
		rec, ok, err := landedAs(ctx, commitID, staged[i])
		if err != nil {
			return nil, err
		}
		if !ok { // nothing to commit: no snapshot, no commit id recorded
			rec = catalogs.CommitRecord{Outcome: out}
		}
		res = append(res, CommittedTable{Table: staged[i].Table, Record: rec, Payloads: len(tables[i].Payloads)})
	}
	x.m.log.Info("commit messages committed", "commit_id", commitID, "tables", len(staged))
	return res, nil
}

// Abort checks the payloads as Commit does and deletes the staged files
// they name, only when they were certainly never committed: a table on
// which commitID (when given) has landed is refused, and so is any file
// a snapshot references, whatever the commit id says (the payload may
// have been committed under another id).
func (x *Messages) Abort(ctx context.Context, commitID string, tables []MessageTable) ([]AbortedTable, error) {
	if commitID != "" {
		if err := CheckCommitID(commitID); err != nil {
			return nil, err
		}
	}
	staged, unlock, err := x.open(ctx, tables)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if commitID != "" {
		for _, s := range staged {
			rec, landed, err := findCommit(ctx, s.Provider, s.Table, commitID)
			if err != nil {
				return nil, err
			}
			if landed {
				return nil, catalogs.Errorf(catalogs.ErrFailedPrecondition, "commit %s landed on table %s (snapshot %d): its files are live, nothing deleted",
					commitID, s.Table, rec.Outcome.SnapshotID)
			}
		}
	}
	for _, s := range staged {
		rc, ok := s.Provider.(catalogs.ReferenceChecker)
		if !ok {
			return nil, catalogs.Errorf(catalogs.ErrFailedPrecondition, "catalog %q cannot tell whether the files of table %s are committed: nothing deleted",
				s.Table.Catalog, s.Table)
		}
		if err := rc.CheckUnreferenced(ctx, s.Table, s.Receipts); err != nil {
			return nil, fmt.Errorf("nothing deleted: %w", err)
		}
	}
	if err := x.m.DiscardReceipts(ctx, staged); err != nil {
		return nil, err
	}
	res := make([]AbortedTable, 0, len(staged))
	for _, s := range staged {
		res = append(res, AbortedTable{Table: s.Table, Receipts: len(s.Receipts)})
	}
	return res, nil
}

// Status looks a Commit's commit id up on a table: the commit as the
// table recorded it (its rows the rows that landed), or ok false.
func (x *Messages) Status(ctx context.Context, p catalogs.Provider, t catalogs.TableIdent, commitID string) (catalogs.CommitRecord, bool, error) {
	if err := CheckCommitID(commitID); err != nil {
		return catalogs.CommitRecord{}, false, err
	}
	return findCommit(ctx, p, t, commitID)
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
	e, err := envelope.Open(b, x.key())
	if err != nil {
		return nil, err
	}
	if e.Kind != tm.Kind {
		return nil, fmt.Errorf("backend kind %q, but catalog %q is %q", e.Kind, tm.Table.Catalog, tm.Kind)
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
	if codec, ok := tm.Provider.(catalogs.PayloadCodec); ok {
		return codec.DecodePayload(ctx, tm.Table, e.SerializerVersion, e.Payload)
	}
	rs, err := envelope.DecodeReceipts(e.Payload)
	if err != nil {
		return nil, err
	}
	out := make([]catalogs.WriteReceipt, len(rs))
	for i, r := range rs {
		out[i] = catalogs.WriteReceipt{Metadata: r.Metadata, RowCount: r.RowCount, ByteCount: r.ByteCount}
	}
	return out, nil
}

// matchLanded looks commitID up on every table: a table on which it has
// landed with exactly these payloads' files is this commit's repeat (true
// in the result: answered from its snapshot, appending nothing); one on
// which it landed with other files refuses the whole request,
// FailedPrecondition naming the snapshot: a commit id names one set of
// files.
func matchLanded(ctx context.Context, commitID string, staged []Staged) ([]bool, error) {
	out := make([]bool, len(staged))
	for i, s := range staged {
		m, ok := s.Provider.(catalogs.CommitMatcher)
		if !ok {
			return nil, catalogs.Errorf(catalogs.ErrFailedPrecondition, "catalog %q cannot tell which files a commit of table %s added: nothing committed",
				s.Table.Catalog, s.Table)
		}
		rec, landed, same, err := m.MatchCommit(ctx, s.Table, messageCommitPrefix+commitID, s.Receipts)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", commitID, err)
		}
		if landed && !same {
			return nil, otherFiles(commitID, s.Table, rec)
		}
		out[i] = landed
	}
	return out, nil
}

// landedAs is the commit of commitID on s's table as recorded, after
// CommitReceipts answered: refused when it holds other files than s's (a
// coordinator racing with the same commit id and other payloads landed
// first; the backend then answered with its snapshot). ok is false when
// nothing was recorded (receipts without files).
func landedAs(ctx context.Context, commitID string, s Staged) (catalogs.CommitRecord, bool, error) {
	m := s.Provider.(catalogs.CommitMatcher) // matchLanded checked it
	rec, landed, same, err := m.MatchCommit(ctx, s.Table, messageCommitPrefix+commitID, s.Receipts)
	switch {
	case err != nil:
		return rec, false, fmt.Errorf("%s: table %s: committed, but what landed cannot be read (GetCommitStatus, or retry with the same commit_id): %w",
			commitID, s.Table, err)
	case landed && !same:
		return rec, false, otherFiles(commitID, s.Table, rec)
	}
	return rec, landed, nil
}

func otherFiles(commitID string, t catalogs.TableIdent, rec catalogs.CommitRecord) error {
	return catalogs.Errorf(catalogs.ErrFailedPrecondition,
		"commit_id %s landed on table %s in snapshot %d with other files than these payloads' (%d rows): nothing committed (a commit id names one set of files: commit other payloads under another commit_id)",
		commitID, t, rec.Outcome.SnapshotID, rec.RowCount)
}

// refuseReplay refuses payloads already committed under another commit
// id: a second commit of the same files would add every row twice (a
// backend does not always refuse a file it already has). A table on which
// commitID has landed with these files (landed) is this commit's repeat,
// answered with the first snapshot, and is not checked.
func refuseReplay(ctx context.Context, commitID string, staged []Staged, landed []bool) error {
	for i, s := range staged {
		rc, ok := s.Provider.(catalogs.ReferenceChecker)
		if !ok {
			return catalogs.Errorf(catalogs.ErrFailedPrecondition, "catalog %q cannot tell whether the files of table %s are already committed: nothing committed",
				s.Table.Catalog, s.Table)
		}
		if landed[i] {
			continue
		}
		if err := rc.CheckUnreferenced(ctx, s.Table, s.Receipts); err != nil {
			return fmt.Errorf("%s: payloads already committed (under another commit id): nothing committed: %w", commitID, err)
		}
	}
	return nil
}

// findCommit looks a commit-messages commit id up on a table.
func findCommit(ctx context.Context, p catalogs.Provider, t catalogs.TableIdent, commitID string) (catalogs.CommitRecord, bool, error) {
	ic, ok := p.(catalogs.IdempotentCommitter)
	if !ok {
		return catalogs.CommitRecord{}, false, catalogs.Errorf(catalogs.ErrFailedPrecondition, "table %s: catalog %q does not record commit ids", t, t.Catalog)
	}
	return ic.FindCommit(ctx, t, messageCommitPrefix+commitID)
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
