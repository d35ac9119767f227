package catalogtest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightgw/flightgw/catalogs"
)

// Config declares what a backend promises beyond the Provider contract.
// The suite checks exactly what is declared: a capability left false is
// not checked, so a correct backend that is not shaped like Iceberg (no
// files, no compare-and-swap, no field ids) passes. Optional interfaces
// (catalogs.Discarder, catalogs.FilePlanner...) need no declaration: their
// checks run when the provider implements them.
type Config struct {
	// StagesFiles: WriteBatch and write streams stage files in the
	// storage Instance.ListFiles lists, and Discard and WriteStream.Abort
	// delete them again. The suite then counts files.
	StagesFiles bool
	// CompareAndSwap: Commit is an optimistic compare-and-swap retried on
	// conflict, so concurrent committers report CommitOutcome.Retried > 0.
	// When false the backend serialises commits itself and Retried, which
	// counts conflicts, must stay 0.
	CompareAndSwap bool
	// GroupsCommits: the backend may merge concurrent commits of one table
	// into one snapshot (group commit): concurrent committers may then
	// share a snapshot and retry no conflict.
	GroupsCommits bool
	// FieldIDs: TableSpec.SchemaSpec gives every column a distinct,
	// non-zero field id that commits do not change.
	FieldIDs bool
	// Snapshots: every commit makes a new table version whose id is the
	// CommitOutcome.SnapshotID, distinct per commit, and GetTableSpec
	// reports it as CurrentSnapshotID (nil before the first commit).
	Snapshots bool
	// Layout says how a write stream lays its data out in files.
	Layout FileLayout
	// PlainPlans: a catalogs.FilePlanner's plans (and a StagedPlanner's)
	// of a table whose schema never changed are Plain: local Parquet
	// files the engine may read itself. When false a plan may say why it
	// is not plain; a plan that is plain is checked either way.
	PlainPlans bool
	// StagedScans: the provider is a catalogs.StagedScanner, whose check
	// then fails rather than skips when it is not (a transaction's query
	// would be refused where the backend promises read-your-writes).
	StagedScans bool
	// TransactionScoped: the streams of one catalogs.WriteTxn are one
	// backend transaction (StarRocks Stream Load, an upstream Flight SQL
	// transaction), so aborting one of them dooms the commit of all: it
	// fails with ErrFailedPrecondition and nothing becomes visible. It
	// requires catalogs.StreamWriter.
	TransactionScoped bool
	// ReplacesInStream: the backend's catalogs.Overwriter replaces as its
	// stream writes (catalogs.WriteTxn.Replace; an upstream Flight SQL
	// ingest with TABLE_EXISTS_OPTION_REPLACE), so the Overwrite check
	// writes its receipts with such a stream, and checks that
	// CommitOverwrite refuses receipts of an appending one. It requires
	// catalogs.StreamWriter.
	ReplacesInStream bool
	// DropsUnwritten: the backend's catalogs.Uncreator drops a table no
	// commit has landed on. When false a DropUnwritten that keeps such a
	// table is accepted; a table with a commit is never dropped either way.
	DropsUnwritten bool
	// ModTimeGranularity is the coarsest step of the modification times
	// the backend's storage listing gives (S3 lists whole seconds); zero
	// when finer than a millisecond. The checks of what a reclaim keeps
	// because it is young wait for it.
	ModTimeGranularity time.Duration
	// UnstorableType is a column type CreateTable must refuse with
	// ErrInvalidArgument naming the column; nil when the backend stores
	// every Arrow type (the check is then skipped).
	UnstorableType arrow.DataType
}

// FileLayout says how a write stream lays its data out.
type FileLayout int

const (
	// LayoutAny promises nothing about how many receipts or files a
	// stream returns.
	LayoutAny FileLayout = iota
	// LayoutOneFilePerBucket: a stream writes one file per partition
	// bucket (until a file reaches the target size), so ten small batches
	// into the suite's unpartitioned table become one file and one
	// receipt.
	LayoutOneFilePerBucket
)

// Harness tells the suite how to build and inspect one backend.
type Harness struct {
	// New returns a fresh, empty backend for one subtest. It registers its
	// own cleanup with t.Cleanup.
	New func(t *testing.T) *Instance
	// Committers is the number of concurrent committers (default 8).
	Committers int
}

// Instance is one backend under test.
type Instance struct {
	Provider catalogs.Provider
	// Catalog and Namespace locate the tables the suite creates; the
	// namespace must exist.
	Catalog   string
	Namespace []string
	// ListFiles returns every file under the backend's storage, so the
	// suite can prove that nothing staged is left behind. Required when
	// Config.StagesFiles.
	ListFiles func(ctx context.Context) ([]string, error)
	// CreateTable creates a table when the provider is no TableManager.
	CreateTable func(ctx context.Context, table catalogs.TableIdent, schema *arrow.Schema) error
	// CountRows counts a table's visible rows when the provider is no
	// Scanner.
	CountRows func(ctx context.Context, table catalogs.TableIdent) (int64, error)
	// Now is the backend's clock, by which credentials expire (nil: the
	// wall clock).
	Now func() time.Time
	// Replica, when set, opens a second provider on the same storage and
	// catalog, as another gateway process sharing them does (nothing in
	// memory shared with Provider); the suite then checks that a data
	// file lands once per table across the two (Replicas).
	Replica func(t *testing.T) catalogs.Provider
	// Advance moves the backend's clock forward by d, so that the suite
	// can see an expiring credential replaced; nil when the clock cannot
	// be moved (the refresh is then not checked).
	Advance func(d time.Duration)
}

func (in *Instance) now() time.Time {
	if in.Now != nil {
		return in.Now()
	}
	return time.Now()
}

// Run runs every conformance check against the backend h builds, as
// declared by cfg.
func Run(t *testing.T, h Harness, cfg Config) {
	if h.New == nil {
		t.Fatal("catalogtest: Harness.New is nil")
	}
	if h.Committers == 0 {
		h.Committers = 8
	}
	s := suite{h: h, cfg: cfg}
	for _, c := range s.checks() {
		t.Run(c.name, c.fn)
	}
}

// check is one conformance check: the subtest it runs as.
type check struct {
	name string
	fn   func(t *testing.T)
}

// checks are the suite's checks, in the order Run runs them; the Check
// column of catalogs.Contract names them (TestContractNamesChecks).
func (s suite) checks() []check {
	return []check{
		{"GetTableSpecConcurrent", s.testSpecConcurrent},
		{"InvisibleUntilCommit", s.testInvisibleUntilCommit},
		{"ConcurrentCommitters", s.testConcurrentCommitters},
		{"Discard", s.testDiscard},
		{"CommitOnce", s.testCommitOnce},
		{"CommitMatcher", s.testCommitMatcher},
		{"Replicas", s.testReplicas},
		{"Overwrite", s.testOverwrite},
		{"Stream", s.testStream},
		{"Scan", s.testScan},
		{"BadInput", s.testBadInput},
		{"CreateAndDrop", s.testCreateAndDrop},
		{"Uncreator", s.testUncreator},
		{"TableOptions", s.testTableOptions},
		{"SchemaReplacer", s.testSchemaReplacer},
		{"Reclaimer", s.testReclaimer},
		{"QueryPusher", s.testQueryPusher},
		{"SecurityContext", s.testSecurityContext},
		{"FilePlanner", s.testFilePlanner},
		{"StagedPlanner", s.testStagedPlanner},
		{"StagedScanner", s.testStagedScanner},
		{"StreamUnitOfWork", s.testTxnStream},
		{"MultiTableCommitter", s.testMultiTable},
		{"ReceiptChecker", s.testReceiptChecker},
		{"CheckUnreferenced", s.testCheckUnreferenced},
		{"PayloadCodec", s.testPayloadCodec},
		{"Maintainer", s.testMaintainer},
		{"StagedCreate", s.testStagedCreate},
		{"StagedCreateReclaim", s.testStagedCreateReclaim},
	}
}

// suite is one run of the checks: the harness and what the backend
// declared.
type suite struct {
	h   Harness
	cfg Config
}

// skipUnless skips t when the provider does not implement the optional
// interface named name (ok false), naming it.
func skipUnless(t *testing.T, ok bool, name string) {
	t.Helper()
	if !ok {
		t.Skipf("the backend does not implement %s", name)
	}
}

// Schema is the table schema the suite writes: a required id and an
// optional name.
var Schema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: false},
	{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
}, nil)

// Batch builds rows ids [from, from+n) of Schema, named row-<id>.
func Batch(from, n int64) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, Schema)
	defer b.Release()
	for i := from; i < from+n; i++ {
		b.Field(0).(*array.Int64Builder).Append(i)
		b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("row-%d", i))
	}
	return b.NewRecordBatch()
}

// setup builds an instance and a fresh table named name.
func (s suite) setup(t *testing.T, name string) (*Instance, catalogs.TableIdent) {
	t.Helper()
	in := s.h.New(t)
	if s.cfg.StagesFiles && in.ListFiles == nil {
		t.Fatal("Config.StagesFiles is declared but Instance.ListFiles is nil")
	}
	return in, createTable(t, in, name)
}

// createTable creates a table named name in the instance's namespace.
func createTable(t *testing.T, in *Instance, name string) catalogs.TableIdent {
	t.Helper()
	id := catalogs.TableIdent{Catalog: in.Catalog, Namespace: in.Namespace, Name: name}
	ctx := context.Background()
	if tm, ok := in.Provider.(catalogs.TableManager); ok {
		if _, err := tm.CreateTable(ctx, id, Schema, nil); err != nil {
			t.Fatalf("CreateTable(%s): %v", id, err)
		}
	} else if in.CreateTable != nil {
		if err := in.CreateTable(ctx, id, Schema); err != nil {
			t.Fatalf("harness CreateTable(%s): %v", id, err)
		}
	} else {
		t.Fatal("the backend is no catalogs.TableManager and the harness has no CreateTable")
	}
	return id
}

// rows counts the visible rows of a table.
func rows(t *testing.T, in *Instance, id catalogs.TableIdent) int64 {
	t.Helper()
	ctx := context.Background()
	if in.CountRows != nil {
		n, err := in.CountRows(ctx, id)
		if err != nil {
			t.Fatalf("CountRows(%s): %v", id, err)
		}
		return n
	}
	sc, ok := in.Provider.(catalogs.Scanner)
	if !ok {
		t.Fatal("the backend is no catalogs.Scanner and the harness has no CountRows")
	}
	res, err := sc.Scan(ctx, id, catalogs.ScanRequest{})
	if err != nil {
		t.Fatalf("Scan(%s): %v", id, err)
	}
	defer res.Reader.Release()
	var n int64
	for res.Reader.Next() {
		n += res.Reader.RecordBatch().NumRows()
	}
	if err := res.Reader.Err(); err != nil {
		t.Fatalf("Scan(%s) reader: %v", id, err)
	}
	return n
}

// write stages rows [from, from+n) with WriteBatch.
func write(t *testing.T, in *Instance, id catalogs.TableIdent, from, n int64) catalogs.WriteReceipt {
	t.Helper()
	b := Batch(from, n)
	defer b.Release()
	r, err := in.Provider.WriteBatch(context.Background(), id, b)
	if err != nil {
		t.Fatalf("WriteBatch(%s): %v", id, err)
	}
	if r.RowCount != uint64(n) {
		t.Fatalf("WriteBatch(%s) receipt rows = %d, want %d", id, r.RowCount, n)
	}
	return r
}

// commit commits receipts under commitID, with CommitOnce when the
// backend records commit ids and Commit otherwise.
func commit(ctx context.Context, in *Instance, id catalogs.TableIdent, commitID string, rs []catalogs.WriteReceipt) (catalogs.CommitOutcome, error) {
	if ic, ok := in.Provider.(catalogs.IdempotentCommitter); ok {
		return ic.CommitOnce(ctx, id, commitID, rs)
	}
	return in.Provider.Commit(ctx, id, rs)
}

// discard discards receipts when the backend can.
func discard(t *testing.T, in *Instance, id catalogs.TableIdent, rs []catalogs.WriteReceipt) {
	t.Helper()
	if d, ok := in.Provider.(catalogs.Discarder); ok && len(rs) > 0 {
		if err := d.Discard(context.Background(), id, rs); err != nil {
			t.Errorf("Discard(%s): %v", id, err)
		}
	}
}

// files lists the backend's files, sorted; nil unless it stages files.
func (s suite) files(t *testing.T, in *Instance) []string {
	t.Helper()
	if !s.cfg.StagesFiles {
		return nil
	}
	fs, err := in.ListFiles(context.Background())
	if err != nil {
		t.Fatalf("ListFiles: %v", err)
	}
	slices.Sort(fs)
	return fs
}

// sameFiles checks, for a backend that stages files, that the files now
// are before's.
func (s suite) sameFiles(t *testing.T, in *Instance, what string, before []string) {
	t.Helper()
	if !s.cfg.StagesFiles {
		return
	}
	if after := s.files(t, in); !slices.Equal(after, before) {
		t.Errorf("files after %s = %v, want %v", what, after, before)
	}
}

// wantKind checks err wraps kind and names every word in names.
func wantKind(t *testing.T, what string, err, kind error, names ...string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: no error, want %v", what, kind)
		return
	}
	if !errors.Is(err, kind) {
		t.Errorf("%s: error %q is not %v", what, err, kind)
	}
	for _, n := range names {
		if !strings.Contains(err.Error(), n) {
			t.Errorf("%s: error %q does not name %q", what, err, n)
		}
	}
	if msg := err.Error(); msg != "" && msg[0] >= 'A' && msg[0] <= 'Z' {
		t.Errorf("%s: error %q does not start in lower case", what, msg)
	}
}
