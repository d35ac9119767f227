package paimon

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightgw/flightgw/catalogs"
)

// The partial-update merge engine on read, as Paimon's
// PartialUpdateMergeFunction merges without sequence groups or
// aggregate functions (which are refused: optPartialOptions): a key's rows
// in merge order (sequence fields, then sequence number), each non-null
// field of a later row replacing the earlier value. A retraction
// (UPDATE_BEFORE, DELETE) is skipped with ignore-delete; a DELETE removes
// the record with partial-update.remove-record-on-delete; otherwise Java
// fails the read, and so does this backend.

const (
	optIgnoreDelete       = "ignore-delete"
	optPartialRemoveOnDel = "partial-update.remove-record-on-delete"
)

func partialUpdate(s *tableSchema) bool {
	return len(s.PrimaryKeys) > 0 && strings.EqualFold(strings.TrimSpace(s.Options[optMergeEngine]), "partial-update")
}

// partialFieldOption is the first per-field option that changes the
// partial-update merge (a sequence group, an aggregate function), or "".
func partialFieldOption(s *tableSchema) string {
	for _, k := range sortedKeys(s.Options) {
		if k == "fields.default-aggregate-function" {
			return k
		}
		if strings.HasPrefix(k, "fields.") && (strings.HasSuffix(k, ".sequence-group") || strings.HasSuffix(k, ".aggregate-function") || strings.HasSuffix(k, ".ignore-retract")) {
			return k
		}
	}
	return ""
}

// mergePartial merges the rows of all (columns: sequence number, value
// kind, then read's) by key.
func (p *Provider) mergePartial(ctx context.Context, st *tableState, all arrow.RecordBatch, read, want *arrow.Schema, keyOf func(int) string, after func(i, j int) bool) (arrow.RecordBatch, error) {
	ignoreDelete := strings.EqualFold(strings.TrimSpace(st.schema.Options[optIgnoreDelete]), "true")
	removeOnDelete := strings.EqualFold(strings.TrimSpace(st.schema.Options[optPartialRemoveOnDel]), "true")
	kinds := all.Column(1).(*array.Int8)
	order, groups := mergeGroups(int(all.NumRows()), keyOf, after)
	// src[c][n] is the row whose value column c of output row n takes
	// (-1: null).
	src := make([][]int, want.NumFields())
	cols := make([]arrow.Array, want.NumFields())
	for c, f := range want.Fields() {
		cols[c] = all.Column(2 + read.FieldIndices(f.Name)[0])
	}
	for _, k := range order {
		rows := groups[k]
		cur := make([]int, len(cols))
		live := false
		for _, r := range rows {
			switch kd := kinds.Value(r); {
			case kd == 1 || kd == 3:
				switch {
				case ignoreDelete:
				case kd == 3 && removeOnDelete:
					live = false
				default:
					return nil, catalogs.Errorf(catalogs.ErrFailedPrecondition, "table %s: a partial-update table holds a retraction (option %q, %q unset): Paimon fails such a read too", st.ident, optMergeEngine, optIgnoreDelete)
				}
				continue
			}
			if !live {
				for c := range cur {
					cur[c] = -1
				}
				live = true
			}
			for c, a := range cols {
				if !a.IsNull(r) {
					cur[c] = r
				}
			}
		}
		if !live {
			continue
		}
		for c := range cols {
			src[c] = append(src[c], cur[c])
		}
	}
	return takeColumns(ctx, st, want, cols, src)
}

// mergeGroups groups rows 0..n-1 by key, keys in order of first
// appearance, each group's rows in merge order (after; equal rows keep
// file order).
func mergeGroups(n int, keyOf func(int) string, after func(i, j int) bool) ([]string, map[string][]int) {
	groups := map[string][]int{}
	var order []string
	for i := range n {
		k := keyOf(i)
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], i)
	}
	for _, rows := range groups {
		slices.SortStableFunc(rows, func(a, b int) int {
			switch {
			case !after(a, b):
				return -1
			case !after(b, a):
				return 1
			}
			return 0
		})
	}
	return order, groups
}

// takeColumns builds a batch of schema want whose column c takes, for
// output row n, row src[c][n] of cols[c] (null for -1).
func takeColumns(ctx context.Context, st *tableState, want *arrow.Schema, cols []arrow.Array, src [][]int) (arrow.RecordBatch, error) {
	n := 0
	if len(src) > 0 {
		n = len(src[0])
	}
	out := make([]arrow.Array, len(cols))
	defer func() {
		for _, a := range out {
			if a != nil {
				a.Release()
			}
		}
	}()
	for c, a := range cols {
		b := array.NewInt64Builder(memory.DefaultAllocator)
		for _, r := range src[c] {
			if r < 0 {
				b.AppendNull()
			} else {
				b.Append(int64(r))
			}
		}
		idx := b.NewArray()
		b.Release()
		t, err := compute.TakeArray(ctx, a, idx)
		idx.Release()
		if err != nil {
			return nil, catalogs.Wrap(catalogs.ErrUnavailable, err, fmt.Sprintf("table %s: merge bucket", st.ident))
		}
		out[c] = t
	}
	rec := array.NewRecordBatch(want, out, int64(n))
	return rec, nil
}
