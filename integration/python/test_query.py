"""SQL queries through the ADBC Flight SQL driver, each result compared with
DuckDB (Python) reading the same Iceberg table's Parquet files directly."""

import datetime as dt

import adbc_driver_flightsql.dbapi as flight_sql
import adbc_driver_manager
import duckdb
import pyarrow as pa
import pytest
from conftest import start_gateway, stop_gateway

N = 3000


def trips(offset: int, n: int) -> pa.Table:
    ids = list(range(offset, offset + n))
    cities = ["oslo", "lima", "kyiv", None]
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "city": pa.array([cities[i % 4] for i in ids], pa.string()),
            "fare": pa.array([None if i % 7 == 0 else i * 0.25 for i in ids], pa.float64()),
            "riders": pa.array([i % 5 for i in ids], pa.int32()),
            "day": pa.array([dt.date(2024, 1, 1) + dt.timedelta(days=i % 60) for i in ids], pa.date32()),
            "ts": pa.array([dt.datetime(2024, 1, 1) + dt.timedelta(minutes=i) for i in ids], pa.timestamp("us")),
        }
    )


def seed(gateway):
    """Three ingests (three data files) of the trips table."""
    with flight_sql.connect(gateway.uri) as c, c.cursor() as cur:
        for k in range(3):
            part = trips(k * N // 3, N // 3)
            cur.adbc_ingest("trips", part, mode="create" if k == 0 else "append")
        c.commit()
    return gateway


def direct_duckdb(gateway):
    """DuckDB over the Parquet files of the table's current snapshot, found
    by pyiceberg: the same data, without the gateway."""
    table = gateway.catalog().load_table(("default", "trips"))
    files = [t.file.file_path.removeprefix("file://") for t in table.scan().plan_files()]
    assert len(files) == 3
    con = duckdb.connect()
    con.execute(f"CREATE VIEW trips AS SELECT * FROM read_parquet({files!r})")
    return con


@pytest.fixture(scope="module")
def seeded(gateway):
    return seed(gateway)


@pytest.fixture(scope="module")
def direct(seeded):
    con = direct_duckdb(seeded)
    yield con
    con.close()


def gateway_rows(conn, sql, params=None):
    with conn.cursor() as cur:
        cur.execute(sql, parameters=params)
        return cur.fetch_arrow_table().to_pylist()


def direct_rows(con, sql, params=None):
    return con.sql(sql, params=params).to_arrow_table().to_pylist()


QUERIES = [
    "SELECT count(*) AS n, sum(fare) AS fares, avg(riders) AS r, min(ts) AS first, max(day) AS last FROM trips",
    "SELECT city, count(*) AS n, sum(fare) AS f FROM trips GROUP BY city ORDER BY city NULLS LAST",
    "SELECT id, city, fare FROM trips WHERE fare IS NULL ORDER BY id LIMIT 5",
    "SELECT id, ts FROM trips WHERE ts >= TIMESTAMP '2024-01-02 10:00:00' AND day < DATE '2024-02-15' ORDER BY id DESC LIMIT 3",
    "SELECT a.id, b.city FROM trips a JOIN trips b ON a.id = b.id + 1000 WHERE a.riders = 4 ORDER BY a.id LIMIT 4",
    "SELECT riders, count(DISTINCT city) AS c FROM trips WHERE city IN ('oslo', 'kyiv') GROUP BY ALL ORDER BY riders",
    "WITH big AS (SELECT * FROM trips WHERE fare > 600) SELECT count(*) AS n, (SELECT max(id) FROM big) AS m FROM big",
]


@pytest.mark.parametrize("sql", QUERIES)
def test_query_matches_duckdb(seeded, direct, conn, sql):
    assert gateway_rows(conn, sql) == direct_rows(direct, sql)


def test_parameterized_query(seeded, direct, conn):
    sql = "SELECT count(*) AS n, sum(fare) AS f FROM trips WHERE city = ? AND riders >= ?"
    for params in [("oslo", 2), ("lima", 0), ("nowhere", 1)]:
        assert gateway_rows(conn, sql, params) == direct_rows(direct, sql, list(params))


def test_default_schema_unquoted(seeded, conn):
    # default is a reserved word in DuckDB; Spark and pyiceberg users write
    # default.t unquoted.
    want = gateway_rows(conn, "SELECT count(*) AS n, max(id) AS m FROM trips")
    for sql in [
        "SELECT count(*) AS n, max(id) AS m FROM default.trips",
        "SELECT count(*) AS n, max(id) AS m FROM lake.default.trips",
        "SELECT count(*) AS n, max(id) AS m FROM DEFAULT.TRIPS",
        "SELECT count(*) AS n, max(t.id) AS m FROM default.trips t JOIN default.trips u USING (id)",
    ]:
        assert gateway_rows(conn, sql) == want, sql
    assert gateway_rows(conn, "SELECT count(*) AS n FROM default.trips WHERE city = ?", ("oslo",)) == gateway_rows(
        conn, "SELECT count(*) AS n FROM trips WHERE city = ?", ("oslo",)
    )


def test_get_objects_and_table_schema(seeded, conn):
    objects = conn.adbc_get_objects(depth="all").read_all().to_pylist()
    lake = next(o for o in objects if o["catalog_name"] == "lake")
    schema = next(s for s in lake["catalog_db_schemas"] if s["db_schema_name"] == "default")
    table = next(t for t in schema["db_schema_tables"] if t["table_name"] == "trips")
    assert [c["column_name"] for c in table["table_columns"]] == ["id", "city", "fare", "riders", "day", "ts"]
    got = conn.adbc_get_table_schema("trips", db_schema_filter="default")
    assert got.names == trips(0, 1).schema.names
    assert [f.type for f in got] == [f.type for f in trips(0, 1).schema]


def test_insert_then_query(seeded, conn):
    with conn.cursor() as cur:
        cur.execute("INSERT INTO trips (id, city, riders) VALUES (100000, 'rome', 9)")
        assert cur.rowcount == 1
    conn.commit()
    assert gateway_rows(conn, "SELECT city, riders FROM trips WHERE id = 100000") == [{"city": "rome", "riders": 9}]
    table = seeded.catalog().load_table(("default", "trips"))
    assert table.scan(row_filter="id == 100000").to_arrow().num_rows == 1


@pytest.mark.parametrize(
    "sql, fragment",
    [
        ("SELEC 1", "syntax"),
        ("SELECT * FROM no_such_table", "no_such_table"),
        ("SELECT * FROM read_parquet('/etc/passwd')", "disabled"),
        ("COPY (SELECT 1) TO '/tmp/flightgw-py-copy.csv'", "COPY"),
        ("ATTACH '/tmp/flightgw-py.db' AS x", "ATTACH"),
    ],
)
def test_bad_queries_are_refused(seeded, conn, sql, fragment):
    with pytest.raises(adbc_driver_manager.Error) as err:
        gateway_rows(conn, sql)
    assert fragment.lower() in str(err.value).lower()


@pytest.fixture(scope="module")
def split_gateway(tmp_path_factory):
    """A gateway that splits any row-local query over two or more files."""
    tmp = tmp_path_factory.mktemp("split")
    cfg = tmp / "flightgw.yaml"
    cfg.write_text("engine:\n  max_endpoints: 8\n  split_min_bytes: 1\n")
    gw = start_gateway(tmp, "--config", str(cfg))
    seed(gw)
    yield gw
    stop_gateway(gw)
    assert "panic" not in gw.logs(), gw.logs()


def test_split_query_reads_in_partitions(split_gateway):
    """A query that filters and projects the three-file table comes back as
    three partitions (FlightInfo endpoints); read one by one, or whole by
    the driver, they hold exactly DuckDB's rows over the same files."""
    sql = "SELECT id, city, fare * 2 AS twice FROM trips WHERE riders <> 2"
    con = direct_duckdb(split_gateway)
    want = sorted(con.sql(sql).to_arrow_table().to_pylist(), key=lambda r: r["id"])
    con.close()
    with flight_sql.connect(split_gateway.uri) as c, c.cursor() as cur:
        partitions, schema = cur.adbc_execute_partitions(sql)
        assert len(partitions) == 3
        parts = []
        for p in partitions:
            cur.adbc_read_partition(p)
            parts.append(cur.fetch_arrow_table())
        assert all(p.num_rows > 0 for p in parts)
        assert all(p.schema.equals(parts[0].schema) for p in parts)
        got = sorted(pa.concat_tables(parts).to_pylist(), key=lambda r: r["id"])
        assert got == want
        cur.execute(sql)
        whole = sorted(cur.fetch_arrow_table().to_pylist(), key=lambda r: r["id"])
        assert whole == want
        # An aggregate stays one partition.
        partitions, _ = cur.adbc_execute_partitions("SELECT count(*) FROM trips")
        assert len(partitions) == 1


def test_query_reads_own_transaction(gateway):
    """ADBC's DB-API starts with autocommit off: rows ingested in the open
    transaction are read by its own queries; another connection does not
    see the table at all until commit (the create is staged)."""
    with flight_sql.connect(gateway.uri) as c, flight_sql.connect(gateway.uri) as other:
        with c.cursor() as cur:
            cur.adbc_ingest("ryw", trips(0, 10), mode="create")
            cur.adbc_ingest("ryw", trips(10, 5), mode="append")
            cur.execute("SELECT count(*) AS n, max(id) AS m FROM ryw")
            assert cur.fetch_arrow_table().to_pylist() == [{"n": 15, "m": 14}]
        with other.cursor() as ocur:
            with pytest.raises(adbc_driver_manager.ProgrammingError, match="table ryw not found"):
                ocur.execute("SELECT count(*) AS n FROM ryw")
        c.commit()
        other.commit()
        with other.cursor() as ocur:
            ocur.execute("SELECT count(*) AS n FROM ryw")
            assert ocur.fetch_arrow_table().to_pylist() == [{"n": 15}]


@pytest.mark.parametrize(
    "sql, fragment",
    [
        ("INSERT INTO trips (id) VALUES ('notanint')", "INSERT into lake.default.trips: column id (BIGINT): could not convert 'notanint'"),
        ("INSERT INTO default.trips (id, city) VALUES (1)", "INSERT has 1 value for 2 columns of lake.default.trips"),
        ("INSERT INTO trips (riders) VALUES (99999999999)", "column riders (INTEGER): value 99999999999 is out of range"),
    ],
)
def test_insert_errors_name_table_and_column(seeded, conn, sql, fragment):
    # In the user's terms: never the gateway's cast of the source (__src, c0).
    with pytest.raises(adbc_driver_manager.Error) as err:
        with conn.cursor() as cur:
            cur.execute(sql)
    assert fragment in str(err.value)
    assert "__" not in str(err.value)
