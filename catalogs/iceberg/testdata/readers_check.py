"""Reads one table of the embedded lake with pyiceberg (scan), DuckDB
(read_parquet of the table's data files) and pyarrow (pyarrow.parquet of
the same files), and reports the three readings, normalized, and the
metrics of each data file from pyiceberg's inspect.files(). Run by
TestReadersAgreeOnEveryType:
    python readers_check.py <data-dir> <namespace.table> <key column>
Prints one JSON object on stdout."""
import datetime
import decimal
import json
import math
import sys

import duckdb
import pyarrow.parquet as pq
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.types import MapType

data_dir, name, key = sys.argv[1], sys.argv[2], sys.argv[3]
cat = SqlCatalog("lake", uri=f"sqlite:///{data_dir}/catalog.db", warehouse=f"file://{data_dir}/warehouse")
tbl = cat.load_table(name)


maps = {f.name for f in tbl.schema().fields if isinstance(f.field_type, MapType)}


def norm(v):
    """One spelling for what the readers return: NaN as a string, instants
    in UTC, bytes in hex (maps are made dicts by row())."""
    if isinstance(v, dict):
        return {k: norm(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [norm(x) for x in v]
    if isinstance(v, float) and math.isnan(v):
        return "NaN"
    if isinstance(v, datetime.datetime):
        if v.tzinfo is not None:
            return v.astimezone(datetime.timezone.utc).isoformat()
        return v.isoformat()
    if isinstance(v, (datetime.date, datetime.time, decimal.Decimal)):
        return str(v)
    if isinstance(v, (bytes, bytearray, memoryview)):
        return bytes(v).hex()
    return v


def row(r):
    """r normalized; a map column's value (pyarrow: a list of pairs,
    DuckDB: a dict) as a dict."""
    out = {}
    for k, v in r.items():
        if k in maps and isinstance(v, list):
            v = dict(v)
        out[k] = norm(v)
    return out


def rows(dicts):
    return sorted((row(r) for r in dicts), key=lambda r: r[key])


py_rows = rows(tbl.scan().to_arrow().to_pylist())
files = tbl.inspect.files().to_pylist()
paths = [f["file_path"].removeprefix("file://") for f in files]
con = duckdb.connect()
res = con.execute("SELECT * FROM read_parquet(?)", [paths])
names = [d[0] for d in res.description]
duck_rows = rows(dict(zip(names, t)) for t in res.fetchall())
pa_rows = rows(r for p in paths for r in pq.read_table(p).to_pylist())
ids = {f.name: f.field_id for f in tbl.schema().fields}
for f in tbl.schema().fields:
    for sub in getattr(f.field_type, "fields", []):
        ids[f"{f.name}.{sub.name}"] = sub.field_id
metrics = []
for f in files:
    rm = f.get("readable_metrics") or {}
    metrics.append({
        "path": f["file_path"],
        "rows": f["record_count"],
        "nan": {str(k): v for k, v in dict(f["nan_value_counts"] or {}).items()},
        "null": {str(k): v for k, v in dict(f["null_value_counts"] or {}).items()},
        "values": {str(k): v for k, v in dict(f["value_counts"] or {}).items()},
        "lower": sorted(dict(f["lower_bounds"] or {})),
        "upper": sorted(dict(f["upper_bounds"] or {})),
        "f64_bounds": [norm(rm.get("f64", {}).get("lower_bound")), norm(rm.get("f64", {}).get("upper_bound"))],
    })
print(json.dumps({"pyiceberg": py_rows, "duckdb": duck_rows, "pyarrow": pa_rows, "ids": ids,
                  "metadata_location": tbl.metadata_location.removeprefix("file://"), "files": metrics}, default=str))
