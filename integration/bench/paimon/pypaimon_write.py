"""One pypaimon round of the Paimon ingest benchmark (integration/bench/paimon).

Reads the benchmark's batch pool (an Arrow IPC file the Go side wrote), then
times pypaimon writing ROWS rows cycled from it into a new append table
(bucket -1, Parquet, zstd: what the gateway writes), commit included, and
prints "PYPAIMON_SECONDS <s>". Loading the pool and importing pypaimon are
outside the timing, as the gateway's start is.

    python pypaimon_write.py POOL.arrow ROWS WAREHOUSE TABLE
"""

import sys
import time

import pyarrow as pa
from pypaimon import CatalogFactory, Schema


def main(pool_path, rows, warehouse, table):
    with pa.memory_map(pool_path) as src:
        reader = pa.ipc.open_file(src)
        pool = [reader.get_batch(i) for i in range(reader.num_record_batches)]
        schema = reader.schema
    catalog = CatalogFactory.create({"warehouse": warehouse})
    catalog.create_database("default", True)
    start = time.perf_counter()
    catalog.create_table(f"default.{table}", Schema.from_pyarrow_schema(
        schema, options={"bucket": "-1", "file.format": "parquet", "file.compression": "zstd"}), False)
    t = catalog.get_table(f"default.{table}")
    wb = t.new_batch_write_builder()
    w = wb.new_write()
    left, i = rows, 0
    while left > 0:
        b = pool[i % len(pool)]
        i += 1
        if b.num_rows > left:
            b = b.slice(0, left)
        w.write_arrow_batch(b)
        left -= b.num_rows
    c = wb.new_commit()
    c.commit(w.prepare_commit())
    w.close()
    c.close()
    elapsed = time.perf_counter() - start
    snap = t.snapshot_manager().get_latest_snapshot()
    if snap is None or snap.total_record_count != rows:
        sys.exit(f"pypaimon committed {snap and snap.total_record_count} rows, want {rows}")
    print(f"PYPAIMON_SECONDS {elapsed:.6f}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4])
