"""Reads the embedded lake written by flightgw with pyiceberg's SqlCatalog,
then appends rows of its own. Run by TestPyIcebergInterop:
    python pyiceberg_check.py <data-dir>
Prints one JSON object on stdout."""
import json
import sys

import pyarrow as pa
from pyiceberg.catalog.sql import SqlCatalog

data_dir = sys.argv[1]
cat = SqlCatalog("lake", uri=f"sqlite:///{data_dir}/catalog.db", warehouse=f"file://{data_dir}/warehouse")
tbl = cat.load_table("default.people")
before = tbl.scan().to_arrow()
summary = tbl.current_snapshot().summary
out = {
    "namespaces": [list(ns) for ns in cat.list_namespaces()],
    "tables": [list(t) for t in cat.list_tables("default")],
    "rows": before.num_rows,
    "ids": sorted(before.column("id").to_pylist()),
    "commit_id": summary.additional_properties.get("flightgw.commit-id"),
    "field_ids": [f.field_id for f in tbl.schema().fields],
}
tbl.append(pa.table({"id": pa.array([900, 901, 902], pa.int64()), "name": pa.array(["py", None, "py"])},
                    schema=tbl.schema().as_arrow()))
print(json.dumps(out))
