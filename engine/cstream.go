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
// then on; release frees it, whether DuckDB read it or not.
func registerStream(c duck.Connection, name string, r array.RecordReader) (release func(), err error) {
	// C memory, zeroed: DuckDB keeps the pointer, so it cannot be Go's.
	p := C.calloc(1, C.size_t(unsafe.Sizeof(cdata.CArrowArrayStream{})))
	cdata.ExportRecordReader(r, (*cdata.CArrowArrayStream)(p))
	release = func() {
		cdata.ReleaseCArrowArrayStream((*cdata.CArrowArrayStream)(p))
		C.free(p)
	}
	if duck.ArrowScan(c, name, duck.ArrowStream{Ptr: p}) == duck.StateError {
		release()
		return nil, fmt.Errorf("engine: cannot register the scan of %s", name)
	}
	return release, nil
}
