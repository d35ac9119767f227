"""pypaimon reads every sample table catalogs/paimon wrote (TestWriteSamples) and finds
exactly the rows the Go side expected (expected/<table>.txt, rendered as Paimon Java's
Tables.render spells them). PAIMON_SAMPLES names the warehouse: a local directory, or an
s3:// warehouse on integration/s3server (make paimon-s3-check), which hands its endpoint and
test credentials to its command in S3_ENDPOINT, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and
AWS_REGION; the expected rows of an s3:// warehouse are in the local directory
PAIMON_EXPECTED (which, when set, names them for a local warehouse too). PAIMON_DB names the database (default: default).
An expected/<table>@<n>.txt holds the rows of snapshot n, read by time travel (scan.snapshot-id)."""

import os
import re
from pathlib import Path

import pytest
from pypaimon import CatalogFactory

WAREHOUSE = os.environ.get("PAIMON_SAMPLES", "")
IS_S3 = WAREHOUSE.startswith("s3://")
EXPECTED = Path(os.environ.get("PAIMON_EXPECTED") or (os.path.join(WAREHOUSE, "expected") if not IS_S3 else ""))
DB = os.environ.get("PAIMON_DB", "default")
# Tables whose instants pypaimon 2.1.0 reads to microseconds (rounded down): its merge of
# a primary-key table's files goes through Python datetimes (Paimon Java keeps every digit).
MICROS = set(filter(None, os.environ.get("PAIMON_PYPAIMON_MICROS", "").split(",")))
TABLES = sorted(p.stem for p in EXPECTED.glob("*.txt")) if WAREHOUSE and EXPECTED.name else []


def catalog_options():
    opts = {"warehouse": WAREHOUSE}
    if IS_S3:
        # pypaimon's S3 file system is pyarrow's S3FileSystem; path style, as the
        # server (and any S3 store behind a custom endpoint) wants.
        opts.update({
            "fs.s3.endpoint": os.environ["S3_ENDPOINT"],
            "fs.s3.accessKeyId": os.environ["AWS_ACCESS_KEY_ID"],
            "fs.s3.accessKeySecret": os.environ["AWS_SECRET_ACCESS_KEY"],
            "fs.s3.region": os.environ.get("AWS_REGION", "us-east-1"),
            "fs.s3.path-style-access": "true",
        })
    return opts


def java_time(v):
    """An instant as Java's LocalDateTime.toString spells it: seconds when not zero, the
    fraction in groups of three digits (a pandas Timestamp carries nanoseconds)."""
    nanos = v.microsecond * 1000 + getattr(v, "nanosecond", 0)
    s = v.strftime("%Y-%m-%dT%H:%M")
    if v.second or nanos:
        s += v.strftime(":%S")
    if nanos % 1_000_000 == 0 and nanos:
        s += f".{nanos // 1_000_000:03d}"
    elif nanos % 1000 == 0 and nanos:
        s += f".{nanos // 1000:06d}"
    elif nanos:
        s += f".{nanos:09d}"
    return s


def value(v):
    if v is None:
        return "null"
    if isinstance(v, bytes):
        return "0x" + v.hex()
    if hasattr(v, "strftime"):
        return java_time(v)
    return str(v)


def to_micros(line):
    """Every Java-spelled instant of a rendered row, to microseconds rounded down, spelled
    with six digits."""
    def cut(m):
        frac = (m.group(3) or "")[1:]
        return f"{m.group(1)}:{m.group(2) or '00'}.{(frac + '000000')[:6]}"
    return re.sub(r"(\d{4}-\d\d-\d\dT\d\d:\d\d)(?::(\d\d))?(\.\d+)?", cut, line)


def render(row):
    """name=value in column order, null as "null": Tables.render's spelling."""
    return ",".join(f"{k}={value(v)}" for k, v in row.items())


@pytest.mark.skipif(not TABLES, reason="PAIMON_SAMPLES names no warehouse with samples")
@pytest.mark.parametrize("table", TABLES)
def test_pypaimon_reads_gateway_table(table):
    catalog = CatalogFactory.create(catalog_options())
    name, _, snapshot = table.partition("@")
    t = catalog.get_table(f"{DB}.{name}")
    if snapshot:
        t = t.copy({"scan.snapshot-id": snapshot})
    rb = t.new_read_builder()
    got = sorted(render(r) for r in rb.new_read().to_arrow(rb.new_scan().plan().splits()).to_pylist())
    lines = (EXPECTED / f"{table}.txt").read_text().splitlines()
    want = lines[1:]
    assert lines[0] == f"ROWS {len(want)}"
    if table in MICROS:
        got, want = [to_micros(x) for x in got], [to_micros(x) for x in want]
    assert got == want
