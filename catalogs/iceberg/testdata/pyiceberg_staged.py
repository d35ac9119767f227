"""Reads a table the gateway created by a staged create (one catalog commit
that inserted the table's row with its first snapshot) with pyiceberg's
SqlCatalog, then appends rows of its own. Run by TestPyIcebergReadsStagedCreate:
    python pyiceberg_staged.py <data-dir> <namespace.table>
Prints one JSON object on stdout."""
import json
import sys

import pyarrow as pa
from pyiceberg.catalog.sql import SqlCatalog

data_dir, name = sys.argv[1], sys.argv[2]
cat = SqlCatalog("lake", uri=f"sqlite:///{data_dir}/catalog.db", warehouse=f"file://{data_dir}/warehouse")
tbl = cat.load_table(name)
rows = tbl.scan().to_arrow()
out = {
    "format_version": tbl.metadata.format_version,
    "ids": sorted(rows.column("id").to_pylist()),
    "partition": [str(f.transform) for f in tbl.spec().fields],
    "sort": [str(f.direction) for f in tbl.sort_order().fields],
    "commit_id": tbl.current_snapshot().summary.additional_properties.get("flightgw.commit-id"),
    "field_ids": [f.field_id for f in tbl.schema().fields],
}
tbl.append(pa.table({"id": pa.array([900, 901, 902], pa.int64()), "name": pa.array(["py", None, "py"])},
                    schema=tbl.schema().as_arrow()))
print(json.dumps(out))
