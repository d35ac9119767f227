"""Reads a table after snapshot expiry with pyiceberg's SqlCatalog: the
current snapshot and, by time travel, every snapshot the metadata keeps,
value by value. Run by TestPyIcebergReadsExpiredTable:
    python pyiceberg_expired.py <data-dir> <table>
Prints one JSON object on stdout: {"snapshots": {id: [[id, name], ...]},
"current": id, "refs": {name: id}}."""
import json
import sys

from pyiceberg.catalog.sql import SqlCatalog

data_dir, name = sys.argv[1], sys.argv[2]
cat = SqlCatalog("lake", uri=f"sqlite:///{data_dir}/catalog.db", warehouse=f"file://{data_dir}/warehouse")
tbl = cat.load_table(f"default.{name}")


def rows(t):
    return sorted([r["id"], r["name"]] for r in t.to_pylist())


out = {
    "current": tbl.current_snapshot().snapshot_id,
    "refs": {n: r.snapshot_id for n, r in tbl.metadata.refs.items()},
    "snapshots": {str(s.snapshot_id): rows(tbl.scan(snapshot_id=s.snapshot_id).to_arrow()) for s in tbl.snapshots()},
}
print(json.dumps(out))
