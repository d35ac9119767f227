"""Reads a Delta table with DuckDB's delta extension and prints what it sees as JSON.

Usage: read_duckdb.py <table-dir>[@version]...

Runs in its own venv (integration/delta/duckdb-requirements.txt): the extension loads only
into the DuckDB release it was built for, so it is LOADed from the file its wheel ships,
with extension autoinstall and autoload off (nothing is fetched, no other build is picked).
A table on S3 (s3://…) is read from the server of AWS_ENDPOINT_URL with the httpfs extension,
loaded the same way. Prints, one line per argument, {"version", "columns", "rows"} like read_table.py: the latest
version or the one after the last @ (delta_scan's version parameter), rows sorted by the first column, every value rendered
by render.py. TestDeltaReaders runs it on the tables the gateway wrote.
"""
import json
import os
import sys

import duckdb
import duckdb_extension_delta
import duckdb_extension_httpfs

from render import render, render_map


def extension_file(pkg, name):
    path = os.path.join(os.path.dirname(pkg.__file__), "extensions", "v" + duckdb.__version__,
                        name + ".duckdb_extension")
    if not os.path.exists(path):
        sys.exit(f"read_duckdb: no {name} extension for DuckDB {duckdb.__version__} at {path}")
    return path


def connect():
    con = duckdb.connect(config={"autoinstall_known_extensions": False,
                                 "autoload_known_extensions": False})
    con.execute(f"LOAD '{extension_file(duckdb_extension_delta, 'delta')}'")
    endpoint = os.environ.get("AWS_ENDPOINT_URL")
    if endpoint:
        # s3:// tables on the S3 server of AWS_ENDPOINT_URL (path style, plain http, as
        # the tests' server serves), with the credentials of the usual AWS_* variables.
        con.execute(f"LOAD '{extension_file(duckdb_extension_httpfs, 'httpfs')}'")
        def lit(v):
            return "'" + v.replace("'", "''") + "'"
        con.execute(f"CREATE SECRET s3 (TYPE s3, KEY_ID {lit(os.environ['AWS_ACCESS_KEY_ID'])}, "
                    f"SECRET {lit(os.environ['AWS_SECRET_ACCESS_KEY'])}, "
                    f"REGION {lit(os.environ.get('AWS_REGION', 'us-east-1'))}, "
                    f"ENDPOINT {lit(endpoint.split('://', 1)[-1])}, URL_STYLE 'path', "
                    f"USE_SSL {'false' if endpoint.startswith('http://') else 'true'})")
    # Timestamps with a zone are read in UTC and handed over without one: DuckDB would
    # otherwise need pytz to build zoned datetimes.
    con.execute("SET TimeZone = 'UTC'")
    return con


def read(con, spec):
    path, _, version = spec.rpartition("@") if "@" in spec else (spec, "", "")
    scan = "delta_scan(?" + (", version := ?)" if version else ")")
    args = [path] + ([int(version)] if version else [])
    cols = con.execute(f"DESCRIBE SELECT * FROM {scan}", args).fetchall()
    select = ", ".join(
        f'"{name}"::TIMESTAMP AS "{name}"' if typ == "TIMESTAMP WITH TIME ZONE" else f'"{name}"'
        for name, typ, *_ in cols)
    rows = con.execute(f"SELECT {select} FROM {scan}", args).fetchall()
    maps = {i for i, (_, typ, *_) in enumerate(cols) if typ.startswith("MAP(")}
    out_rows = [[(render_map if i in maps else render)(v) for i, v in enumerate(r)] for r in rows]
    out_rows.sort(key=lambda r: int(r[0]))
    json.dump({"version": int(version) if version else None,
               "columns": [c[0] for c in cols], "rows": out_rows}, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    con = connect()
    for spec in sys.argv[1:]:
        read(con, spec)
