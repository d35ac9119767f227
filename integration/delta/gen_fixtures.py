#!/usr/bin/env python3
"""Writes the golden Delta tables under codec/delta/testdata/tables with delta-rs.

Regenerate (from the repository root):

    python3 -m venv .venv-delta && .venv-delta/bin/pip install deltalake==1.6.6 pyarrow
    rm -rf codec/delta/testdata/tables
    .venv-delta/bin/python integration/delta/gen_fixtures.py codec/delta/testdata/tables

Each table directory gets an expected.json: for every version, what deltalake itself reports
(version, protocol, metadata configuration and partition columns, the live files from
get_add_actions with their partition values and record counts, app transaction versions).
codec/delta's golden test replays the log with our Go code and must report exactly that.
Tables deltalake cannot write (column mapping, deletion vectors) are recorded in
unsupported.json with the error deltalake gave.
"""
import datetime
import decimal
import json
import os
import sys

import deltalake
import pyarrow as pa
from deltalake import CommitProperties, DeltaTable, Transaction, write_deltalake


def types_batch(start, n):
    rows = range(start, start + n)
    return pa.table({
        "id": pa.array(list(rows), pa.int64()),
        "i8": pa.array([i % 100 for i in rows], pa.int8()),
        "i16": pa.array([i * 3 for i in rows], pa.int16()),
        "i32": pa.array([None if i % 4 == 0 else i * 7 for i in rows], pa.int32()),
        "f32": pa.array([i / 2 for i in rows], pa.float32()),
        "f64": pa.array([float("nan") if i == 1 else i / 3 for i in rows], pa.float64()),
        "b": pa.array([i % 2 == 0 for i in rows], pa.bool_()),
        "s": pa.array([f"row {i} ü" for i in rows], pa.string()),
        "bin": pa.array([bytes([i % 256, 0, 255]) for i in rows], pa.binary()),
        "d": pa.array([datetime.date(2024, 1, 1) + datetime.timedelta(days=i) for i in rows], pa.date32()),
        "ts": pa.array([datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc)
                        + datetime.timedelta(microseconds=i * 1001) for i in rows], pa.timestamp("us", "UTC")),
        "ntz": pa.array([datetime.datetime(2024, 1, 1) + datetime.timedelta(seconds=i) for i in rows],
                        pa.timestamp("us")),
        "dec": pa.array([decimal.Decimal(i) / 100 for i in rows], pa.decimal128(10, 2)),
        "st": pa.array([{"x": i, "y": f"y{i}"} for i in rows],
                       pa.struct([("x", pa.int32()), ("y", pa.string())])),
        "arr": pa.array([[i, None, i + 1] for i in rows], pa.list_(pa.int64())),
        "m": pa.array([[("k", i)] for i in rows], pa.map_(pa.string(), pa.int64())),
    })


HOSTILE = [None, "", "plain", "ünïcödé ✓", "a=b", "a/b", "100%", "with space", "x%2Fy", "quote'\"", "colon:#?"]


def partition_batch(n_offset):
    k = len(HOSTILE)
    return pa.table({
        "id": pa.array(range(n_offset, n_offset + k), pa.int64()),
        "p": pa.array(HOSTILE, pa.string()),
        "q": pa.array([None if i % 3 == 0 else i for i in range(k)], pa.int32()),
        "d": pa.array([None if i % 5 == 0 else datetime.date(2020, 2, 29) for i in range(k)], pa.date32()),
    })


def expected(path):
    dt = DeltaTable(path)
    out = []
    for v in range(dt.version() + 1):
        t = DeltaTable(path, version=v)
        p = t.protocol()
        md = t.metadata()
        adds = pa.table(t.get_add_actions(flatten=False))
        files = []
        for row in adds.to_pylist():
            part = row.get("partition") or {}
            files.append({
                "path": row["path"],
                "size": row["size_bytes"],
                "numRecords": row.get("num_records"),
                # typed as deltalake parsed them; dates and timestamps in ISO form
                "partition": {k: (val.isoformat() if hasattr(val, "isoformat") else val)
                              for k, val in part.items()},
            })
        files.sort(key=lambda f: f["path"])
        out.append({
            "version": t.version(),
            "protocol": {
                "minReaderVersion": p.min_reader_version,
                "minWriterVersion": p.min_writer_version,
                "readerFeatures": p.reader_features,
                "writerFeatures": p.writer_features,
            },
            "tableId": md.id,
            "partitionColumns": md.partition_columns,
            "configuration": md.configuration,
            "schema": json.loads(t.schema().to_json()),
            "files": files,
            # the decoded data file paths relative to the table root, sorted
            "fileUris": sorted(os.path.relpath(u, os.path.abspath(path)) for u in t.file_uris()),
            "numRows": t.count() if hasattr(t, "count") else None,
            "txn": {app: t.transaction_version(app) for app in ("gen-app",) if t.transaction_version(app) is not None},
        })
    with open(os.path.join(path, "expected.json"), "w") as f:
        json.dump(out, f, indent=1, sort_keys=True, ensure_ascii=False, default=str)
        f.write("\n")


def main(root):
    os.makedirs(root, exist_ok=True)
    unsupported = {}

    # appends: every primitive type, nested types, an app transaction on each commit.
    t = os.path.join(root, "appends")
    for i in range(3):
        write_deltalake(t, types_batch(i * 4, 4), mode="append",
                        commit_properties=CommitProperties(app_transactions=[Transaction("gen-app", i + 1)]))
    expected(t)

    # partitioned: hostile partition values, null and empty included, three partition columns.
    t = os.path.join(root, "partitioned")
    write_deltalake(t, partition_batch(0), partition_by=["p", "q", "d"], mode="append")
    write_deltalake(t, partition_batch(100), partition_by=["p", "q", "d"], mode="append")
    expected(t)

    # checkpoint: twelve commits, a checkpoint at version 9, a delete (removes) after it.
    t = os.path.join(root, "checkpoint")
    for i in range(10):
        write_deltalake(t, types_batch(i * 2, 2).select(["id", "s"]), mode="append",
                        commit_properties=CommitProperties(app_transactions=[Transaction("gen-app", i)]))
    DeltaTable(t).create_checkpoint()
    write_deltalake(t, types_batch(100, 2).select(["id", "s"]), mode="append")
    DeltaTable(t).delete("id < 4")
    expected(t)

    # replace: an append, a full overwrite, and an overwrite of a predicate.
    t = os.path.join(root, "replace")
    write_deltalake(t, partition_batch(0).select(["id", "q"]), partition_by=["q"], mode="append")
    write_deltalake(t, partition_batch(10).select(["id", "q"]), partition_by=["q"], mode="overwrite")
    write_deltalake(t, partition_batch(20).select(["id", "q"]).filter(pa.compute.equal(pa.compute.field("q"), 1)),
                    partition_by=["q"], mode="overwrite", predicate="q = 1")
    expected(t)

    # column mapping and deletion vectors: what deltalake can and cannot do.
    t = os.path.join(root, "colmap")
    try:
        write_deltalake(t, types_batch(0, 3).select(["id", "s"]), mode="append",
                        configuration={"delta.columnMapping.mode": "name"})
        write_deltalake(t, types_batch(3, 3).select(["id", "s"]), mode="append")
        expected(t)
    except Exception as e:  # noqa: BLE001 - recorded, not hidden
        unsupported["colmap"] = f"{type(e).__name__}: {e}"
    t = os.path.join(root, "dv")
    try:
        write_deltalake(t, types_batch(0, 6).select(["id", "s"]), mode="append",
                        configuration={"delta.enableDeletionVectors": "true"})
        DeltaTable(t).delete("id = 2")
        expected(t)
    except Exception as e:  # noqa: BLE001
        unsupported["dv"] = f"{type(e).__name__}: {e}"

    with open(os.path.join(root, "unsupported.json"), "w") as f:
        json.dump({"deltalake": deltalake.__version__, "unsupported": unsupported}, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "codec/delta/testdata/tables")
