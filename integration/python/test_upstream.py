"""A gateway federating a second gateway (a catalog "up" of type flightsql,
docs/upstream.md) seen through the ADBC Python driver: the upstream's
tables in GetObjects and information_schema, and queried through it."""

import adbc_driver_flightsql.dbapi as flight_sql
import pyarrow as pa
import pytest
from conftest import start_gateway, stop_gateway


@pytest.fixture(scope="module")
def federated(tmp_path_factory):
    up = start_gateway(tmp_path_factory.mktemp("up"))
    with flight_sql.connect(up.uri) as c, c.cursor() as cur:
        cur.adbc_ingest("animals", pa.table({"id": pa.array([1, 2, 3], pa.int64()), "name": ["ant", "bee", "cat"]}), mode="create")
        c.commit()
    tmp = tmp_path_factory.mktemp("fed")
    data = tmp / "data"
    cfg = tmp / "flightgw.yaml"
    cfg.write_text(
        "catalogs:\n"
        "  - name: lake\n    type: iceberg\n"
        f'    properties: {{catalog-type: sql, uri: "sqlite:///{data}/catalog.db", warehouse: "file://{data}/warehouse", create-namespaces: default}}\n'
        "  - name: up\n    type: flightsql\n    properties:\n"
        f"      uri: grpc://127.0.0.1:{up.port}\n      upstream_catalog: lake\n"
    )
    gw = start_gateway(tmp, "--config", str(cfg))
    yield gw
    stop_gateway(gw)
    stop_gateway(up)
    for g in (gw, up):
        assert "panic" not in g.logs(), g.logs()


def test_get_objects(federated):
    with flight_sql.connect(federated.uri) as c:
        objs = c.adbc_get_objects(depth="columns", catalog_filter="up").read_all().to_pylist()
    tables = {
        (cat["catalog_name"], sch["db_schema_name"], t["table_name"]): [col["column_name"] for col in t["table_columns"]]
        for cat in objs
        for sch in cat["catalog_db_schemas"] or []
        for t in sch["db_schema_tables"] or []
    }
    assert tables.get(("up", "default", "animals")) == ["id", "name"], tables


def test_information_schema(federated):
    with flight_sql.connect(federated.uri) as c, c.cursor() as cur:
        cur.execute(
            "SELECT column_name, data_type FROM information_schema.columns "
            "WHERE table_catalog = 'up' AND table_name = 'animals' ORDER BY ordinal_position"
        )
        got = cur.fetchall()
    assert [r[0] for r in got] == ["id", "name"], got


def test_query(federated):
    with flight_sql.connect(federated.uri) as c, c.cursor() as cur:
        cur.execute('SELECT name FROM up."default".animals WHERE id >= 2 ORDER BY id')
        assert cur.fetch_arrow_table().column("name").to_pylist() == ["bee", "cat"]
        cur.execute('SELECT count(*) FROM up."default".animals')
        assert cur.fetchone()[0] == 3
