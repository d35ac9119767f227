"""pypaimon reads every sample table catalogs/paimon wrote (TestWriteSamples) and finds
exactly the rows the Go side expected (expected/<table>.txt, rendered as Paimon Java's
Tables.render spells them). PAIMON_SAMPLES names the warehouse."""

import os
from pathlib import Path

import pytest
from pypaimon import CatalogFactory

WAREHOUSE = Path(os.environ.get("PAIMON_SAMPLES", ""))
TABLES = sorted(p.stem for p in (WAREHOUSE / "expected").glob("*.txt")) if WAREHOUSE.name else []


def render(row):
    name = "null" if row["name"] is None else row["name"]
    return f"id={row['id']},name={name},p={row['p']}"


@pytest.mark.skipif(not TABLES, reason="PAIMON_SAMPLES names no warehouse with samples")
@pytest.mark.parametrize("table", TABLES)
def test_pypaimon_reads_gateway_table(table):
    catalog = CatalogFactory.create({"warehouse": str(WAREHOUSE)})
    t = catalog.get_table(f"default.{table}")
    rb = t.new_read_builder()
    got = sorted(render(r) for r in rb.new_read().to_arrow(rb.new_scan().plan().splits()).to_pylist())
    lines = (WAREHOUSE / "expected" / f"{table}.txt").read_text().splitlines()
    want = lines[1:]
    assert lines[0] == f"ROWS {len(want)}"
    assert got == want
