package handlers

import (
	"context"
	"fmt"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/codec/actions"
	"github.com/flightgw/flightgw/txn"
)

// MaintainTableActionType is the operator's maintenance action
// (docs/maintenance.md).
const MaintainTableActionType = actions.MaintainTable

// maintainTable answers MaintainTable: the table resolved in the caller's
// realm, as a write's is, then one txn.Maintain run.
func (h *Handler) maintainTable(ctx context.Context, body []byte) (any, error) {
	var req actions.MaintainRequest
	if err := decodeBody(MaintainTableActionType, body, &req); err != nil {
		return nil, err
	}
	cat, ident, err := h.resolve(ctx, req.TableRef)
	if err != nil {
		return nil, err
	}
	rep, err := h.opts.Txns.Maintain(ctx, txn.MaintainJob{Table: ident, Provider: cat.Provider,
		Request: catalogs.MaintainRequest{Tasks: req.Tasks, DryRun: req.DryRun}, MessageTTL: h.opts.CommitMessageTTL})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", MaintainTableActionType, err)
	}
	res := actions.MaintainResponse{TableRef: refOf(ident), DryRun: req.DryRun, Tasks: []actions.MaintainedTask{}}
	for _, tr := range rep.Tasks {
		res.Tasks = append(res.Tasks, actions.MaintainedTask{Task: tr.Task, Committed: tr.Committed, Abandoned: tr.Abandoned,
			ExpiredSnapshots: nonNil(tr.ExpiredSnapshots), RetainedSnapshots: tr.RetainedSnapshots, DataFiles: tr.DataFiles,
			ManifestFiles: tr.ManifestFiles, MetadataFiles: tr.MetadataFiles, Bytes: tr.Bytes, RewrittenFiles: tr.RewrittenFiles, AddedFiles: tr.AddedFiles,
			Kept: tr.Kept, Files: tr.Files})
	}
	return res, nil
}

// nonNil makes an empty list encode as [] rather than null.
func nonNil(ids []int64) []int64 {
	if ids == nil {
		return []int64{}
	}
	return ids
}
