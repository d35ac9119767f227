package delta

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// checkpointColumns are the action columns of a checkpoint (PROTOCOL.md "Checkpoint
// Schema"); a sidecar holds only add and remove.
var checkpointColumns = []string{"protocol", "metaData", "add", "remove", "txn", "domainMetadata", "checkpointMetadata", "sidecar"}

// ParseCheckpointParquet decodes the actions of a Parquet checkpoint, checkpoint part or
// sidecar. Each row holds one action, as a struct column named after it; absent columns
// are null. Rows are converted to the JSON form of their action and decoded by the same
// strict decoder as commit files, so the two cannot disagree. The parsed forms
// (partitionValues_parsed, stats_parsed) are skipped: the string forms are authoritative.
func ParseCheckpointParquet(ctx context.Context, name string, data []byte) (actions []Action, err error) {
	defer func() {
		// pqarrow reads structure from the footer; a hostile file must be an error here,
		// never the process's end.
		if r := recover(); r != nil {
			actions, err = nil, fmt.Errorf("%s: %w: unreadable parquet: %v", name, ErrMalformed, r)
		}
	}()
	pf, err := file.NewParquetReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %v", name, ErrMalformed, err)
	}
	defer pf.Close()
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: 1024}, memory.DefaultAllocator)
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %v", name, ErrMalformed, err)
	}
	tbl, err := fr.ReadTable(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %v", name, ErrMalformed, err)
	}
	defer tbl.Release()
	sch := tbl.Schema()
	type col struct {
		key string
		ch  *arrow.Chunked
	}
	var cols []col
	for _, k := range checkpointColumns {
		idx := sch.FieldIndices(k)
		if len(idx) == 0 {
			continue
		}
		cols = append(cols, col{k, tbl.Column(idx[0]).Data()})
	}
	// Rows are visited in file order; each non-null action column of a row is one action.
	for _, c := range cols {
		row := 0
		for _, chunk := range c.ch.Chunks() {
			for i := 0; i < chunk.Len(); i++ {
				row++
				if chunk.IsNull(i) {
					continue
				}
				v, err := arrowValue(chunk, i, 0)
				if err != nil {
					return nil, fmt.Errorf("%s row %d %s: %w", name, row, c.key, err)
				}
				raw, err := json.Marshal(v)
				if err != nil {
					return nil, fmt.Errorf("%s row %d %s: %w: %v", name, row, c.key, ErrMalformed, err)
				}
				var a Action
				if err := a.decode(c.key, raw); err != nil {
					return nil, fmt.Errorf("%s row %d: %w", name, row, err)
				}
				actions = append(actions, a)
			}
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
	return actions, nil
}

// arrowValue converts one value to the Go form encoding/json writes as the action's JSON.
func arrowValue(arr arrow.Array, i int, depth int) (any, error) {
	if depth > maxSchemaDepth {
		return nil, fmt.Errorf("%w: nested deeper than %d", ErrMalformed, maxSchemaDepth)
	}
	if arr.IsNull(i) {
		return nil, nil
	}
	switch a := arr.(type) {
	case *array.Struct:
		st := a.DataType().(*arrow.StructType)
		m := make(map[string]any, a.NumField())
		for f := 0; f < a.NumField(); f++ {
			name := st.Field(f).Name
			if strings.HasSuffix(name, "_parsed") {
				continue
			}
			v, err := arrowValue(a.Field(f), i, depth+1)
			if err != nil {
				return nil, err
			}
			m[name] = v
		}
		return m, nil
	case *array.Map:
		start, end := a.ValueOffsets(i)
		keys, items := a.Keys(), a.Items()
		m := make(map[string]any, end-start)
		for j := int(start); j < int(end); j++ {
			k, err := arrowValue(keys, j, depth+1)
			if err != nil {
				return nil, err
			}
			ks, ok := k.(string)
			if !ok {
				return nil, fmt.Errorf("%w: map key of type %s, want string", ErrMalformed, keys.DataType())
			}
			v, err := arrowValue(items, j, depth+1)
			if err != nil {
				return nil, err
			}
			m[ks] = v
		}
		return m, nil
	case array.ListLike:
		start, end := a.ValueOffsets(i)
		vals := a.ListValues()
		out := make([]any, 0, end-start)
		for j := int(start); j < int(end); j++ {
			v, err := arrowValue(vals, j, depth+1)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	case *array.String:
		return a.Value(i), nil
	case *array.LargeString:
		return a.Value(i), nil
	case *array.Binary:
		return string(a.Value(i)), nil
	case *array.Boolean:
		return a.Value(i), nil
	case *array.Int8:
		return int64(a.Value(i)), nil
	case *array.Int16:
		return int64(a.Value(i)), nil
	case *array.Int32:
		return int64(a.Value(i)), nil
	case *array.Int64:
		return a.Value(i), nil
	case *array.Timestamp:
		return int64(a.Value(i)), nil
	}
	return nil, fmt.Errorf("%w: checkpoint column of type %s", ErrMalformed, arr.DataType())
}
