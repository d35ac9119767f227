"""Reads a table of the embedded lake with pyiceberg's SqlCatalog. Run by
TestPyIcebergReadsReplace before and after a replace, and by
TestPyIcebergReadsRacedCommitOnce after two replicas' racing commits:
    python pyiceberg_replace.py <data-dir> <namespace.table>
Prints one JSON object on stdout."""
import json
import sys

from pyiceberg.catalog.sql import SqlCatalog

data_dir, name = sys.argv[1], sys.argv[2]
cat = SqlCatalog("lake", uri=f"sqlite:///{data_dir}/catalog.db", warehouse=f"file://{data_dir}/warehouse")
tbl = cat.load_table(name)
rows = tbl.scan().to_arrow()
print(json.dumps({
    "uuid": str(tbl.metadata.table_uuid),
    "snapshots": len(tbl.metadata.snapshots),
    "operation": tbl.current_snapshot().summary.operation.value,
    "columns": [f.name for f in tbl.schema().fields],
    "rows": rows.num_rows,
    "ids": sorted(rows.column("id").to_pylist()),
}))
