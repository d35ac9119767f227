package delta

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
)

// Action is one line of a commit file or one row of a checkpoint: exactly one of its fields
// is set. A line naming no action this package knows is an unknown action and is skipped
// when reading, as the protocol requires ("clients must ignore such unrecognized" actions).
type Action struct {
	Protocol           *Protocol
	MetaData           *Metadata
	Add                *AddFile
	Remove             *RemoveFile
	Txn                *Txn
	CommitInfo         *CommitInfo
	DomainMetadata     *DomainMetadata
	CDC                *AddCDCFile
	CheckpointMetadata *CheckpointMetadata
	Sidecar            *Sidecar
}

// Protocol is the `protocol` action: the versions and table features a reader or writer
// must implement.
type Protocol struct {
	MinReaderVersion int32
	MinWriterVersion int32
	// ReaderFeatures is present exactly when MinReaderVersion is 3, WriterFeatures exactly
	// when MinWriterVersion is 7.
	ReaderFeatures []string
	WriterFeatures []string
}

// Format is the `format` of a metaData action.
type Format struct {
	Provider string            `json:"provider"`
	Options  map[string]string `json:"options"`
}

// Metadata is the `metaData` action. SchemaString holds the schema in the schema
// serialization format ([ParseSchema]).
type Metadata struct {
	ID               string
	Name             *string
	Description      *string
	Format           Format
	SchemaString     string
	PartitionColumns []string
	CreatedTime      *int64
	Configuration    map[string]string
}

// DeletionVector is the DeletionVectorDescriptor of an add or remove action.
type DeletionVector struct {
	StorageType    string `json:"storageType"`
	PathOrInlineDv string `json:"pathOrInlineDv"`
	Offset         *int32 `json:"offset,omitempty"`
	SizeInBytes    int32  `json:"sizeInBytes"`
	Cardinality    int64  `json:"cardinality"`
}

// UniqueID is the descriptor's derived uniqueId: `<storageType><pathOrInlineDv>`, with
// `@<offset>` appended when the offset is present. Log replay keys logical files by
// (path, uniqueId).
func (dv *DeletionVector) UniqueID() string {
	if dv == nil {
		return ""
	}
	if dv.Offset != nil {
		return fmt.Sprintf("%s%s@%d", dv.StorageType, dv.PathOrInlineDv, *dv.Offset)
	}
	return dv.StorageType + dv.PathOrInlineDv
}

// AddFile is the `add` action. Path is as written in the log: a URI that must be decoded
// ([DecodePath]) to name the data file. A nil partition value is a null partition.
type AddFile struct {
	Path                    string             `json:"path"`
	PartitionValues         map[string]*string `json:"partitionValues"`
	Size                    int64              `json:"size"`
	ModificationTime        int64              `json:"modificationTime"`
	DataChange              bool               `json:"dataChange"`
	Stats                   string             `json:"stats,omitempty"`
	Tags                    map[string]string  `json:"tags,omitempty"`
	DeletionVector          *DeletionVector    `json:"deletionVector,omitempty"`
	BaseRowID               *int64             `json:"baseRowId,omitempty"`
	DefaultRowCommitVersion *int64             `json:"defaultRowCommitVersion,omitempty"`
	ClusteringProvider      *string            `json:"clusteringProvider,omitempty"`
}

// RemoveFile is the `remove` action; Size and PartitionValues are present when
// ExtendedFileMetadata is true.
type RemoveFile struct {
	Path                    string             `json:"path"`
	DeletionTimestamp       *int64             `json:"deletionTimestamp,omitempty"`
	DataChange              bool               `json:"dataChange"`
	ExtendedFileMetadata    *bool              `json:"extendedFileMetadata,omitempty"`
	PartitionValues         map[string]*string `json:"partitionValues,omitempty"`
	Size                    *int64             `json:"size,omitempty"`
	Stats                   string             `json:"stats,omitempty"`
	Tags                    map[string]string  `json:"tags,omitempty"`
	DeletionVector          *DeletionVector    `json:"deletionVector,omitempty"`
	BaseRowID               *int64             `json:"baseRowId,omitempty"`
	DefaultRowCommitVersion *int64             `json:"defaultRowCommitVersion,omitempty"`
}

// Txn is the `txn` action: the latest version an application committed.
type Txn struct {
	AppID       string `json:"appId"`
	Version     int64  `json:"version"`
	LastUpdated *int64 `json:"lastUpdated,omitempty"`
}

// CommitInfo is the `commitInfo` action. The protocol lets writers store any JSON object
// here, so it is kept whole, and re-encoded as it was read.
type CommitInfo struct {
	Fields map[string]json.RawMessage
}

// Int64 returns the integer field key of the commit info, if present and an integer.
func (c *CommitInfo) Int64(key string) (int64, bool) {
	if c == nil {
		return 0, false
	}
	raw, ok := c.Fields[key]
	if !ok || isNull(raw) {
		return 0, false
	}
	var n int64
	if json.Unmarshal(raw, &n) != nil {
		return 0, false
	}
	return n, true
}

// String returns the string field key of the commit info, if present and a string.
func (c *CommitInfo) String(key string) (string, bool) {
	if c == nil {
		return "", false
	}
	raw, ok := c.Fields[key]
	if !ok || isNull(raw) {
		return "", false
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// InCommitTimestamp is the commit's inCommitTimestamp, when the writer recorded one.
func (c *CommitInfo) InCommitTimestamp() (int64, bool) { return c.Int64("inCommitTimestamp") }

// DomainMetadata is the `domainMetadata` action.
type DomainMetadata struct {
	Domain        string `json:"domain"`
	Configuration string `json:"configuration"`
	Removed       bool   `json:"removed"`
}

// AddCDCFile is the `cdc` action.
type AddCDCFile struct {
	Path            string             `json:"path"`
	PartitionValues map[string]*string `json:"partitionValues"`
	Size            int64              `json:"size"`
	DataChange      bool               `json:"dataChange"`
	Tags            map[string]string  `json:"tags,omitempty"`
}

// CheckpointMetadata is the `checkpointMetadata` action, allowed only in V2 checkpoints.
type CheckpointMetadata struct {
	Version int64             `json:"version"`
	Tags    map[string]string `json:"tags,omitempty"`
}

// Sidecar is the `sidecar` action of a V2 checkpoint: a Parquet file of add and remove
// actions under _delta_log/_sidecars.
type Sidecar struct {
	Path             string            `json:"path"`
	SizeInBytes      int64             `json:"sizeInBytes"`
	ModificationTime int64             `json:"modificationTime"`
	Tags             map[string]string `json:"tags,omitempty"`
}

// DecodePath decodes the URI path of an add, remove or cdc action into the file's path
// relative to the table root (or its absolute URI). An invalid escape is malformed.
func DecodePath(p string) (string, error) {
	if p == "" {
		return "", fmt.Errorf("%w: empty file path", ErrMalformed)
	}
	u, err := url.PathUnescape(p)
	if err != nil {
		return "", fmt.Errorf("%w: file path %q: %v", ErrMalformed, p, err)
	}
	return u, nil
}

// EncodePath is the inverse of DecodePath for a relative path: it URI-escapes each
// segment, so that a directory named `p=a%3Db` is written as `p=a%253Db`.
func EncodePath(rel string) string {
	segs := bytes.Split([]byte(rel), []byte("/"))
	var b bytes.Buffer
	for i, s := range segs {
		if i > 0 {
			b.WriteByte('/')
		}
		b.WriteString(url.PathEscape(string(s)))
	}
	return b.String()
}

// lineKind says which actions a file may hold.
type lineKind int

const (
	inCommit     lineKind = iota // a commit file: no V2-checkpoint actions
	inCheckpoint                 // a JSON V2 checkpoint: no commitInfo or cdc
)

// ParseCommit decodes a commit file: newline-delimited JSON, one action per line. name is
// used in errors. Unknown actions and fields are skipped; blank lines are ignored.
func ParseCommit(name string, data []byte) ([]Action, error) {
	return parseLines(name, data, inCommit)
}

func parseLines(name string, data []byte, kind lineKind) ([]Action, error) {
	var out []Action
	line := 0
	for len(data) > 0 {
		line++
		var ln []byte
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			ln, data = data[:i], data[i+1:]
		} else {
			ln, data = data, nil
		}
		ln = bytes.TrimSpace(ln)
		if len(ln) == 0 {
			continue
		}
		a, ok, err := parseAction(ln)
		if err != nil {
			return nil, fmt.Errorf("%s line %d: %w", name, line, err)
		}
		if !ok {
			continue
		}
		switch {
		case kind == inCommit && (a.CheckpointMetadata != nil || a.Sidecar != nil):
			return nil, fmt.Errorf("%s line %d: %w: checkpointMetadata and sidecar actions are allowed only in V2 checkpoints", name, line, ErrMalformed)
		case kind == inCheckpoint && (a.CommitInfo != nil || a.CDC != nil):
			return nil, fmt.Errorf("%s line %d: %w: checkpoints must not hold commitInfo or cdc actions", name, line, ErrMalformed)
		}
		out = append(out, a)
	}
	return out, nil
}

// actionKeys are the action names of the protocol, in the order Spark writes them.
var actionKeys = []string{"commitInfo", "protocol", "metaData", "add", "remove", "txn", "domainMetadata", "cdc", "checkpointMetadata", "sidecar"}

// parseAction decodes one line. ok is false for a line that holds no known action.
func parseAction(line []byte) (a Action, ok bool, err error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(line, &m); err != nil {
		return a, false, fmt.Errorf("%w: not a JSON object: %v", ErrMalformed, err)
	}
	if m == nil {
		return a, false, fmt.Errorf("%w: not a JSON object", ErrMalformed)
	}
	found := ""
	for _, k := range actionKeys {
		raw, present := m[k]
		if !present || isNull(raw) {
			continue
		}
		if found != "" {
			return a, false, fmt.Errorf("%w: one line holds two actions, %s and %s", ErrMalformed, found, k)
		}
		found = k
		if err := a.decode(k, raw); err != nil {
			return a, false, err
		}
	}
	return a, found != "", nil
}

func (a *Action) decode(key string, raw json.RawMessage) error {
	o := newObj(key, raw)
	switch key {
	case "commitInfo":
		if o.err == nil {
			// Compacted, so that writing it back gives the bytes reading it again keeps.
			for k, v := range o.m {
				var b bytes.Buffer
				if err := json.Compact(&b, v); err != nil {
					return fmt.Errorf("%w: commitInfo.%s: %v", ErrMalformed, k, err)
				}
				o.m[k] = b.Bytes()
			}
			a.CommitInfo = &CommitInfo{Fields: o.m}
		}
	case "protocol":
		p := &Protocol{
			MinReaderVersion: o.i32("minReaderVersion", true),
			MinWriterVersion: o.i32("minWriterVersion", true),
			ReaderFeatures:   o.strSlice("readerFeatures", false),
			WriterFeatures:   o.strSlice("writerFeatures", false),
		}
		if o.err == nil {
			o.err = p.validate()
		}
		a.Protocol = p
	case "metaData":
		md := &Metadata{
			ID:               o.str("id", true),
			Name:             o.strPtr("name"),
			Description:      o.strPtr("description"),
			SchemaString:     o.str("schemaString", true),
			PartitionColumns: o.strSlice("partitionColumns", true),
			CreatedTime:      o.i64Ptr("createdTime"),
			Configuration:    o.strMap("configuration", true),
		}
		if f := o.sub("format", true); f != nil {
			md.Format = Format{Provider: f.str("provider", true), Options: f.strMap("options", false)}
			if md.Format.Options == nil {
				md.Format.Options = map[string]string{} // what every writer writes, and we write back
			}
			if f.err != nil {
				o.err = f.err
			}
		}
		if o.err == nil && md.ID == "" {
			o.err = fmt.Errorf("%w: metaData.id is empty", ErrMalformed)
		}
		a.MetaData = md
	case "add":
		f := &AddFile{
			Path:                    o.str("path", true),
			PartitionValues:         o.nullableStrMap("partitionValues", true),
			Size:                    o.i64("size", true),
			ModificationTime:        o.i64("modificationTime", true),
			DataChange:              o.boolean("dataChange", true),
			Stats:                   o.str("stats", false),
			Tags:                    o.strMap("tags", false),
			DeletionVector:          o.dv(),
			BaseRowID:               o.i64Ptr("baseRowId"),
			DefaultRowCommitVersion: o.i64Ptr("defaultRowCommitVersion"),
			ClusteringProvider:      o.strPtr("clusteringProvider"),
		}
		o.checkFile(f.Path, f.Size)
		a.Add = f
	case "remove":
		f := &RemoveFile{
			Path:                    o.str("path", true),
			DeletionTimestamp:       o.i64Ptr("deletionTimestamp"),
			DataChange:              o.boolean("dataChange", true),
			ExtendedFileMetadata:    o.boolPtr("extendedFileMetadata"),
			PartitionValues:         o.nullableStrMap("partitionValues", false),
			Size:                    o.i64Ptr("size"),
			Stats:                   o.str("stats", false),
			Tags:                    o.strMap("tags", false),
			DeletionVector:          o.dv(),
			BaseRowID:               o.i64Ptr("baseRowId"),
			DefaultRowCommitVersion: o.i64Ptr("defaultRowCommitVersion"),
		}
		var size int64
		if f.Size != nil {
			size = *f.Size
		}
		o.checkFile(f.Path, size)
		a.Remove = f
	case "txn":
		a.Txn = &Txn{AppID: o.str("appId", true), Version: o.i64("version", true), LastUpdated: o.i64Ptr("lastUpdated")}
	case "domainMetadata":
		a.DomainMetadata = &DomainMetadata{
			Domain:        o.str("domain", true),
			Configuration: o.str("configuration", true),
			Removed:       o.boolean("removed", true),
		}
	case "cdc":
		f := &AddCDCFile{
			Path:            o.str("path", true),
			PartitionValues: o.nullableStrMap("partitionValues", true),
			Size:            o.i64("size", true),
			DataChange:      o.boolean("dataChange", true),
			Tags:            o.strMap("tags", false),
		}
		o.checkFile(f.Path, f.Size)
		a.CDC = f
	case "checkpointMetadata":
		a.CheckpointMetadata = &CheckpointMetadata{Version: o.i64("version", true), Tags: o.strMap("tags", false)}
	case "sidecar":
		s := &Sidecar{
			Path:             o.str("path", true),
			SizeInBytes:      o.i64("sizeInBytes", true),
			ModificationTime: o.i64("modificationTime", true),
			Tags:             o.strMap("tags", false),
		}
		o.checkFile(s.Path, s.SizeInBytes)
		a.Sidecar = s
	}
	return o.err
}

func (o *obj) checkFile(path string, size int64) {
	if o.err != nil {
		return
	}
	if path == "" {
		o.err = fmt.Errorf("%w: %s.path is empty", ErrMalformed, o.what)
	} else if size < 0 {
		o.err = fmt.Errorf("%w: %s %q has negative size %d", ErrMalformed, o.what, path, size)
	}
}

// dv reads an optional deletionVector descriptor and checks what the protocol fixes.
func (o *obj) dv() *DeletionVector {
	s := o.sub("deletionVector", false)
	if s == nil {
		return nil
	}
	dv := &DeletionVector{
		StorageType:    s.str("storageType", true),
		PathOrInlineDv: s.str("pathOrInlineDv", true),
		SizeInBytes:    s.i32("sizeInBytes", true),
		Cardinality:    s.i64("cardinality", true),
	}
	if raw := s.field("offset", false); raw != nil {
		var off int32
		if s.decode("offset", raw, &off) {
			dv.Offset = &off
		}
	}
	if s.err == nil {
		s.err = dv.validate()
	}
	if s.err != nil {
		o.err = s.err
	}
	return dv
}

func (dv *DeletionVector) validate() error {
	switch dv.StorageType {
	case "i":
		if dv.Offset != nil {
			return fmt.Errorf("%w: inline deletion vector has an offset", ErrMalformed)
		}
	case "u":
		if len(dv.PathOrInlineDv) < uuidZ85Len {
			return fmt.Errorf("%w: deletion vector 'u' path %q is shorter than an encoded UUID", ErrMalformed, dv.PathOrInlineDv)
		}
	case "p":
	default:
		return fmt.Errorf("%w: deletion vector storageType %q is not one of u, i, p", ErrMalformed, dv.StorageType)
	}
	if dv.SizeInBytes < 0 || dv.Cardinality < 0 || (dv.Offset != nil && *dv.Offset < 0) {
		return fmt.Errorf("%w: deletion vector has a negative size, offset or cardinality", ErrMalformed)
	}
	return nil
}

func (p *Protocol) validate() error {
	if p.MinReaderVersion < 1 || p.MinWriterVersion < 1 {
		return fmt.Errorf("%w: protocol versions (%d, %d) must be at least 1", ErrMalformed, p.MinReaderVersion, p.MinWriterVersion)
	}
	if p.MinReaderVersion == 3 && p.ReaderFeatures == nil {
		return fmt.Errorf("%w: protocol reader version 3 without readerFeatures", ErrMalformed)
	}
	if p.MinWriterVersion == 7 && p.WriterFeatures == nil {
		return fmt.Errorf("%w: protocol writer version 7 without writerFeatures", ErrMalformed)
	}
	if p.MinReaderVersion >= 3 && p.MinWriterVersion < 7 {
		return fmt.Errorf("%w: protocol reader version %d needs writer version 7, not %d", ErrMalformed, p.MinReaderVersion, p.MinWriterVersion)
	}
	return nil
}

// MarshalJSON writes the protocol action's body, with the feature lists present exactly
// when the versions call for them.
func (p Protocol) MarshalJSON() ([]byte, error) {
	type body struct {
		MinReaderVersion int32     `json:"minReaderVersion"`
		MinWriterVersion int32     `json:"minWriterVersion"`
		ReaderFeatures   *[]string `json:"readerFeatures,omitempty"`
		WriterFeatures   *[]string `json:"writerFeatures,omitempty"`
	}
	b := body{MinReaderVersion: p.MinReaderVersion, MinWriterVersion: p.MinWriterVersion}
	if p.MinReaderVersion >= 3 {
		rf := nonNil(p.ReaderFeatures)
		b.ReaderFeatures = &rf
	}
	if p.MinWriterVersion >= 7 {
		wf := nonNil(p.WriterFeatures)
		b.WriterFeatures = &wf
	}
	return json.Marshal(b)
}

// MarshalJSON writes the metaData action's body with every required field present.
func (m Metadata) MarshalJSON() ([]byte, error) {
	type body struct {
		ID               string            `json:"id"`
		Name             *string           `json:"name,omitempty"`
		Description      *string           `json:"description,omitempty"`
		Format           Format            `json:"format"`
		SchemaString     string            `json:"schemaString"`
		PartitionColumns []string          `json:"partitionColumns"`
		CreatedTime      *int64            `json:"createdTime,omitempty"`
		Configuration    map[string]string `json:"configuration"`
	}
	f := m.Format
	if f.Options == nil {
		f.Options = map[string]string{}
	}
	cfg := m.Configuration
	if cfg == nil {
		cfg = map[string]string{}
	}
	return json.Marshal(body{m.ID, m.Name, m.Description, f, m.SchemaString, nonNil(m.PartitionColumns), m.CreatedTime, cfg})
}

// MarshalJSON writes the commit info as it was read (keys sorted).
func (c CommitInfo) MarshalJSON() ([]byte, error) {
	if c.Fields == nil {
		return []byte("{}"), nil
	}
	return marshalPlain(c.Fields)
}

// MarshalJSON writes the add action's body; partitionValues is always present.
func (f AddFile) MarshalJSON() ([]byte, error) {
	type plain AddFile
	if f.PartitionValues == nil {
		f.PartitionValues = map[string]*string{}
	}
	return json.Marshal(plain(f))
}

// MarshalJSON writes the remove action's body; partitionValues is present whenever it is
// non-nil, even empty (extendedFileMetadata says it is there).
func (f RemoveFile) MarshalJSON() ([]byte, error) {
	type plain RemoveFile
	type body struct {
		plain
		PartitionValues *map[string]*string `json:"partitionValues,omitempty"`
	}
	b := body{plain: plain(f)}
	if f.PartitionValues != nil {
		b.PartitionValues = &f.PartitionValues
	}
	b.plain.PartitionValues = nil
	return json.Marshal(b)
}

// MarshalJSON writes the cdc action's body; partitionValues is always present.
func (f AddCDCFile) MarshalJSON() ([]byte, error) {
	type plain AddCDCFile
	if f.PartitionValues == nil {
		f.PartitionValues = map[string]*string{}
	}
	return json.Marshal(plain(f))
}

// MarshalJSON writes the action as a single-key object, {"add":{...}}.
func (a Action) MarshalJSON() ([]byte, error) {
	var key string
	var v any
	n := 0
	set := func(k string, val any, ok bool) {
		if ok {
			key, v = k, val
			n++
		}
	}
	set("commitInfo", a.CommitInfo, a.CommitInfo != nil)
	set("protocol", a.Protocol, a.Protocol != nil)
	set("metaData", a.MetaData, a.MetaData != nil)
	set("add", a.Add, a.Add != nil)
	set("remove", a.Remove, a.Remove != nil)
	set("txn", a.Txn, a.Txn != nil)
	set("domainMetadata", a.DomainMetadata, a.DomainMetadata != nil)
	set("cdc", a.CDC, a.CDC != nil)
	set("checkpointMetadata", a.CheckpointMetadata, a.CheckpointMetadata != nil)
	set("sidecar", a.Sidecar, a.Sidecar != nil)
	if n != 1 {
		return nil, fmt.Errorf("delta: an action must hold exactly one of its fields, this one holds %d", n)
	}
	body, err := marshalPlain(v)
	if err != nil {
		return nil, err
	}
	return slices.Concat([]byte(`{"`+key+`":`), body, []byte("}")), nil
}

// EncodeCommit writes actions as a commit file: one JSON object per line, each line ending
// in a newline. Put commitInfo first when in-commit timestamps are on; this function keeps
// the order it is given.
func EncodeCommit(actions []Action) ([]byte, error) {
	var b bytes.Buffer
	for i, a := range actions {
		line, err := marshalPlain(a)
		if err != nil {
			return nil, fmt.Errorf("delta: action %d: %w", i, err)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	return b.Bytes(), nil
}

// marshalPlain is json.Marshal without HTML escaping: commit files are not HTML, and
// commitInfo is written back byte for byte as it was read.
func marshalPlain(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
