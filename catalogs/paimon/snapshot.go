package paimon

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/catalogs/lake"
)

// snapshot is Paimon's Snapshot as stored in snapshot/snapshot-N (JSON,
// version 3). Optional fields are pointers, omitted when null as Paimon
// omits them.
type snapshot struct {
	Version                   int               `json:"version"`
	ID                        int64             `json:"id"`
	SchemaID                  int64             `json:"schemaId"`
	BaseManifestList          string            `json:"baseManifestList"`
	BaseManifestListSize      *int64            `json:"baseManifestListSize,omitempty"`
	DeltaManifestList         string            `json:"deltaManifestList"`
	DeltaManifestListSize     *int64            `json:"deltaManifestListSize,omitempty"`
	ChangelogManifestList     *string           `json:"changelogManifestList,omitempty"`
	ChangelogManifestListSize *int64            `json:"changelogManifestListSize,omitempty"`
	IndexManifest             *string           `json:"indexManifest,omitempty"`
	CommitUser                string            `json:"commitUser"`
	CommitIdentifier          int64             `json:"commitIdentifier"`
	CommitKind                string            `json:"commitKind"`
	TimeMillis                int64             `json:"timeMillis"`
	TotalRecordCount          int64             `json:"totalRecordCount"`
	DeltaRecordCount          int64             `json:"deltaRecordCount"`
	ChangelogRecordCount      *int64            `json:"changelogRecordCount,omitempty"`
	Watermark                 *int64            `json:"watermark,omitempty"`
	Statistics                *string           `json:"statistics,omitempty"`
	Properties                map[string]string `json:"properties,omitempty"`
	NextRowID                 *int64            `json:"nextRowId,omitempty"`
}

// Snapshot constants as Paimon spells them.
const (
	snapshotVersion = 3
	// batchCommitIdentifier is BatchWriteBuilder.COMMIT_IDENTIFIER: a batch
	// commit's identifier. This backend's commits are batch commits whose
	// commit user is the gateway's commit id, which makes (commitUser,
	// commitIdentifier) unique per unit of work, as Paimon's exactly-once
	// check wants.
	batchCommitIdentifier = int64(1<<63 - 1)
	kindAppend            = "APPEND"
	kindOverwrite         = "OVERWRITE"
	hintLatest            = "LATEST"
	hintEarliest          = "EARLIEST"
)

func snapshotPath(table string, id int64) string {
	return table + "/snapshot/snapshot-" + strconv.FormatInt(id, 10)
}

// readSnapshot reads snapshot id; fs.ErrNotExist when it is missing.
func (p *Provider) readSnapshot(ctx context.Context, t catalogs.TableIdent, dir string, id int64) (*snapshot, error) {
	b, err := p.fs.Read(ctx, snapshotPath(dir, id))
	if err != nil {
		return nil, err
	}
	if bytes.Equal(b, unwrittenMark) {
		// A drop of a table whose create failed holds snapshot-1 while it
		// removes the table (dropCreated, DropUnwritten): the table is
		// going, and a committer must not build on it.
		return nil, catalogs.Errorf(catalogs.ErrNotFound, "table %s does not exist: it is being dropped, its create failed before its first commit", t)
	}
	var s snapshot
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: snapshot-%d is not Paimon snapshot JSON: %v", t, id, err)
	}
	if s.ID != id {
		return nil, catalogs.Errorf(catalogs.ErrInvalidArgument, "table %s: snapshot-%d holds id %d", t, id, s.ID)
	}
	return &s, nil
}

// latestSnapshot finds the newest snapshot as SnapshotManager does: from
// the LATEST hint, then forward while the next snapshot exists (the hint
// may lag behind, it is written after the snapshot); without a usable
// hint, by listing the directory. It returns nil for a table without
// snapshots.
func (p *Provider) latestSnapshot(ctx context.Context, t catalogs.TableIdent, dir string) (*snapshot, error) {
	id := int64(0)
	if b, err := p.fs.Read(ctx, dir+"/snapshot/"+hintLatest); err == nil {
		if n, perr := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); perr == nil && n > 0 {
			if ok, _ := p.fs.Exists(ctx, snapshotPath(dir, n)); ok {
				id = n
			}
		}
	}
	if id == 0 {
		names, err := p.fs.List(ctx, dir+"/snapshot")
		if err != nil {
			return nil, catalogs.Wrap(catalogs.ErrUnavailable, err, fmt.Sprintf("table %s: list snapshots", t))
		}
		for _, n := range names {
			if v, ok := strings.CutPrefix(n, "snapshot-"); ok {
				if x, err := strconv.ParseInt(v, 10, 64); err == nil && x > id {
					id = x
				}
			}
		}
		if id == 0 {
			return nil, nil
		}
	}
	for {
		ok, err := p.fs.Exists(ctx, snapshotPath(dir, id+1))
		if err != nil {
			return nil, catalogs.Wrap(catalogs.ErrUnavailable, err, fmt.Sprintf("table %s: snapshot-%d", t, id+1))
		}
		if !ok {
			break
		}
		id++
	}
	s, err := p.readSnapshot(ctx, t, dir, id)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, catalogs.Errorf(catalogs.ErrUnavailable, "table %s: snapshot-%d vanished while read (expired?)", t, id)
		}
		return nil, lake.MapErr(err, fmt.Sprintf("table %s: snapshot-%d", t, id))
	}
	return s, nil
}

// earliestID is the oldest snapshot still present (the EARLIEST hint or
// the directory listing), 0 when there is none.
func (p *Provider) earliestID(ctx context.Context, dir string) int64 {
	if b, err := p.fs.Read(ctx, dir+"/snapshot/"+hintEarliest); err == nil {
		if n, perr := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); perr == nil && n > 0 {
			if ok, _ := p.fs.Exists(ctx, snapshotPath(dir, n)); ok {
				return n
			}
		}
	}
	names, _ := p.fs.List(ctx, dir+"/snapshot")
	id := int64(0)
	for _, n := range names {
		if v, ok := strings.CutPrefix(n, "snapshot-"); ok {
			if x, err := strconv.ParseInt(v, 10, 64); err == nil && (id == 0 || x < id) {
				id = x
			}
		}
	}
	return id
}
