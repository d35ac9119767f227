//go:build duckdb_arrow

package engine

/*
#include <stdlib.h>
*/
import "C"

import (
	"fmt"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/cdata"
	duck "github.com/duckdb/duckdb-go-bindings"
)

// registerStream exposes r to DuckDB as a view named name on connection c,
// through the Arrow C stream interface (zero-copy). The stream owns r from
// then on; release drops the view and frees the stream, whether DuckDB
// read it or not.
//
// DuckDB's C API (duckdb_arrow_scan) can only create that view in the
// shared catalog (main, not temp): while it exists, any connection could
// name it, and once the stream is freed a query naming it would read
// freed memory and crash the process. So the view lives only from here
// until the query using it has been bound and started (Rows.run and
// Describe call dropView then, and release drops it again in any case,
// before the stream is freed), and no name a user writes can reach it:
// every table name is resolved for the caller and replaced (plan.go),
// and catalog introspection is refused.
func registerStream(c *conn, name string, r array.RecordReader) (release func(), err error) {
	// C memory, zeroed: DuckDB keeps the pointer, so it cannot be Go's.
	p := C.calloc(1, C.size_t(unsafe.Sizeof(cdata.CArrowArrayStream{})))
	cdata.ExportRecordReader(r, (*cdata.CArrowArrayStream)(p))
	free := func() {
		cdata.ReleaseCArrowArrayStream((*cdata.CArrowArrayStream)(p))
		C.free(p)
	}
	if duck.ArrowScan(c.c, name, duck.ArrowStream{Ptr: p}) == duck.StateError {
		// DuckDB may have created the view before it failed.
		c.dropView(name)
		free()
		return nil, fmt.Errorf("engine: cannot register the scan of %s", name)
	}
	return func() {
		c.dropView(name)
		free()
	}, nil
}

// dropView drops a view registerStream made. It is retried once: a view
// left behind would outlive its stream.
func (c *conn) dropView(name string) {
	if c.exec("DROP VIEW IF EXISTS main."+sqlIdent(name)) != nil {
		_ = c.exec("DROP VIEW IF EXISTS main." + sqlIdent(name))
	}
}

// dropViews drops the views of p's streams from a connection of its own,
// while p's query streams on its connection.
func (e *Engine) dropViews(p *plan) {
	if len(p.refs) == 0 {
		return
	}
	c, err := e.connect()
	if err != nil {
		return // each stream's release drops its view
	}
	defer c.close()
	for _, ref := range p.refs {
		c.dropView(ref.view)
	}
}
