"""pypaimon reads every sample table catalogs/paimon wrote (TestWriteSamples) and finds
exactly the rows the Go side expected (expected/<table>.txt, rendered as Paimon Java's
Tables.render spells them). PAIMON_SAMPLES names the warehouse: a local directory, or an
s3:// warehouse on integration/s3server (make paimon-s3-check), which hands its endpoint and
test credentials to its command in S3_ENDPOINT, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and
AWS_REGION; the expected rows of an s3:// warehouse are in the local directory
PAIMON_EXPECTED. PAIMON_DB names the database (default: default)."""

import os
from pathlib import Path

import pytest
from pypaimon import CatalogFactory

WAREHOUSE = os.environ.get("PAIMON_SAMPLES", "")
IS_S3 = WAREHOUSE.startswith("s3://")
EXPECTED = Path(os.environ.get("PAIMON_EXPECTED", "") if IS_S3 else os.path.join(WAREHOUSE, "expected"))
DB = os.environ.get("PAIMON_DB", "default")
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


def render(row):
    # Every column in table order, as Paimon Java's Tables.render prints it
    # (the samples' id, name, p; the people rows of integration's tests).
    return ",".join(f"{k}={'null' if v is None else v}" for k, v in row.items())


@pytest.mark.skipif(not TABLES, reason="PAIMON_SAMPLES names no warehouse with samples")
@pytest.mark.parametrize("table", TABLES)
def test_pypaimon_reads_gateway_table(table):
    catalog = CatalogFactory.create(catalog_options())
    t = catalog.get_table(f"{DB}.{table}")
    rb = t.new_read_builder()
    got = sorted(render(r) for r in rb.new_read().to_arrow(rb.new_scan().plan().splits()).to_pylist())
    lines = (EXPECTED / f"{table}.txt").read_text().splitlines()
    want = lines[1:]
    assert lines[0] == f"ROWS {len(want)}"
    assert got == want
