"""Reads Iceberg tables with DuckDB's iceberg extension (iceberg_scan over a metadata file). Run by
TestOtherReadersReadTableOptions in the venv of integration/delta/duckdb-requirements.txt:
    python duckdb_iceberg.py < [{"metadata": "<metadata.json>", "where": ["<sql>", ...], "snapshots": [<id>, ...]}, ...]
The extension loads only into the DuckDB release it was built for: it is LOADed from the file its
wheel ships, with autoinstall and autoload off (nothing is fetched, no other build is picked).
Prints one JSON array, an object for each table: {"rows": [...], "filters": [[...], ...], "at": {"<id>": [...]},
"snapshots": [<id>, ...]} (the rows read by time travel to each snapshot asked for, snapshot_from_id, and the
snapshots iceberg_snapshots lists; TestOtherReadersReadMaintainedTable asks), or
{"error": "<DuckDB's message>"} when DuckDB refuses the table. Values are spelled as Read.java
spells them: instants in UTC as Python's isoformat with nanoseconds when there are any, dates ISO."""
import datetime
import json
import os
import sys

import duckdb
import duckdb_extension_avro
import duckdb_extension_iceberg


def extension_file(pkg, name):
    path = os.path.join(os.path.dirname(pkg.__file__), "extensions", "v" + duckdb.__version__,
                        name + ".duckdb_extension")
    if not os.path.exists(path):
        sys.exit(f"duckdb_iceberg: no {name} extension for DuckDB {duckdb.__version__} at {path}")
    return path


def iso(ns, zone):
    """An instant of integer nanoseconds since the epoch, as Read.java spells it."""
    s, frac = divmod(ns, 1_000_000_000)
    t = datetime.datetime(1970, 1, 1) + datetime.timedelta(seconds=s)
    out = t.strftime("%Y-%m-%dT%H:%M:%S")
    if frac % 1000:
        out += f".{frac:09d}"
    elif frac:
        out += f".{frac // 1000:06d}"
    return out + ("+00:00" if zone else "")


def select(con, scan, where):
    """The rows of scan (filtered by where), timestamps as integer nanoseconds and dates as
    text in SQL (the Python values of a TIMESTAMP_NS lose the nanoseconds), then spelled."""
    cols = con.execute(f"DESCRIBE SELECT * FROM {scan}").fetchall()
    exprs, kinds = [], []
    for name, typ, *_ in cols:
        q = '"' + name.replace('"', '""') + '"'
        if typ.startswith("TIMESTAMP"):
            exprs.append(f"epoch_ns({q})")
            kinds.append("tz" if "TIME ZONE" in typ else "ts")
        elif typ == "DATE":
            exprs.append(f"CAST({q} AS VARCHAR)")
            kinds.append("")
        else:
            exprs.append(q)
            kinds.append("")
    sql = f"SELECT {', '.join(exprs)} FROM {scan}" + (f" WHERE {where}" if where else "")
    out = []
    for row in con.execute(sql).fetchall():
        out.append({c[0]: (iso(v, k == "tz") if k and v is not None else v) for c, k, v in zip(cols, kinds, row)})
    return out


def main():
    con = duckdb.connect(config={"autoinstall_known_extensions": False, "autoload_known_extensions": False})
    # iceberg reads manifests with avro: loaded first, from its own wheel.
    con.execute(f"LOAD '{extension_file(duckdb_extension_avro, 'avro')}'")
    con.execute(f"LOAD '{extension_file(duckdb_extension_iceberg, 'iceberg')}'")
    out = []
    for t in json.load(sys.stdin):
        scan = "iceberg_scan('" + t["metadata"].replace("'", "''") + "')"
        try:
            view = {"rows": select(con, scan, None), "filters": [select(con, scan, w) for w in t.get("where", [])]}
            meta = "'" + t["metadata"].replace("'", "''") + "'"
            if t.get("snapshots"):
                view["at"] = {str(s): select(con, f"iceberg_scan({meta}, snapshot_from_id => {int(s)})", None)
                              for s in t["snapshots"]}
                view["snapshots"] = [r[0] for r in con.execute(f"SELECT snapshot_id FROM iceberg_snapshots({meta})").fetchall()]
        except duckdb.Error as e:
            view = {"error": f"{type(e).__name__}: {e}"}
        out.append(view)
    print(json.dumps(out))


main()
