"""Bulk ingest through the ADBC Flight SQL driver, read back by pyiceberg."""

import datetime as dt
from decimal import Decimal

import adbc_driver_flightsql.dbapi as flight_sql
import adbc_driver_manager
import pyarrow as pa
import pytest
from pyiceberg.exceptions import NoSuchTableError

UTC = dt.timezone.utc


def sample(n: int = 5, offset: int = 0) -> pa.Table:
    """Every type the issue lists, with nulls in each nullable column."""
    ids = list(range(offset, offset + n))

    def nullable(values):
        return [None if i % 4 == 3 else v for i, v in zip(ids, values)]

    schema = pa.schema(
        [
            pa.field("id", pa.int64(), nullable=False),
            pa.field("i32", pa.int32()),
            pa.field("f32", pa.float32()),
            pa.field("f64", pa.float64()),
            pa.field("s", pa.string()),
            pa.field("b", pa.bool_()),
            pa.field("dec", pa.decimal128(10, 2)),
            pa.field("bigdec", pa.decimal128(38, 10)),
            pa.field("d", pa.date32()),
            pa.field("ts", pa.timestamp("us")),
            pa.field("tstz", pa.timestamp("us", tz="UTC")),
            pa.field("tags", pa.list_(pa.field("element", pa.int64()))),
            pa.field("point", pa.struct([pa.field("x", pa.int32()), pa.field("label", pa.string())])),
        ]
    )
    base = dt.datetime(2024, 2, 29, 12, 34, 56, 789012)
    return pa.table(
        [
            pa.array(ids, pa.int64()),
            pa.array(nullable([i * 3 - 7 for i in ids]), pa.int32()),
            pa.array(nullable([i / 4 for i in ids]), pa.float32()),
            pa.array(nullable([i * 1.5e10 for i in ids]), pa.float64()),
            pa.array(nullable([f"row-{i}-ünïcode" for i in ids]), pa.string()),
            pa.array(nullable([i % 2 == 0 for i in ids]), pa.bool_()),
            pa.array(nullable([Decimal(f"{i}.{i % 100:02d}") for i in ids]), pa.decimal128(10, 2)),
            pa.array(nullable([Decimal(f"1234567890123456.{i:010d}") for i in ids]), pa.decimal128(38, 10)),
            pa.array(nullable([dt.date(2000, 1, 1) + dt.timedelta(days=i) for i in ids]), pa.date32()),
            pa.array(nullable([base + dt.timedelta(seconds=i) for i in ids]), pa.timestamp("us")),
            pa.array(
                nullable([(base + dt.timedelta(hours=i)).replace(tzinfo=UTC) for i in ids]),
                pa.timestamp("us", tz="UTC"),
            ),
            pa.array(nullable([[i, i + 1, None] if i % 3 else [] for i in ids]), schema.field("tags").type),
            pa.array(nullable([{"x": i, "label": None if i % 2 else f"p{i}"} for i in ids]), schema.field("point").type),
        ],
        schema=schema,
    )


def read_back(gateway, table: str) -> pa.Table:
    t = gateway.catalog().load_table(f"default.{table}")
    return t.scan().to_arrow().sort_by("id")


def assert_same(got: pa.Table, sent: pa.Table) -> None:
    assert got.column_names == sent.column_names
    got = got.cast(sent.schema)  # pyiceberg may widen (large_string); values must match exactly
    assert got.to_pylist() == sent.sort_by("id").to_pylist()


def test_ingest_modes_autocommit(gateway):
    with flight_sql.connect(gateway.uri, autocommit=True) as conn, conn.cursor() as cur:
        first, second, third = sample(5), sample(4, offset=100), sample(3, offset=1000)

        assert cur.adbc_ingest("modes", first, mode="create") == 5
        assert_same(read_back(gateway, "modes"), first)

        with pytest.raises(adbc_driver_manager.Error, match="already exists"):
            cur.adbc_ingest("modes", first, mode="create")

        assert cur.adbc_ingest("modes", second, mode="append") == 4
        assert_same(read_back(gateway, "modes"), pa.concat_tables([first, second]))

        assert cur.adbc_ingest("modes", third, mode="replace") == 3
        assert_same(read_back(gateway, "modes"), third)

        assert cur.adbc_ingest("modes", first, mode="create_append") == 5
        assert_same(read_back(gateway, "modes"), pa.concat_tables([third, first]))

        assert cur.adbc_ingest("fresh", second, mode="create_append") == 4
        assert_same(read_back(gateway, "fresh"), second)

        with pytest.raises(adbc_driver_manager.Error, match="does not exist"):
            cur.adbc_ingest("missing", first, mode="append")


def test_many_batches_stream(gateway):
    batches = [sample(1000, offset=i * 1000).to_batches()[0] for i in range(20)]
    reader = pa.RecordBatchReader.from_batches(batches[0].schema, batches)
    with flight_sql.connect(gateway.uri, autocommit=True) as conn, conn.cursor() as cur:
        assert cur.adbc_ingest("many", reader, mode="create") == 20000
    got = read_back(gateway, "many")
    assert got.num_rows == 20000
    assert got.column("id").to_pylist() == list(range(20000))


def test_transaction_commit_and_rollback(gateway):
    with flight_sql.connect(gateway.uri, autocommit=True) as conn, conn.cursor() as cur:
        cur.adbc_ingest("txn", sample(2), mode="create")

    before = gateway.data_files()
    # The DB-API default is autocommit off: the driver begins a transaction,
    # and bulk ingest (which carries no transaction id) joins it through
    # the connection.
    with flight_sql.connect(gateway.uri) as conn, conn.cursor() as cur:
        cur.adbc_ingest("txn", sample(3, offset=10), mode="append")
        assert read_back(gateway, "txn").num_rows == 2, "data visible before commit"
        conn.rollback()
        assert read_back(gateway, "txn").num_rows == 2, "rolled back data visible"
        assert gateway.data_files() == before, "rollback left staged files behind"

        cur.adbc_ingest("txn", sample(3, offset=20), mode="append")
        cur.adbc_ingest("txn", sample(1, offset=30), mode="append")
        assert read_back(gateway, "txn").num_rows == 2
        conn.commit()
    got = read_back(gateway, "txn")
    assert got.column("id").to_pylist() == [0, 1, 20, 21, 22, 30]


def test_transaction_over_two_tables(gateway):
    with flight_sql.connect(gateway.uri) as conn, conn.cursor() as cur:
        cur.adbc_ingest("ta", sample(2), mode="create")
        cur.adbc_ingest("tb", sample(3), mode="create")
        # The creates are staged: neither table exists until COMMIT.
        with pytest.raises(NoSuchTableError):
            read_back(gateway, "ta")
        conn.commit()
    assert read_back(gateway, "ta").num_rows == 2
    assert read_back(gateway, "tb").num_rows == 3


def test_bad_input_names_the_column(gateway):
    with flight_sql.connect(gateway.uri, autocommit=True) as conn, conn.cursor() as cur:
        cur.adbc_ingest("strict", sample(2), mode="create")
        before = gateway.data_files()
        wrong = sample(2).drop_columns(["s"])
        with pytest.raises(adbc_driver_manager.Error, match='"s"|s\\b'):
            cur.adbc_ingest("strict", wrong, mode="append")
        typed = sample(2).set_column(4, "s", pa.array([1, 2], pa.int64()))
        with pytest.raises(adbc_driver_manager.Error, match="s"):
            cur.adbc_ingest("strict", typed, mode="append")
        assert gateway.data_files() == before
        assert read_back(gateway, "strict").num_rows == 2


def test_empty_table_create(gateway):
    """An empty table is created from a reader holding one empty batch.

    A pyarrow table with no rows has no batches, and arrow-go's Flight SQL
    client (under the ADBC driver) sends the schema only with the first
    batch: with none, the gateway receives an empty DoPut it cannot name a
    table for. One empty batch carries the schema (docs/sql.md).
    """
    schema = pa.schema([pa.field("k", pa.int64()), pa.field("s", pa.string())])
    with flight_sql.connect(gateway.uri, autocommit=True) as conn, conn.cursor() as cur:
        reader = pa.RecordBatchReader.from_batches(schema, [pa.record_batch([[], []], schema=schema)])
        assert cur.adbc_ingest("empty", reader, mode="create") == 0
    t = gateway.catalog().load_table("default.empty")
    got = t.scan().to_arrow()
    assert got.num_rows == 0
    assert got.column_names == ["k", "s"]


def test_empty_table_without_batches_says_what_to_do(gateway):
    """A pyarrow table with no rows, as the issue sent it, reaches the
    gateway as a DoPut with no message at all: the refusal says why and
    what to send instead, and creates nothing."""
    with flight_sql.connect(gateway.uri, autocommit=True) as conn, conn.cursor() as cur:
        with pytest.raises(adbc_driver_manager.Error, match="one batch of zero rows"):
            cur.adbc_ingest("none", pa.table({"k": pa.array([], pa.int64())}), mode="create")
    with pytest.raises(Exception):
        gateway.catalog().load_table("default.none")


def test_partitioned_append_of_long_strings(gateway):
    """Issue 19's repro: a table pyiceberg creates with a bucket(16, id) spec, as Spark and
    pyiceberg users create them; 200,000 rows (an int64 key, a short string, a string of
    1-200 bytes) appended by Python ADBC in batches of 20,000. iceberg-go's partitioned
    writer splits each batch with arrow-go's Take, which cut strings or killed the gateway
    when the process allocator handed out buffers with spare capacity. pyiceberg reads
    back exactly what was sent."""
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.schema import Schema
    from pyiceberg.transforms import BucketTransform
    from pyiceberg.types import LongType, NestedField, StringType

    schema = Schema(
        NestedField(1, "id", LongType(), required=True),
        NestedField(2, "tag", StringType(), required=False),
        NestedField(3, "body", StringType(), required=False),
    )
    spec = PartitionSpec(PartitionField(source_id=1, field_id=1000, transform=BucketTransform(16), name="id_bucket"))
    gateway.catalog().create_table("default.bucketed_long", schema=schema, partition_spec=spec)

    n, batch = 200_000, 20_000
    ids = list(range(n))
    sent = pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "tag": pa.array([f"t{i % 97}" for i in ids], pa.string()),
            "body": pa.array([chr(97 + i % 26) * (1 + (i * 7919) % 200) for i in ids], pa.string()),
        },
        schema=pa.schema([pa.field("id", pa.int64(), nullable=False), ("tag", pa.string()), ("body", pa.string())]),
    )
    with flight_sql.connect(gateway.uri, autocommit=True) as c, c.cursor() as cur:
        reader = pa.RecordBatchReader.from_batches(sent.schema, sent.to_batches(max_chunksize=batch))
        assert cur.adbc_ingest("bucketed_long", reader, mode="append") == n

    t = gateway.catalog().load_table("default.bucketed_long")
    assert [f.transform for f in t.spec().fields] == [BucketTransform(16)]
    got = t.scan().to_arrow().sort_by("id").cast(sent.schema)
    assert got.num_rows == n
    assert got.column("body").equals(sent.column("body"))
    assert got.equals(sent)
