"""Appends batches to a Delta table with delta-rs (deltalake) in a loop, as another writer
racing the gateway.

Usage: append_loop.py <table-dir> <first-batch> <batches> <rows>

Batch k (first-batch <= k < first-batch+batches) holds the ids k*1000 ... k*1000+rows-1 with
src "deltalake", written by write_deltalake(..., mode="append") with the commitInfo field
"flightgw.test.batch": k, so that the test finds the version each batch landed at. Prints
"batch <k>" once each batch has committed, or "failed <k>" when delta-rs gave the commit up
with CommitFailedError: delta-rs 1.6.6 takes an append as having read the whole table, so a
concurrent commit that removes any file (the gateway's replace) fails it as "a concurrent
transaction deleted data this operation read", where Delta Spark lets a blind append through. The flightgw integration test
TestDeltaInterleavedWriters runs it while the gateway appends and replaces.
"""
import os
import sys

import pyarrow as pa
from deltalake import CommitProperties, write_deltalake
from deltalake.exceptions import CommitFailedError


def main():
    path, first, n, rows = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    for k in range(first, first + n):
        t = pa.table({"id": pa.array(range(k * 1000, k * 1000 + rows), pa.int64()),
                      "src": pa.array(["deltalake"] * rows, pa.string())})
        # Enough retries that delta-rs (which retries without backoff, delta-rs#3066)
        # outlasts the gateway's commits in a burst.
        try:
            write_deltalake(path, t, mode="append",
                            commit_properties=CommitProperties(custom_metadata={"flightgw.test.batch": str(k)},
                                                               max_commit_retries=1000))
        except CommitFailedError as e:
            print(f"failed {k}", flush=True)
            print(f"batch {k}: {e}", file=sys.stderr)
            continue
        print(f"batch {k}", flush=True)


if __name__ == "__main__":
    main()
    sys.stdout.flush()
    os._exit(0)  # delta-rs may abort at interpreter teardown (see read_table.py)
