package txn

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/codec/envelope"
)

// lake is a backend for Messages: a receipt names one file (rc), a commit
// id lands with its files once, and the files of every landed commit are
// referenced.
type lake struct {
	recorder
	lmu     sync.Mutex
	commits map[string][]string // commit id -> files
	staged  map[string]bool
}

func newLake(files ...string) *lake {
	l := &lake{recorder: recorder{committed: map[string][]string{}}, commits: map[string][]string{}, staged: map[string]bool{}}
	for _, f := range files {
		l.staged[`"`+f+`"`] = true
	}
	return l
}

func fileNames(rs []catalogs.WriteReceipt) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = string(r.Metadata)
	}
	return out
}

func (l *lake) CheckReceipts(_ context.Context, t catalogs.TableIdent, rs []catalogs.WriteReceipt) error {
	l.lmu.Lock()
	defer l.lmu.Unlock()
	for _, f := range fileNames(rs) {
		if !l.staged[f] {
			return catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: file %s does not exist", t, f)
		}
	}
	return nil
}

func (l *lake) CheckUnreferenced(_ context.Context, t catalogs.TableIdent, rs []catalogs.WriteReceipt) error {
	l.lmu.Lock()
	defer l.lmu.Unlock()
	for _, files := range l.commits {
		for _, f := range fileNames(rs) {
			if strings.Contains(strings.Join(files, ","), f) {
				return catalogs.Errorf(catalogs.ErrFailedPrecondition, "table %s: file %s is referenced", t, f)
			}
		}
	}
	return nil
}

func (l *lake) CommitOnce(_ context.Context, _ catalogs.TableIdent, id string, rs []catalogs.WriteReceipt) (catalogs.CommitOutcome, error) {
	l.lmu.Lock()
	defer l.lmu.Unlock()
	if _, ok := l.commits[id]; !ok {
		l.commits[id] = fileNames(rs)
	}
	return l.outcome(id), nil
}

func (l *lake) outcome(id string) catalogs.CommitOutcome {
	return catalogs.CommitOutcome{SnapshotID: int64(len(l.commits[id])) * 100, CommittedAt: time.Unix(1, 0)}
}

func (l *lake) FindCommit(_ context.Context, _ catalogs.TableIdent, id string) (catalogs.CommitRecord, bool, error) {
	l.lmu.Lock()
	defer l.lmu.Unlock()
	files, ok := l.commits[id]
	return catalogs.CommitRecord{Outcome: l.outcome(id), RowCount: uint64(len(files))}, ok, nil
}

func (l *lake) MatchCommit(ctx context.Context, t catalogs.TableIdent, id string, rs []catalogs.WriteReceipt) (catalogs.CommitRecord, bool, bool, error) {
	rec, ok, err := l.FindCommit(ctx, t, id)
	l.lmu.Lock()
	defer l.lmu.Unlock()
	return rec, ok, ok && strings.Join(l.commits[id], ",") == strings.Join(fileNames(rs), ","), err
}

// PayloadKind implements catalogs.PayloadCodec: the receipts themselves.
func (l *lake) PayloadKind() string { return "lake" }

func (l *lake) EncodePayload(_ context.Context, _ catalogs.TableIdent, rs []catalogs.WriteReceipt) (int, []byte, error) {
	ers := make([]envelope.Receipt, len(rs))
	for i, r := range rs {
		ers[i] = envelope.Receipt{Metadata: r.Metadata, RowCount: r.RowCount, ByteCount: r.ByteCount}
	}
	b, err := envelope.EncodeReceipts(ers)
	return envelope.ReceiptsVersion, b, err
}

func (l *lake) DecodePayload(_ context.Context, _ catalogs.TableIdent, _ int, b []byte) ([]catalogs.WriteReceipt, error) {
	ers, err := envelope.DecodeReceipts(b)
	if err != nil {
		return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "%v", err)
	}
	out := make([]catalogs.WriteReceipt, len(ers))
	for i, r := range ers {
		out[i] = catalogs.WriteReceipt{Metadata: r.Metadata, RowCount: r.RowCount, ByteCount: r.ByteCount}
	}
	return out, nil
}

// otherKind is the lake under another payload kind.
type otherKind struct{ *lake }

func (otherKind) PayloadKind() string { return "other" }

// TestMessages: what Messages refuses before anything is committed or
// deleted, each with the kind and the words a client sees, and what it
// answers: a commit id repeated with its files is its landed commit, with
// other files refused; an abort deletes only files never committed.
func TestMessages(t *testing.T) {
	ctx := context.Background()
	key := []byte("messages-key")
	l := newLake("a", "b", "c")
	x := NewMessages(NewManager(time.Minute, nil), func() []byte { return key }, time.Hour)
	seal := func(table catalogs.TableIdent, at time.Time, files ...string) []byte {
		t.Helper()
		var rs []catalogs.WriteReceipt
		for _, f := range files {
			rs = append(rs, rc(f))
		}
		pt, err := x.seal(ctx, Staged{Table: table, Provider: l, Receipts: rs}, "r/w", at)
		if err != nil {
			t.Fatal(err)
		}
		return pt.Payload
	}
	now := time.Now()
	a, b := seal(tbl("t"), now, "a"), seal(tbl("t"), now, "b")
	other := NewMessages(NewManager(time.Minute, nil), func() []byte { return []byte("another key") }, time.Hour)
	foreign, err := other.seal(ctx, Staged{Table: tbl("t"), Provider: l, Receipts: []catalogs.WriteReceipt{rc("a")}}, "r/w", now)
	if err != nil {
		t.Fatal(err)
	}
	on := func(payloads ...[]byte) []MessageTable {
		return []MessageTable{{Table: tbl("t"), Provider: l, Payloads: payloads}}
	}
	for _, c := range []struct {
		name   string
		id     string
		tables []MessageTable
		kind   error
		says   string
	}{
		{"no commit id", "", on(a), catalogs.ErrInvalidArgument, "commit_id"},
		{"a bad commit id", "x y", on(a), catalogs.ErrInvalidArgument, "commit_id"},
		{"no tables", "j", nil, catalogs.ErrInvalidArgument, "no tables"},
		{"no payloads", "j", on(), catalogs.ErrInvalidArgument, "no payloads"},
		{"a table twice", "j", append(on(a), on(b)...), catalogs.ErrInvalidArgument, "listed twice"},
		{"a payload twice", "j", on(a, b, a), catalogs.ErrInvalidArgument, "payloads 0 and 2"},
		{"another key", "j", on(foreign.Payload), catalogs.ErrInvalidArgument, "HMAC"},
		{"another table", "j", on(seal(tbl("u"), now, "a")), catalogs.ErrInvalidArgument, "prepared for table c.n.u"},
		{"another backend", "j", []MessageTable{{Table: tbl("t"), Provider: otherKind{l}, Payloads: [][]byte{a}}},
			catalogs.ErrInvalidArgument, `backend kind "lake", but catalog "c" takes "other"`},
		{"expired", "j", on(seal(tbl("t"), now.Add(-2*time.Hour), "a")), catalogs.ErrInvalidArgument, "expire"},
		{"from the future", "j", on(seal(tbl("t"), now.Add(MaxClockSkew+time.Minute), "a")), catalogs.ErrInvalidArgument, "in the future"},
		{"a missing file", "j", on(seal(tbl("t"), now, "gone")), catalogs.ErrInvalidArgument, "does not exist"},
	} {
		_, err := x.Commit(ctx, c.id, c.tables)
		if !errors.Is(err, c.kind) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v, want %v saying %q", c.name, err, c.kind, c.says)
		}
	}
	if len(l.commits) != 0 {
		t.Fatalf("refused commits landed: %v", l.commits)
	}
	first, err := x.Commit(ctx, "j", on(a))
	if err != nil || len(first) != 1 || first[0].Record.RowCount != 1 || first[0].Payloads != 1 {
		t.Fatalf("Commit j [a]: %+v, %v", first, err)
	}
	if again, err := x.Commit(ctx, "j", on(a)); err != nil || again[0].Record != first[0].Record {
		t.Fatalf("Commit j [a] repeated: %+v, %v; want %+v", again, err, first)
	}
	if _, err := x.Commit(ctx, "j", on(b)); !errors.Is(err, catalogs.ErrFailedPrecondition) || !strings.Contains(err.Error(), "commit_id j landed") {
		t.Errorf("Commit j [b]: %v, want FailedPrecondition naming j", err)
	}
	if _, err := x.Commit(ctx, "k", on(a)); !errors.Is(err, catalogs.ErrFailedPrecondition) || !strings.Contains(err.Error(), "referenced") {
		t.Errorf("Commit k [a] (a replay): %v, want FailedPrecondition referenced", err)
	}
	if rec, ok, err := x.Status(ctx, l, tbl("t"), "j"); !ok || err != nil || rec != first[0].Record {
		t.Errorf("Status j: %+v, %v, %v", rec, ok, err)
	}

	// Abort: never what landed, under its id or another.
	if _, err := x.Abort(ctx, "j", on(b)); !errors.Is(err, catalogs.ErrFailedPrecondition) || !strings.Contains(err.Error(), "landed") {
		t.Errorf("Abort j: %v, want FailedPrecondition landed", err)
	}
	if _, err := x.Abort(ctx, "", on(a)); !errors.Is(err, catalogs.ErrFailedPrecondition) || !strings.Contains(err.Error(), "referenced") {
		t.Errorf("Abort of committed [a]: %v, want FailedPrecondition referenced", err)
	}
	if len(l.discarded) != 0 {
		t.Fatalf("refused aborts deleted %v", l.discarded)
	}
	if res, err := x.Abort(ctx, "k", on(b)); err != nil || len(res) != 1 || res[0].Receipts != 1 || strings.Join(l.discarded, ",") != `"b"` {
		t.Fatalf("Abort k [b]: %+v, %v; deleted %v", res, err, l.discarded)
	}
}
