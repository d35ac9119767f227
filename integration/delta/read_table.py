"""Reads a Delta table with delta-rs (deltalake) and prints what it sees as JSON.

Usage: read_table.py <table-dir>[@version]...

Prints, one line per argument, {"version", "protocol": [reader, writer], "files", "columns",
"rows"}: the latest version or the one after the last @ (time travel), rows sorted by the first column, every value
rendered by render.py so that the Go tests compare them value by value. The flightgw
integration tests TestDeltaThroughTheGateway and TestDeltaReaders run it on tables the
gateway wrote.
"""
import json
import os
import sys

import pyarrow as pa
from deltalake import DeltaTable, QueryBuilder
from deltalake.exceptions import DeltaProtocolError

from render import render, render_map


def read(spec):
    path, _, version = spec.rpartition("@") if "@" in spec else (spec, "", "")
    dt = DeltaTable(path, version=int(version)) if version else DeltaTable(path)
    # deltalake 1.6.6's pyarrow dataset refuses the reader features columnMapping,
    # deletionVectors and v2Checkpoint ("not yet supported by the deltalake reader"), and
    # reads a column-mapped table on reader version 2 (Delta Spark's, without reader
    # features) as nulls; its DataFusion reader reads them all right.
    mapped = dt.metadata().configuration.get("delta.columnMapping.mode", "none") != "none"
    tbl = None
    if not mapped:
        try:
            tbl = dt.to_pyarrow_table()
        except DeltaProtocolError as e:
            if "not yet supported by the deltalake reader" not in str(e):
                raise
    if tbl is None:
        qb = QueryBuilder().register("t", dt)
        tbl = pa.RecordBatchReader.from_stream(qb.execute("SELECT * FROM t")).read_all()
    names = tbl.column_names
    maps = {f.name for f in tbl.schema if pa.types.is_map(f.type)}
    rows = [[(render_map if n in maps else render)(r[n]) for n in names] for r in tbl.to_pylist()]
    rows.sort(key=lambda r: int(r[0]))
    p = dt.protocol()
    out = {
        "version": dt.version(),
        "protocol": [p.min_reader_version, p.min_writer_version],
        "files": len(dt.file_uris()),
        "columns": names,
        "rows": rows,
    }
    json.dump(out, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    for spec in sys.argv[1:]:
        read(spec)
    # delta-rs (1.6.6) aborts at interpreter exit about half the time ("terminate
    # called without an active exception": its runtime's threads are torn down while
    # still joinable, delta-io/delta-rs#2184), even on a table it wrote itself. The
    # answer is complete once flushed, so leave without the teardown.
    sys.stdout.flush()
    os._exit(0)
