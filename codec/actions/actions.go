// Package actions holds the JSON bodies of the distributed-commit Flight
// actions (docs/commit-messages.md): the gateway's handlers decode and
// answer them, and Go clients (package client) build and read them, with
// one definition between the two so that neither side's field names can
// drift from the other's.
//
// Requests are decoded strictly (Decode: an unknown key, a key in another
// case and a key given twice are refused), so a request type here carries
// exactly the fields the gateway accepts, spelt exactly once.
package actions

import "time"

// The action types, as ListActions lists them.
const (
	PrepareCommit   = "PrepareCommit"
	CommitMessages  = "CommitMessages"
	AbortMessages   = "AbortMessages"
	GetCommitStatus = "GetCommitStatus"
)

// TableRef names a table as Flight SQL does: Schema "a.b" is the
// namespace [a b]; empty Catalog and Schema are the gateway's defaults.
type TableRef struct {
	Catalog string `json:"catalog"`
	Schema  string `json:"schema"`
	Table   string `json:"table"`
}

// PrepareRequest is the body of PrepareCommit; an empty body (or an empty
// TransactionID) prepares the transaction open in the caller's session.
type PrepareRequest struct {
	TransactionID string `json:"transaction_id"`
}

// PreparedTable is one table of a PrepareCommit reply.
type PreparedTable struct {
	TableRef
	// Backend is the catalog type ("iceberg").
	Backend  string `json:"backend"`
	Rows     uint64 `json:"rows"`
	Bytes    uint64 `json:"bytes"`
	Receipts int    `json:"receipts"`
	// Payload is the signed envelope (base64 in JSON).
	Payload []byte `json:"payload"`
}

// PrepareResponse is the reply of PrepareCommit.
type PrepareResponse struct {
	TransactionID string          `json:"transaction_id"`
	Tables        []PreparedTable `json:"tables"`
}

// TableMessages is one table of a CommitMessages or AbortMessages
// request: every payload for it, from any number of workers.
type TableMessages struct {
	TableRef
	Payloads [][]byte `json:"payloads"`
}

// CommitRequest is the body of CommitMessages.
type CommitRequest struct {
	CommitID string          `json:"commit_id"`
	Tables   []TableMessages `json:"tables"`
}

// CommittedTable is one table of a CommitMessages reply.
type CommittedTable struct {
	TableRef
	SnapshotID  int64     `json:"snapshot_id"`
	CommittedAt time.Time `json:"committed_at"`
	Rows        uint64    `json:"rows"`
	Payloads    int       `json:"payloads"`
}

// CommitResponse is the reply of CommitMessages.
type CommitResponse struct {
	CommitID string           `json:"commit_id"`
	Tables   []CommittedTable `json:"tables"`
}

// AbortRequest is the body of AbortMessages.
type AbortRequest struct {
	// CommitID, when set, is the commit the payloads were tried in: if it
	// landed on a table, that table's files are live and are not deleted.
	CommitID string          `json:"commit_id"`
	Tables   []TableMessages `json:"tables"`
}

// AbortedTable is one table of an AbortMessages reply.
type AbortedTable struct {
	TableRef
	Receipts int `json:"receipts"`
}

// AbortResponse is the reply of AbortMessages.
type AbortResponse struct {
	Tables []AbortedTable `json:"tables"`
}

// StatusRequest is the body of GetCommitStatus.
type StatusRequest struct {
	TableRef
	CommitID string `json:"commit_id"`
}

// StatusResponse is the reply of GetCommitStatus; the snapshot fields are
// set only when Landed.
type StatusResponse struct {
	TableRef
	CommitID    string     `json:"commit_id"`
	Landed      bool       `json:"landed"`
	SnapshotID  int64      `json:"snapshot_id,omitempty"`
	CommittedAt *time.Time `json:"committed_at,omitempty"`
	Rows        uint64     `json:"rows,omitempty"`
}

// MaintainTable is the operator's action that runs table maintenance
// (docs/maintenance.md).
const MaintainTable = "MaintainTable"

// MaintainRequest is the body of MaintainTable: Tasks names the tasks
// ("expire_snapshots"...), none for every task the catalog runs; DryRun
// reports what they would do and changes nothing.
type MaintainRequest struct {
	TableRef
	Tasks  []string `json:"tasks"`
	DryRun bool     `json:"dry_run"`
}

// MaintainedTask is one task of a MaintainTable reply.
type MaintainedTask struct {
	Task              string   `json:"task"`
	Committed         bool     `json:"committed"`
	Abandoned         string   `json:"abandoned,omitempty"`
	ExpiredSnapshots  []int64  `json:"expired_snapshots"`
	RetainedSnapshots int      `json:"retained_snapshots"`
	DataFiles         int      `json:"data_files"`
	ManifestFiles     int      `json:"manifest_files"`
	MetadataFiles     int      `json:"metadata_files"`
	Bytes             int64    `json:"bytes"`
	RewrittenFiles    int      `json:"rewritten_files"`
	AddedFiles        int      `json:"added_files"`
	Kept              int      `json:"kept"`
	Files             []string `json:"files,omitempty"`
}

// MaintainResponse is the reply of MaintainTable.
type MaintainResponse struct {
	TableRef
	DryRun bool             `json:"dry_run"`
	Tasks  []MaintainedTask `json:"tasks"`
}
