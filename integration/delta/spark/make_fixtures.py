#!/usr/bin/env python3
"""Writes the Spark-made Delta tables under catalogs/delta/testdata/spark with real Delta Spark.

A one-off generator, not part of make test (a JVM, Spark and 20 MB of Delta jars). Re-run it
from the repository root (integration/delta/spark/README.md):

    python3 -m venv .venv-spark && .venv-spark/bin/pip install pyspark==4.0.1
    mvn -q dependency:get -Dartifact=io.delta:delta-spark_2.13:4.0.0 -Dtransitive=false
    mvn -q dependency:get -Dartifact=io.delta:delta-storage:4.0.0 -Dtransitive=false
    rm -rf catalogs/delta/testdata/spark
    TZ=UTC .venv-spark/bin/python integration/delta/spark/make_fixtures.py catalogs/delta/testdata/spark

Each table directory gets expected.json: {"spark", "delta", "version", "columns", "rows"}, the
rows as Spark itself reads the latest version (sorted by the first column, values rendered by
integration/delta/render.py, the rendering every reader check of the repository uses).
"""
import glob
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from render import render  # noqa: E402

DELTA_VERSION = "4.0.0"
M2 = os.path.expanduser("~/.m2/repository/io/delta")
JARS = [f"{M2}/delta-spark_2.13/{DELTA_VERSION}/delta-spark_2.13-{DELTA_VERSION}.jar",
        f"{M2}/delta-storage/{DELTA_VERSION}/delta-storage-{DELTA_VERSION}.jar"]

from pyspark.sql import SparkSession  # noqa: E402


def session():
    return (SparkSession.builder.master("local[1]").appName("flightgw-delta-fixtures")
            .config("spark.jars", ",".join(JARS))
            .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
            .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
            .config("spark.sql.session.timeZone", "UTC")
            .config("spark.sql.shuffle.partitions", "2")
            .config("spark.ui.enabled", "false")
            # One partition for Delta's own state reconstruction (50 by default): the tables
            # are tiny and a local run takes minutes otherwise.
            .config("spark.databricks.delta.snapshotPartitions", "1")
            # Tiny files and no compression of our choosing: the fixtures stay small and the
            # codec is Spark's default (snappy).
            .config("spark.databricks.delta.properties.defaults.checkpointInterval", "100")
            .getOrCreate())


def write_expected(spark, path, notes):
    df = spark.read.format("delta").load(path)
    cols = df.columns
    # A struct comes back as a Row, a tuple: as a dict it renders as its fields.
    rows = [[render(d[c]) for c in cols] for d in (r.asDict(recursive=True) for r in df.collect())]
    rows.sort(key=lambda r: int(r[0]))
    version = spark.sql(f"DESCRIBE HISTORY delta.`{path}` LIMIT 1").collect()[0]["version"]
    with open(os.path.join(path, "expected.json"), "w") as f:
        json.dump({"spark": spark.version, "delta": DELTA_VERSION, "version": version,
                   "notes": notes, "columns": cols, "rows": rows}, f, indent=1, ensure_ascii=False)
        f.write("\n")


def sql(spark, q):
    spark.sql(q).collect()


def dv(spark, out):
    """Deletion vectors: three data files, a DELETE touching two of them (one DV file holding
    both bitmaps at different offsets), a second DELETE on a file that already has a DV (the
    DV rewritten), then an append."""
    p = os.path.join(out, "dv")
    spark.range(0, 30, 1, 3).selectExpr("id", "cast(id * 10 as int) as v", "concat('row ', id) as s") \
        .write.format("delta").option("delta.enableDeletionVectors", "true").save(p)
    sql(spark, f"DELETE FROM delta.`{p}` WHERE id IN (1, 2, 3, 12, 13)")
    sql(spark, f"DELETE FROM delta.`{p}` WHERE id IN (5, 14)")
    sql(spark, f"INSERT INTO delta.`{p}` VALUES (30, 300, 'row 30'), (31, 310, 'row 31')")
    write_expected(spark, p, "DELETEs with deletion vectors on disk (Spark writes them as files)")


def v2checkpoint(spark, out, name, top):
    """A V2 checkpoint with sidecars: delta.checkpointPolicy v2, the top-level file in `top`
    (json or parquet), delta.checkpointInterval 4 so that Spark checkpoints version 4, a
    DELETE (a DV in the sidecar), and two commits after it (a gateway append then lands at 7
    and the next at 8, a checkpoint of its own)."""
    p = os.path.join(out, name)
    spark.conf.set("spark.databricks.delta.checkpointV2.topLevelFileFormat", top)
    spark.range(0, 10, 1, 2).selectExpr("id", "concat('a', id) as s", "cast(id % 3 as string) as part") \
        .write.format("delta").partitionBy("part") \
        .option("delta.checkpointPolicy", "v2").option("delta.enableDeletionVectors", "true") \
        .option("delta.checkpointInterval", "4").save(p)
    for k in range(1, 4):
        sql(spark, f"INSERT INTO delta.`{p}` VALUES ({10 * k}, 'b{k}', '{k % 3}'), ({10 * k + 1}, 'c{k}', NULL)")
    sql(spark, f"DELETE FROM delta.`{p}` WHERE id IN (4, 5)")
    sql(spark, f"INSERT INTO delta.`{p}` VALUES (100, 'after', '1')")
    sql(spark, f"DELETE FROM delta.`{p}` WHERE id = 20")
    write_expected(spark, p, f"V2 checkpoint ({top} top-level file with sidecars) then two commits")


def colmap(spark, out, mode):
    """Column mapping: a renamed column, a dropped one, a renamed struct field, a partition
    column; rows before and after."""
    p = os.path.join(out, f"colmap_{mode}")
    sql(spark, f"""CREATE TABLE delta.`{p}` (id BIGINT, old_name STRING, gone INT,
        st STRUCT<a: INT, b: STRING>, part STRING) USING delta PARTITIONED BY (part)
        TBLPROPERTIES ('delta.columnMapping.mode' = '{mode}')""")
    sql(spark, f"""INSERT INTO delta.`{p}` VALUES (1, 'x1', 10, named_struct('a', 1, 'b', 'b1'), 'p'),
        (2, 'x2', 20, named_struct('a', 2, 'b', NULL), 'q'), (3, NULL, 30, NULL, NULL)""")
    sql(spark, f"ALTER TABLE delta.`{p}` RENAME COLUMN old_name TO new_name")
    sql(spark, f"ALTER TABLE delta.`{p}` RENAME COLUMN st.b TO bee")
    sql(spark, f"ALTER TABLE delta.`{p}` DROP COLUMN gone")
    sql(spark, f"ALTER TABLE delta.`{p}` ADD COLUMNS (gone INT, st.c INT)")
    sql(spark, f"""INSERT INTO delta.`{p}` VALUES (4, 'y4', named_struct('a', 4, 'bee', 'b4', 'c', 40), 'p', 44),
        (5, 'y5', NULL, 'r', NULL)""")
    write_expected(spark, p, f"column mapping {mode}: renamed column and struct field, a column dropped and one of its name added, a struct field added")


def rowtracking(spark, out):
    """Row tracking: appends, then an UPDATE (Spark materializes row ids and commit versions
    into the rewritten file under the delta.rowTracking.materialized* column names)."""
    p = os.path.join(out, "rowtracking")
    spark.range(0, 8, 1, 2).selectExpr("id", "cast(id as string) as s") \
        .write.format("delta").option("delta.enableRowTracking", "true").save(p)
    sql(spark, f"INSERT INTO delta.`{p}` VALUES (8, '8'), (9, '9')")
    sql(spark, f"UPDATE delta.`{p}` SET s = concat(s, ' updated') WHERE id IN (2, 9)")
    write_expected(spark, p, "row tracking with an UPDATE (materialized row ids in the rewritten file)")


def ntz(spark, out):
    """Partitioned by a timestamp without zone (and a date): nulls, before 1970, microseconds."""
    p = os.path.join(out, "ntz_partitioned")
    sql(spark, f"""CREATE TABLE delta.`{p}` (id BIGINT, ts TIMESTAMP_NTZ, d DATE, tz TIMESTAMP, v DOUBLE)
        USING delta PARTITIONED BY (ts, d)""")
    sql(spark, f"""INSERT INTO delta.`{p}` VALUES
        (1, TIMESTAMP_NTZ'2024-02-29 12:34:56.123456', DATE'2024-02-29', TIMESTAMP'2024-02-29 12:34:56.5', 1.5),
        (2, TIMESTAMP_NTZ'1969-12-31 23:59:59.999999', DATE'1969-12-31', TIMESTAMP'1969-12-31 23:59:59', -2.25),
        (3, NULL, NULL, NULL, NULL),
        (4, TIMESTAMP_NTZ'2024-02-29 12:34:56.123456', DATE'2000-01-01', TIMESTAMP'2000-01-01 00:00:00', 4.0),
        (5, TIMESTAMP_NTZ'2000-01-01 00:00:00', NULL, TIMESTAMP'2000-01-01 00:00:00.000001', 5.0)""")
    write_expected(spark, p, "partitioned by timestamp_ntz and date")


def ict(spark, out):
    """In-commit timestamps turned on after two commits (so the table has the enablement
    version and timestamp properties) together with vacuumProtocolCheck, then a commit."""
    p = os.path.join(out, "ict")
    sql(spark, f"CREATE TABLE delta.`{p}` (id BIGINT, s STRING) USING delta")
    sql(spark, f"INSERT INTO delta.`{p}` VALUES (1, 'a'), (2, 'b')")
    sql(spark, f"""ALTER TABLE delta.`{p}` SET TBLPROPERTIES ('delta.enableInCommitTimestamps' = 'true',
        'delta.feature.vacuumProtocolCheck' = 'supported')""")
    sql(spark, f"INSERT INTO delta.`{p}` VALUES (3, 'c')")
    write_expected(spark, p, "in-commit timestamps enabled at version 2, vacuumProtocolCheck")


def evolved(spark, out):
    """Without column mapping: a column and a struct field added after the first commit,
    so the older file lacks both."""
    p = os.path.join(out, "evolved")
    sql(spark, f"CREATE TABLE delta.`{p}` (id BIGINT, st STRUCT<a: INT>) USING delta")
    sql(spark, f"INSERT INTO delta.`{p}` VALUES (1, named_struct('a', 1)), (2, NULL)")
    sql(spark, f"ALTER TABLE delta.`{p}` ADD COLUMNS (st.b STRING, top INT)")
    sql(spark, f"INSERT INTO delta.`{p}` VALUES (3, named_struct('a', 3, 'b', 'b3'), 30)")
    write_expected(spark, p, "a column and a struct field added after the first commit")


def tidy(out):
    # Spark's checksum side files and .crc files are not part of the protocol's tables.
    for f in glob.glob(os.path.join(out, "**", ".*.crc"), recursive=True):
        os.remove(f)


def main():
    out = os.path.abspath(sys.argv[1])
    if os.path.exists(out):
        sys.exit(f"{out} exists: remove it first")
    os.makedirs(out)
    spark = session()
    dv(spark, out)
    v2checkpoint(spark, out, "v2checkpoint_json", "json")
    v2checkpoint(spark, out, "v2checkpoint_parquet", "parquet")
    colmap(spark, out, "name")
    colmap(spark, out, "id")
    rowtracking(spark, out)
    ntz(spark, out)
    ict(spark, out)
    evolved(spark, out)
    version = spark.version
    spark.stop()
    tidy(out)
    with open(os.path.join(out, "README.md"), "w") as f:
        f.write(README.format(spark=version, delta=DELTA_VERSION))


README = """# Delta tables written by Spark

Written by PySpark {spark} with Delta Spark {delta} (Apache-2.0; the files are that tool's output
for our own rows) with integration/delta/spark/make_fixtures.py, which says what each table
holds; each has expected.json, the rows Spark reads back. Regenerate from the repository root
as integration/delta/spark/README.md says (not by hand: paths and ids are random).
"""


if __name__ == "__main__":
    main()
