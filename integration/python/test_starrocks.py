"""The StarRocks backend through the ADBC Python driver: ingest with
autocommit on and off, and a query pushed down to StarRocks. Needs a
cluster or the stand-in (make test-starrocks sets FLIGHTGW_STARROCKS_*)."""

import json
import os
import secrets
import urllib.request

import pyarrow as pa
import pytest

from conftest import start_gateway, stop_gateway

FE = os.environ.get("FLIGHTGW_STARROCKS_FE", "")
MYSQL = os.environ.get("FLIGHTGW_STARROCKS_MYSQL", "")
USER = os.environ.get("FLIGHTGW_STARROCKS_USER", "root")
PASSWORD = os.environ.get("FLIGHTGW_STARROCKS_PASSWORD", "")
ADMIN = os.environ.get("FLIGHTGW_STARROCKS_ADMIN", "")

pytestmark = pytest.mark.skipif(
    not (FE and MYSQL),
    reason="FLIGHTGW_STARROCKS_FE and FLIGHTGW_STARROCKS_MYSQL are not set: run make test-starrocks "
    "(MariaDB and the StarRocks stand-in), or point them at a cluster",
)


def mysql():
    import pymysql

    host, port = MYSQL.rsplit(":", 1)
    return pymysql.connect(host=host, port=int(port), user=USER, password=PASSWORD, autocommit=True)


@pytest.fixture(scope="module")
def sr(tmp_path_factory):
    """A gateway with one starrocks catalog "sr", and a fresh database."""
    db = "fgw_py_" + secrets.token_hex(5)
    with mysql() as m, m.cursor() as c:
        c.execute(f"CREATE DATABASE `{db}`")
    tmp = tmp_path_factory.mktemp("sr")
    cfg = tmp / "flightgw.yaml"
    cfg.write_text(
        "catalogs:\n  - name: sr\n    type: starrocks\n    properties:\n"
        f"      fe_http: {FE}\n      mysql: {MYSQL}\n      user: {USER}\n"
        f"      password: {json.dumps(PASSWORD)}\n      spool_dir: {tmp}\n      timeout: 10s\n"
    )
    gw = start_gateway(tmp, "--config", str(cfg))
    yield gw, db
    stop_gateway(gw)
    with mysql() as m, m.cursor() as c:
        c.execute(f"DROP DATABASE IF EXISTS `{db}`")
    assert "panic" not in gw.logs(), gw.logs()


def count(db, table):
    with mysql() as m, m.cursor() as c:
        c.execute(f"SELECT COUNT(*) FROM `{db}`.`{table}`")
        return c.fetchone()[0]


def people(start, n):
    return pa.table(
        {
            "id": pa.array(range(start, start + n), pa.int64()),
            "name": pa.array([f"p{i}" for i in range(start, start + n)], pa.string()),
        }
    )


def test_ingest_autocommit_on_and_off(sr):
    import adbc_driver_flightsql.dbapi as flight_sql

    gw, db = sr
    with flight_sql.connect(gw.uri) as conn, conn.cursor() as cur:
        assert cur.adbc_ingest("people", people(0, 3), mode="create", catalog_name="sr", db_schema_name=db) == 3
        conn.commit()
        assert count(db, "people") == 3
    with flight_sql.connect(gw.uri, autocommit=False) as conn, conn.cursor() as cur:
        cur.adbc_ingest("people", people(10, 4), mode="append", catalog_name="sr", db_schema_name=db)
        assert count(db, "people") == 3, "uncommitted rows are visible"
        conn.rollback()
        assert count(db, "people") == 3, "rolled back rows are visible"
        cur.adbc_ingest("people", people(20, 2), mode="append", catalog_name="sr", db_schema_name=db)
        cur.adbc_ingest("people", people(30, 2), mode="append", catalog_name="sr", db_schema_name=db)
        assert count(db, "people") == 3
        conn.commit()
        assert count(db, "people") == 7


def test_query_pushed_down(sr):
    import adbc_driver_flightsql.dbapi as flight_sql

    gw, db = sr
    orders = pa.table(
        {
            "oid": pa.array(range(6), pa.int64()),
            "pid": pa.array([0, 1, 2, 0, 1, 0], pa.int64()),
            "qty": pa.array([1, 2, 3, 4, 5, 6], pa.int32()),
        }
    )
    with flight_sql.connect(gw.uri) as conn, conn.cursor() as cur:
        cur.adbc_ingest("buyers", people(0, 3), mode="create", catalog_name="sr", db_schema_name=db)
        cur.adbc_ingest("orders", orders, mode="create", catalog_name="sr", db_schema_name=db)
        conn.commit()
        if ADMIN:
            urllib.request.urlopen(urllib.request.Request(ADMIN + "/admin/reset", method="POST")).close()
        cur.execute(
            f"SELECT b.name, count(*) AS n, sum(o.qty) AS total FROM sr.{db}.buyers b "
            f"JOIN sr.{db}.orders o ON o.pid = b.id WHERE o.qty > 1 GROUP BY b.name"
        )
        got = sorted(cur.fetch_arrow_table().to_pylist(), key=lambda r: r["name"])
    assert [(r["name"], r["n"], int(r["total"])) for r in got] == [("p0", 2, 10), ("p1", 2, 7), ("p2", 1, 3)]
    if ADMIN:
        with urllib.request.urlopen(ADMIN + "/admin/counts") as r:
            queries = json.load(r)["queries"] or []
        pushed = [q for q in queries if "JOIN" in q and "GROUP BY" in q]
        assert len(pushed) == 1, queries
