"""The one rendering of a value that every Delta reader check prints (read_table.py with
delta-rs, read_duckdb.py with DuckDB; java/Read.java does the same in Java), so that the
Go tests compare the readers' answers value by value against one expectation:

null is null; booleans "true"/"false"; integers and decimals as plain digits (decimals
with their scale); floats as Java's Double.toString spells the values the tests use
("2.25", "3.0", "NaN", "Infinity", "-Infinity"); strings as they are; binaries in lowercase
hex; dates ISO; timestamps (with zone, in UTC, and without) "YYYY-MM-DD HH:MM:SS.ffffff";
a struct as an object of its fields, a list as a list, a map as a list of [key, value]
pairs sorted by key.
"""
import datetime
import decimal
import math


def render(v):
    if v is None:
        return None
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, datetime.datetime):
        if v.tzinfo is not None:
            v = v.astimezone(datetime.timezone.utc).replace(tzinfo=None)
        return v.strftime("%Y-%m-%d %H:%M:%S.%f")
    if isinstance(v, datetime.date):
        return v.isoformat()
    if isinstance(v, decimal.Decimal):
        return format(v, "f")
    if isinstance(v, float):
        if math.isnan(v):
            return "NaN"
        if math.isinf(v):
            return "Infinity" if v > 0 else "-Infinity"
        return repr(v)
    if isinstance(v, (bytes, bytearray, memoryview)):
        return bytes(v).hex()
    if isinstance(v, dict):
        # DuckDB hands a MAP over as a dict of its entries, a STRUCT as a dict of its fields:
        # the caller says which (render_map).
        return {k: render(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [render(x) for x in v]
    return str(v)


def render_map(entries):
    """A map as [[key, value], ...] sorted by key: pyarrow gives a list of (key, value)
    tuples, DuckDB a dict."""
    if entries is None:
        return None
    items = entries.items() if isinstance(entries, dict) else entries
    return sorted([[render(k), render(x)] for k, x in items], key=lambda e: str(e[0]))
