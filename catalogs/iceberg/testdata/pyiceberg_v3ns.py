"""Reads a format version 3 table of nanosecond timestamps with pyiceberg's
SqlCatalog. Run by TestPyIcebergReadsV3Nanos:
    python pyiceberg_v3ns.py <data-dir> <namespace.table>
Prints one JSON object on stdout: the format version, the Iceberg types of
ts and tz, and each row's id with its timestamps as integer nanoseconds."""
import json
import sys

import pyarrow as pa
from pyiceberg.catalog.sql import SqlCatalog

data_dir, name = sys.argv[1], sys.argv[2]
cat = SqlCatalog("lake", uri=f"sqlite:///{data_dir}/catalog.db", warehouse=f"file://{data_dir}/warehouse")
tbl = cat.load_table(name)
rows = tbl.scan().to_arrow().sort_by("id")
print(json.dumps({
    "format_version": tbl.metadata.format_version,
    "types": {f.name: str(f.field_type) for f in tbl.schema().fields},
    "arrow": {n: str(rows.schema.field(n).type) for n in ("ts", "tz")},
    "ids": rows.column("id").to_pylist(),
    "ts": rows.column("ts").cast(pa.int64()).to_pylist(),
    "tz": rows.column("tz").cast(pa.int64()).to_pylist(),
}))
