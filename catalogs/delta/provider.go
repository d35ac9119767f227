package delta

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/google/uuid"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/catalogs/lake"
	dcodec "github.com/flightgw/flightgw/codec/delta"
)

// Type is the backend type name this package registers.
const Type = "delta"

func init() {
	catalogs.Register(Type, func(ctx context.Context, name string, props map[string]string) (catalogs.Provider, error) {
		return Open(ctx, name, props)
	})
}

// Provider is the Delta Lake backend over a directory of tables (local
// or S3). Every commit is a put-if-absent of the next _delta_log file,
// so several gateways (and other Delta writers) may commit to one table.
type Provider struct {
	name string
	cfg  config
	fs   lake.Store
	s3   *lake.S3
	log  *slog.Logger
	now  func() time.Time
	// groups are the commit queues of group commit (groupcommit.go).
	groups lake.Groups[*member]
	// checkpoints caches each table's newest checkpoint decoded.
	checkpoints checkpoints
	// states caches each table's newest replayed state (statecache.go).
	states replays
}

var (
	_ catalogs.Provider            = (*Provider)(nil)
	_ catalogs.Discarder           = (*Provider)(nil)
	_ catalogs.TableManager        = (*Provider)(nil)
	_ catalogs.Lister              = (*Provider)(nil)
	_ catalogs.IdempotentCommitter = (*Provider)(nil)
	_ catalogs.Overwriter          = (*Provider)(nil)
	_ catalogs.StreamWriter        = (*Provider)(nil)
	_ catalogs.Scanner             = (*Provider)(nil)
	_ catalogs.BreakerReporter     = (*Provider)(nil)
	_ catalogs.Closer              = (*Provider)(nil)
	_ catalogs.Maintainer          = (*Provider)(nil)
)

// Open builds the Delta catalog called name from props (see the Prop*
// constants), creating the namespaces of create-namespaces when missing.
func Open(ctx context.Context, name string, props map[string]string) (*Provider, error) {
	if name == "" {
		return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "delta catalog: name is empty")
	}
	cfg, err := parseConfig(props)
	if err != nil {
		return nil, err
	}
	p := &Provider{name: name, cfg: cfg, now: time.Now, log: slog.Default().With("catalog", name, "backend", Type)}
	if p.fs, p.s3, err = lake.OpenStore(ctx, cfg.root, cfg.s3, cfg.remote); err != nil {
		return nil, err
	}
	for _, ns := range cfg.createNamespaces {
		if err := p.CreateNamespace(ctx, ns); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// nsMarker is the object that makes a namespace directory exist on every
// storage (S3 has no empty directories); Delta readers never look there.
const nsMarker = ".flightgw-namespace"

// CreateNamespace creates the namespace directory when missing.
func (p *Provider) CreateNamespace(ctx context.Context, ns string) error {
	if err := catalogs.ValidateName("namespace", ns); err != nil {
		return err
	}
	if err := p.fs.Put(ctx, ns+"/"+nsMarker, nil); err != nil {
		return lake.MapErr(err, fmt.Sprintf("catalog %q: create namespace %q", p.name, ns))
	}
	return nil
}

// tableDir checks a table identifier and returns the table's directory
// relative to the warehouse: <namespace>/<table>.
func (p *Provider) tableDir(t catalogs.TableIdent) (string, error) {
	if err := t.Validate(); err != nil {
		return "", err
	}
	if t.Catalog != p.name {
		return "", catalogs.Errorf(catalogs.ErrNotFound, "table %s: no catalog %q here (this is %q)", t, t.Catalog, p.name)
	}
	if len(t.Namespace) != 1 {
		return "", catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: a Delta namespace is one directory level, not %d", t, len(t.Namespace))
	}
	return lake.Join(t.Namespace[0], t.Name)
}

// storeLog is a table's _delta_log on the store (dcodec.Log), with the
// provider's checkpoint cache when it has one.
type storeLog struct {
	fs     lake.Store
	dir    string // the table directory
	cache  *checkpoints
	states *replays
}

// checkpoints keeps the decoded actions of the newest checkpoint file
// read of each table, and of the sidecars read with it
// (dcodec.CheckpointCache): every commit and scan replays from it, and
// decoding it is most of a replay (of a V2 checkpoint with sidecars,
// nearly all of it is the sidecars').
type checkpoints struct {
	mu sync.Mutex
	m  map[string]cachedCheckpoint // by table directory
}

type cachedCheckpoint struct {
	name     string
	acts     []dcodec.Action
	sidecars map[string][]dcodec.Action // by name in _delta_log ("_sidecars/…")
}

// maxCachedTables bounds the tables whose checkpoint is kept;
// maxCachedSidecars the sidecars kept with one (a sidecar read for an
// older checkpoint, by time travel, joins the newest one's until then).
const (
	maxCachedTables   = 64
	maxCachedSidecars = 16
)

func (l storeLog) CheckpointActions(name string) ([]dcodec.Action, bool) {
	if l.cache == nil {
		return nil, false
	}
	l.cache.mu.Lock()
	defer l.cache.mu.Unlock()
	c, ok := l.cache.m[l.dir]
	if !ok {
		return nil, false
	}
	if isSidecar(name) {
		acts, ok := c.sidecars[name]
		return acts, ok
	}
	return c.acts, c.name == name
}

func (l storeLog) KeepCheckpointActions(name string, acts []dcodec.Action) {
	if l.cache == nil {
		return
	}
	l.cache.mu.Lock()
	defer l.cache.mu.Unlock()
	if l.cache.m == nil {
		l.cache.m = map[string]cachedCheckpoint{}
	}
	c, ok := l.cache.m[l.dir]
	if isSidecar(name) {
		// A sidecar never changes (its name is a UUID): kept beside the
		// checkpoint entry read before it, never displacing it.
		if ok && len(c.sidecars) < maxCachedSidecars {
			c.sidecars[name] = acts
		}
		return
	}
	if ok && c.name >= name {
		return // this one or a newer one is kept (names sort by version)
	}
	if !ok && len(l.cache.m) >= maxCachedTables {
		for k := range l.cache.m { // any one: tables beyond the bound take turns
			delete(l.cache.m, k)
			break
		}
	}
	l.cache.m[l.dir] = cachedCheckpoint{name: name, acts: acts, sidecars: map[string][]dcodec.Action{}}
}

// isSidecar tells a sidecar's name (in _delta_log) from a checkpoint's.
func isSidecar(name string) bool { return strings.Contains(name, "/") }

func (l storeLog) List(ctx context.Context) ([]string, error) {
	return l.fs.List(ctx, l.dir+"/_delta_log")
}

func (l storeLog) Read(ctx context.Context, name string) ([]byte, error) {
	p, err := lake.Join(l.dir+"/_delta_log", name)
	if err != nil {
		return nil, err
	}
	return l.fs.Read(ctx, p)
}

// tableState is a table as one replay of its log saw it.
type tableState struct {
	ident catalogs.TableIdent
	dir   string
	snap  *dcodec.Snapshot
	// schema is the logical Arrow schema, partition columns included.
	schema *arrow.Schema
}

// load replays the table's log to version (negative: the latest).
func (p *Provider) load(ctx context.Context, t catalogs.TableIdent, version int64) (*tableState, error) {
	dir, err := p.tableDir(t)
	if err != nil {
		return nil, err
	}
	snap, err := dcodec.Load(ctx, storeLog{fs: p.fs, dir: dir, cache: &p.checkpoints, states: &p.states}, version)
	if err != nil {
		return nil, p.logErr(t, version, err)
	}
	sc, err := dcodec.ArrowSchema(snap.Schema, dcodec.LogicalNames)
	if err != nil {
		return nil, catalogs.Wrap(catalogs.ErrFailedPrecondition, err, fmt.Sprintf("table %s: schema", t))
	}
	return &tableState{ident: t, dir: dir, snap: snap, schema: sc}, nil
}

// logErr classifies an error of log replay: a table without commits is
// not found, a log this package cannot read is the table's state (not
// the client's input), a storage failure is the storage's.
func (p *Provider) logErr(t catalogs.TableIdent, version int64, err error) error {
	var fe *dcodec.FeatureError
	switch {
	case errors.Is(err, dcodec.ErrVersionNotFound) && version < 0:
		return catalogs.Wrap(catalogs.ErrNotFound, err, fmt.Sprintf("table %s does not exist", t))
	case errors.Is(err, dcodec.ErrVersionNotFound):
		return catalogs.Wrap(catalogs.ErrNotFound, err, fmt.Sprintf("table %s: version %d", t, version))
	case errors.As(err, &fe):
		return catalogs.Wrap(catalogs.ErrFailedPrecondition, err, fmt.Sprintf("table %s", t))
	case errors.Is(err, dcodec.ErrMalformed):
		return catalogs.Wrap(catalogs.ErrFailedPrecondition, err, fmt.Sprintf("table %s: transaction log", t))
	}
	return lake.MapErr(err, fmt.Sprintf("table %s: read transaction log", t))
}

// GetTableSpec returns the table's schema, partition columns,
// configuration and version.
func (p *Provider) GetTableSpec(ctx context.Context, t catalogs.TableIdent) (catalogs.TableSpec, error) {
	st, err := p.load(ctx, t, -1)
	if err != nil {
		return catalogs.TableSpec{}, err
	}
	return st.spec(), nil
}

func (st *tableState) spec() catalogs.TableSpec {
	spec := catalogs.TableSpec{Schema: st.schema, Properties: map[string]string{}}
	spec.SchemaSpec.TimestampMs = derefOr(st.snap.Metadata.CreatedTime, 0)
	for i, f := range st.schema.Fields() {
		spec.SchemaSpec.Fields = append(spec.SchemaSpec.Fields, catalogs.FieldMetadata{
			ID: int32(i + 1), Name: f.Name, DataType: f.Type, Nullable: f.Nullable})
	}
	for k, v := range st.snap.Metadata.Configuration {
		spec.Properties[k] = v
	}
	if pc := st.snap.Metadata.PartitionColumns; len(pc) > 0 {
		spec.Properties[optPartition] = strings.Join(pc, ",")
		for _, c := range pc {
			spec.PartitionSpec.Fields = append(spec.PartitionSpec.Fields, catalogs.PartitionField{
				SourceID: int32(st.schema.FieldIndices(c)[0] + 1), Name: c,
				Transform: catalogs.PartitionTransform{Kind: catalogs.TransformIdentity}})
		}
	}
	v := st.snap.Version
	spec.CurrentSnapshotID = &v
	return spec
}

func derefOr(p *int64, d int64) int64 {
	if p == nil {
		return d
	}
	return *p
}

// optPartition is the table option naming the partition columns.
const optPartition = "partition"

// CheckTableOptions implements catalogs.TableManager: partition, a
// comma-separated list of top-level columns of a primitive type, not
// every column, and the table properties of createProps; any other
// option is refused naming it.
func (p *Provider) CheckTableOptions(t catalogs.TableIdent, schema *arrow.Schema, opts map[string]string) error {
	_, _, err := createOptions(t, schema, opts)
	return err
}

// createProps are the table properties a create takes as ingest
// options, each with the values it accepts: the features this backend
// writes (column mapping, in-commit timestamps) and the properties it
// honours.
var createProps = map[string]func(string) bool{
	dcodec.PropColumnMappingMode:         func(v string) bool { return v == "none" || v == "name" || v == "id" },
	dcodec.PropInCommitTimestamps:        isBool,
	dcodec.PropEnableRowTracking:         isBool,
	dcodec.PropCheckpointInterval:        func(v string) bool { n, err := strconv.ParseInt(v, 10, 64); return err == nil && n > 0 },
	"delta.appendOnly":                   isBool,
	PropTableTargetFileSize:              func(v string) bool { n, err := strconv.ParseInt(v, 10, 64); return err == nil && n >= 1<<10 },
	"delta.logRetentionDuration":         isInterval,
	"delta.deletedFileRetentionDuration": isInterval,
}

func isBool(v string) bool { return v == "true" || v == "false" }

func isInterval(v string) bool { _, err := dcodec.ParseInterval(v); return err == nil }

// createOptions splits a create's options into the partition columns and
// the table properties, refusing what it does not know, InvalidArgument
// naming the option.
func createOptions(t catalogs.TableIdent, schema *arrow.Schema, opts map[string]string) ([]string, map[string]string, error) {
	props := map[string]string{}
	for k, v := range opts {
		if k == optPartition {
			continue
		}
		ok, known := createProps[k]
		if !known {
			names := []string{optPartition}
			for n := range createProps {
				names = append(names, n)
			}
			slices.Sort(names)
			return nil, nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: table option %q is not supported by the Delta backend (supported: %s)", t, k, strings.Join(names, ", "))
		}
		if v = strings.TrimSpace(v); !ok(v) {
			return nil, nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: table option %q: value %q is not valid", t, k, v)
		}
		props[k] = v
	}
	part, err := partitionOption(t, schema, opts[optPartition])
	return part, props, err
}

func partitionOption(t catalogs.TableIdent, schema *arrow.Schema, v string) ([]string, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return nil, nil
	}
	var cols []string
	for _, c := range strings.Split(v, ",") {
		c = strings.TrimSpace(c)
		is := schema.FieldIndices(c)
		if len(is) != 1 {
			return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: table option %q: column %q is not in the table", t, optPartition, c)
		}
		if slices.Contains(cols, c) {
			return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: table option %q: column %q is named twice", t, optPartition, c)
		}
		if _, nested := schema.Field(is[0]).Type.(arrow.NestedType); nested {
			return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: table option %q: column %q of type %s: only primitive columns partition", t, optPartition, c, schema.Field(is[0]).Type)
		}
		cols = append(cols, c)
	}
	if len(cols) == schema.NumFields() {
		return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: table option %q: every column is a partition column; a data file needs one column", t, optPartition)
	}
	return cols, nil
}

// version0 is what version 0 of a new table's log holds, and where.
type version0 struct {
	dir   string
	proto dcodec.Protocol
	md    dcodec.Metadata
	ict   bool // in-commit timestamps on: commitInfo carries one
}

// initial checks a create (the namespace exists, every type and option
// applies) and builds its protocol and metadata at time now.
func (p *Provider) initial(ctx context.Context, t catalogs.TableIdent, schema *arrow.Schema, opts map[string]string, now int64) (version0, error) {
	dir, err := p.tableDir(t)
	if err != nil {
		return version0{}, err
	}
	if ok, err := p.fs.Exists(ctx, t.Namespace[0]); err != nil || !ok {
		if err == nil {
			err = catalogs.Errorf(catalogs.ErrNotFound, "table %s: namespace %q does not exist", t, t.Namespace[0])
		}
		return version0{}, lake.MapErr(err, fmt.Sprintf("table %s: namespace", t))
	}
	part, props, err := createOptions(t, schema, opts)
	if err != nil {
		return version0{}, err
	}
	ds, err := dcodec.FromArrow(schema)
	if err != nil {
		return version0{}, catalogs.Wrap(catalogs.ErrInvalidArgument, err, fmt.Sprintf("table %s", t))
	}
	var readerF, writerF []string
	if needsNtz(schema.Fields()) {
		readerF, writerF = append(readerF, dcodec.FeatureTimestampNtz), append(writerF, dcodec.FeatureTimestampNtz)
	}
	if m := props[dcodec.PropColumnMappingMode]; m == "name" || m == "id" {
		// Every column, nested ones too, gets its physical name and id now;
		// partition columns and stats go by the physical names.
		props[dcodec.PropColumnMappingMaxID] = strconv.Itoa(int(dcodec.AssignColumnMapping(ds)))
		readerF, writerF = append(readerF, dcodec.FeatureColumnMapping), append(writerF, dcodec.FeatureColumnMapping)
	}
	ict := props[dcodec.PropInCommitTimestamps] == "true"
	if ict {
		// Enabled at the create: version 0 is the enablement version, its
		// in-commit timestamp the enablement time (PROTOCOL.md "In-Commit
		// Timestamps").
		writerF = append(writerF, dcodec.FeatureInCommitTimestamp)
		props[dcodec.PropInCommitTimestampEnablementVersion] = "0"
		props[dcodec.PropInCommitTimestampEnablementTimestamp] = strconv.FormatInt(now, 10)
	}
	if props["delta.appendOnly"] == "true" {
		// The property is active only with the feature listed.
		writerF = append(writerF, dcodec.FeatureAppendOnly)
	}
	if props[dcodec.PropEnableRowTracking] == "true" {
		// Row ids from baseRowId, the high-water mark in the
		// delta.rowTracking domain (round.rowIDs); the materialized
		// columns are named, as enabling requires, and never written
		// (their values would all be null).
		writerF = append(writerF, dcodec.FeatureRowTracking, dcodec.FeatureDomainMetadata)
		props[dcodec.PropMaterializedRowIDColumn] = "_row-id-col-" + uuid.NewString()
		props[dcodec.PropMaterializedRowCommitVersionColumn] = "_row-commit-version-col-" + uuid.NewString()
	}
	ss, err := ds.SchemaString()
	if err != nil {
		return version0{}, catalogs.Wrap(catalogs.ErrInvalidArgument, err, fmt.Sprintf("table %s", t))
	}
	proto := dcodec.Protocol{MinReaderVersion: 1, MinWriterVersion: 7, WriterFeatures: writerF}
	if len(readerF) > 0 {
		proto.MinReaderVersion, proto.ReaderFeatures = 3, readerF
	}
	if len(props) == 0 {
		props = nil
	}
	md := dcodec.Metadata{ID: uuid.NewString(), Format: dcodec.Format{Provider: "parquet"}, SchemaString: ss, CreatedTime: &now,
		PartitionColumns: part, Configuration: props}
	return version0{dir: dir, proto: proto, md: md, ict: ict}, nil
}

// CreateTable creates a table, partitioned by the partition option's
// columns, with the table properties of the other options: version 0 of
// its log holds the protocol (writer 7 on table features: timestampNtz
// when a column needs it, columnMapping for a mapping mode name or id,
// inCommitTimestamp when enabled; reader 3 with the reader features among
// them, else reader 1) and the metadata, written by put-if-absent so that
// of two concurrent creates one wins.
func (p *Provider) CreateTable(ctx context.Context, t catalogs.TableIdent, schema *arrow.Schema, opts map[string]string) (catalogs.TableSpec, error) {
	now := p.now().UnixMilli()
	v0, err := p.initial(ctx, t, schema, opts, now)
	if err != nil {
		return catalogs.TableSpec{}, err
	}
	dir, part, proto, md, ict := v0.dir, v0.md.PartitionColumns, v0.proto, v0.md, v0.ict
	ci := commitInfo(now, "CREATE TABLE", map[string]any{"mode": "ErrorIfExists", "location": dir, "partitionBy": partitionBy(part)}, false, "", nil)
	if ict {
		ci.SetInCommitTimestamp(now)
	}
	b, err := dcodec.EncodeCommit([]dcodec.Action{{CommitInfo: ci}, {Protocol: &proto}, {MetaData: &md}})
	if err != nil {
		return catalogs.TableSpec{}, err
	}
	switch err := p.fs.Create(ctx, dir+"/_delta_log/"+dcodec.CommitName(0), b); {
	case errors.Is(err, lake.ErrExists):
		return catalogs.TableSpec{}, catalogs.Errorf(catalogs.ErrAlreadyExists, "table %s already exists", t)
	case err != nil:
		return catalogs.TableSpec{}, lake.MapErr(err, fmt.Sprintf("table %s: write log version 0", t))
	}
	st, err := p.load(ctx, t, -1)
	if err != nil {
		return catalogs.TableSpec{}, err
	}
	return st.spec(), nil
}

// partitionBy is commitInfo's partitionBy, a JSON list as Spark writes it.
func partitionBy(cols []string) string {
	if cols == nil {
		cols = []string{}
	}
	b, _ := json.Marshal(cols)
	return string(b)
}

// needsNtz reports whether a column (at any depth) is a timestamp
// without time zone, which needs the timestampNtz feature.
func needsNtz(fs []arrow.Field) bool {
	for _, f := range fs {
		switch t := f.Type.(type) {
		case *arrow.TimestampType:
			if t.TimeZone == "" {
				return true
			}
		case arrow.NestedType:
			if needsNtz(t.Fields()) {
				return true
			}
		}
	}
	return false
}

// DropTable deletes the table's directory, data included.
func (p *Provider) DropTable(ctx context.Context, t catalogs.TableIdent) error {
	st, err := p.load(ctx, t, -1)
	if err != nil {
		return err
	}
	// A table created again at this location starts from version 0:
	// nothing of this one's replayed state applies to it.
	defer p.states.drop(st.dir)
	if err := p.fs.RemoveAll(ctx, st.dir); err != nil {
		return lake.MapErr(err, fmt.Sprintf("table %s: drop", t))
	}
	return nil
}

// ListNamespaces lists the warehouse's directories whose names are valid
// namespace names.
func (p *Provider) ListNamespaces(ctx context.Context) ([][]string, error) {
	names, err := p.fs.List(ctx, "")
	if err != nil {
		return nil, lake.MapErr(err, fmt.Sprintf("catalog %q: list namespaces", p.name))
	}
	var out [][]string
	for _, n := range names {
		if strings.HasPrefix(n, ".") || catalogs.ValidateName("namespace", n) != nil {
			continue
		}
		if l, ok := p.fs.Local(n); ok {
			if ok, _ := isDir(l); !ok {
				continue
			}
		}
		out = append(out, []string{n})
	}
	return out, nil
}

// isDir reports whether the local path p is a directory.
func isDir(p string) (bool, error) {
	fi, err := os.Stat(p)
	if err != nil {
		return false, err
	}
	return fi.IsDir(), nil
}

// ListTables lists a namespace's directories that hold a _delta_log.
func (p *Provider) ListTables(ctx context.Context, namespace []string) ([]catalogs.TableIdent, error) {
	if len(namespace) != 1 {
		return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "catalog %q: namespace %q: a Delta namespace is one level", p.name, namespace)
	}
	if err := catalogs.ValidateNamespace(namespace); err != nil {
		return nil, err
	}
	names, err := p.fs.List(ctx, namespace[0])
	if err != nil {
		return nil, lake.MapErr(err, fmt.Sprintf("catalog %q: list tables of %q", p.name, namespace[0]))
	}
	var out []catalogs.TableIdent
	for _, n := range names {
		if catalogs.ValidateName("table", n) != nil {
			continue
		}
		if ok, _ := p.fs.Exists(ctx, namespace[0]+"/"+n+"/_delta_log"); ok {
			out = append(out, catalogs.TableIdent{Catalog: p.name, Namespace: slices.Clone(namespace), Name: n})
		}
	}
	return out, nil
}

// GetSecurityContext reports no encryption, and as the credential the S3
// session token of the configuration (none on a local warehouse).
func (p *Provider) GetSecurityContext(ctx context.Context, t catalogs.TableIdent) (catalogs.SecurityContext, error) {
	if _, err := p.load(ctx, t, -1); err != nil {
		return catalogs.SecurityContext{}, err
	}
	tt := t
	cred := catalogs.CatalogCredential{Scope: catalogs.CredentialScope{Kind: catalogs.ScopeTableReadWrite, Table: &tt}}
	if p.cfg.s3 != nil {
		cred.Token = p.cfg.s3.SessionToken
	}
	return catalogs.SecurityContext{Encryption: catalogs.EncryptionLevel{Kind: catalogs.EncryptionNone}, Credentials: cred}, nil
}

// Breakers reports the object storage breaker; a local warehouse has none.
func (p *Provider) Breakers() []catalogs.Breaker {
	if p.s3 == nil {
		return nil
	}
	return []catalogs.Breaker{{Name: "storage", State: p.s3.Breaker()}}
}
