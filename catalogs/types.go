package catalogs

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
)

// TableIdent is a fully qualified table identifier: catalog, namespace,
// table. All three components are realm-scoped: the catalog name is the one
// configured in the gateway, and a principal can only name catalogs of its
// own realm.
type TableIdent struct {
	Catalog   string   `json:"catalog"`
	Namespace []string `json:"namespace"`
	Name      string   `json:"name"`
}

// String renders the identifier as catalog.ns1.ns2.table for messages.
func (t TableIdent) String() string {
	parts := make([]string, 0, len(t.Namespace)+2)
	parts = append(parts, t.Catalog)
	parts = append(parts, t.Namespace...)
	parts = append(parts, t.Name)
	return strings.Join(parts, ".")
}

// Key is a stable map key for the identifier (components cannot collide
// because they are joined with a NUL byte, which names never contain).
func (t TableIdent) Key() string {
	return t.Catalog + "\x00" + strings.Join(t.Namespace, "\x00") + "\x00\x00" + t.Name
}

// Validate reports an ErrInvalidArgument when a component is empty or
// breaks the name rules (ValidateName, ValidateNamespace). Every name from
// a client passes here before a backend builds a path or a location from
// it; the message names the table and the component at fault.
func (t TableIdent) Validate() error {
	if t.Catalog == "" {
		return Errorf(ErrInvalidArgument, "table %q: catalog name is empty", t.Name)
	}
	if t.Name == "" {
		return Errorf(ErrInvalidArgument, "table in catalog %q: table name is empty", t.Catalog)
	}
	if len(t.Namespace) == 0 {
		return Errorf(ErrInvalidArgument, "table %q: namespace is empty", t.String())
	}
	for _, c := range []struct{ kind, name string }{{"catalog", t.Catalog}, {"table", t.Name}} {
		if err := ValidateName(c.kind, c.name); err != nil {
			return Errorf(ErrInvalidArgument, "table %q: %w", t.String(), err)
		}
	}
	if err := ValidateNamespace(t.Namespace); err != nil {
		return Errorf(ErrInvalidArgument, "table %q: %w", t.String(), err)
	}
	return nil
}

// TableSpec describes a table at a point in time.
type TableSpec struct {
	// Schema is the table's current schema as Arrow.
	Schema *arrow.Schema `json:"-"`
	// SchemaSpec carries the field ids and the schema version.
	SchemaSpec    SchemaSpec        `json:"schema_spec"`
	PartitionSpec PartitionSpec     `json:"partition_spec"`
	Properties    map[string]string `json:"properties"`
	// CurrentSnapshotID is nil for a table with no snapshot yet.
	CurrentSnapshotID *int64 `json:"current_snapshot_id,omitempty"`
}

// WriteReceipt is a handle to staged data awaiting commit. Its JSON form is
// stable: receipts travel between processes in distributed writes.
type WriteReceipt struct {
	// Metadata is backend-specific and opaque to everyone else (for
	// example the serialized data files an Iceberg WriteBatch staged).
	Metadata  json.RawMessage `json:"metadata"`
	RowCount  uint64          `json:"row_count"`
	ByteCount uint64          `json:"byte_count"`
}

// CommitOutcome is the result of a commit.
type CommitOutcome struct {
	SnapshotID int64 `json:"snapshot_id"`
	// CommittedAt is serialized as RFC 3339 (with the fraction when set).
	CommittedAt time.Time `json:"committed_at"`
	// Retried counts the compare-and-swap conflicts the commit retried.
	Retried uint32 `json:"retried"`
	// Duplicate is true when the commit id had already landed with other
	// data than these receipts' (a second writer using the same commit id):
	// nothing of these receipts is in the table, and their staged files are
	// the caller's to discard. A commit repeated after a lost reply, whose
	// landed snapshot holds these very receipts, is not a duplicate. It is
	// not part of the JSON form.
	Duplicate bool `json:"-"`
}

// MarshalJSON writes committed_at in RFC 3339, in UTC.
func (c CommitOutcome) MarshalJSON() ([]byte, error) {
	type wire struct {
		SnapshotID  int64  `json:"snapshot_id"`
		CommittedAt string `json:"committed_at"`
		Retried     uint32 `json:"retried"`
	}
	return json.Marshal(wire{c.SnapshotID, c.CommittedAt.UTC().Format(time.RFC3339Nano), c.Retried})
}

// SecurityContext holds the encryption and credential metadata of a table.
type SecurityContext struct {
	Encryption  EncryptionLevel   `json:"encryption"`
	Credentials CatalogCredential `json:"credentials"`
}

// EncryptionKind tells which variant of EncryptionLevel is set.
type EncryptionKind string

// The encryption variants of the reference.
const (
	EncryptionNone         EncryptionKind = "none"
	EncryptionStorageLevel EncryptionKind = "storage_level"
	EncryptionClientSide   EncryptionKind = "client_side"
)

// EncryptionLevel is the reference's enum: None, StorageLevel{kms_key_arn}
// or ClientSide{key_metadata}. Only the fields of Kind are meaningful.
type EncryptionLevel struct {
	Kind        EncryptionKind    `json:"kind"`
	KMSKeyARN   string            `json:"kms_key_arn,omitempty"`
	KeyMetadata map[string]string `json:"key_metadata,omitempty"`
}

// CatalogCredential is a short-lived credential. The token is a Secret and
// never prints.
type CatalogCredential struct {
	Token     Secret          `json:"token"`
	ExpiresAt time.Time       `json:"expires_at"`
	Scope     CredentialScope `json:"scope"`
}

// Expired reports whether the credential is expired at now.
func (c CatalogCredential) Expired(now time.Time) bool {
	return !c.ExpiresAt.IsZero() && !now.Before(c.ExpiresAt)
}

// ScopeKind tells which variant of CredentialScope is set.
type ScopeKind string

// The credential scopes of the reference.
const (
	ScopeTableReadOnly     ScopeKind = "table_read_only"
	ScopeTableReadWrite    ScopeKind = "table_read_write"
	ScopeNamespaceReadOnly ScopeKind = "namespace_read_only"
)

// CredentialScope is the reference's enum: TableReadOnly(table),
// TableReadWrite(table) or NamespaceReadOnly{namespace}.
type CredentialScope struct {
	Kind      ScopeKind   `json:"kind"`
	Table     *TableIdent `json:"table,omitempty"`
	Namespace []string    `json:"namespace,omitempty"`
}

// SchemaSpec is the versioned description of a table's columns.
type SchemaSpec struct {
	SchemaVersion uint64          `json:"schema_version"`
	TimestampMs   int64           `json:"timestamp_ms"`
	Fields        []FieldMetadata `json:"fields"`
}

// FieldMetadata describes one top-level column with its stable field id.
type FieldMetadata struct {
	ID       int32          `json:"id"`
	Name     string         `json:"name"`
	DataType arrow.DataType `json:"-"`
	Nullable bool           `json:"nullable"`
	Doc      *string        `json:"doc,omitempty"`
}

// TransformKind names a partition transform.
type TransformKind string

// The partition transforms of the reference. The list is open: a backend
// may meet a transform it cannot describe and reports it as
// TransformUnknown with the original text in PartitionTransform.Name.
const (
	TransformIdentity TransformKind = "identity"
	TransformBucket   TransformKind = "bucket"
	TransformTruncate TransformKind = "truncate"
	TransformYear     TransformKind = "year"
	TransformMonth    TransformKind = "month"
	TransformDay      TransformKind = "day"
	TransformHour     TransformKind = "hour"
	TransformUnknown  TransformKind = "unknown"
)

// PartitionTransform is a transform with its parameter (the bucket count
// or the truncate width; zero for the others).
type PartitionTransform struct {
	Kind  TransformKind `json:"kind"`
	Param uint32        `json:"param,omitempty"`
	// Name keeps the backend's own spelling for TransformUnknown.
	Name string `json:"name,omitempty"`
}

// String renders the transform as Iceberg spells it: bucket[16].
func (p PartitionTransform) String() string {
	switch p.Kind {
	case TransformBucket, TransformTruncate:
		return fmt.Sprintf("%s[%d]", p.Kind, p.Param)
	case TransformUnknown:
		return p.Name
	default:
		return string(p.Kind)
	}
}

// PartitionField is one field of a partition spec.
type PartitionField struct {
	SourceID  int32              `json:"source_id"`
	Name      string             `json:"name"`
	Transform PartitionTransform `json:"transform"`
}

// PartitionSpec is a table's partition spec; an unpartitioned table has no
// fields.
type PartitionSpec struct {
	SpecID int32            `json:"spec_id"`
	Fields []PartitionField `json:"fields"`
}
