//go:build duckdb_arrow

package engine

import (
	"fmt"

	duck "github.com/duckdb/duckdb-go-bindings"
)

// MemoryUsage returns the bytes DuckDB's buffer manager holds (the sum of
// duckdb_memory()), for metrics. It opens a connection of its own, which
// costs well under a millisecond; it does not count the native scans'
// DuckDBs nor memory DuckDB allocates outside its buffer manager.
func (e *Engine) MemoryUsage() (int64, error) {
	c, err := e.connect()
	if err != nil {
		return 0, err
	}
	defer c.close()
	var res duck.Result
	defer duck.DestroyResult(&res)
	if duck.Query(c.c, "SELECT CAST(coalesce(sum(memory_usage_bytes), 0) AS BIGINT) FROM duckdb_memory()", &res) == duck.StateError {
		return 0, fmt.Errorf("engine: duckdb_memory(): %s", duck.ResultError(&res))
	}
	return duck.ValueInt64(&res, 0, 0), nil
}
