"""Appends batches to a Delta table with DuckDB's delta extension in a loop, as another
writer racing the gateway and delta-rs.

Usage: duckdb_append_loop.py <table-dir> <first-batch> <batches> <rows>

Batch k holds the ids k*1000 ... k*1000+rows-1 with src "duckdb", one INSERT into the table
ATTACHed as d (TYPE delta), which DuckDB commits as the next version itself. DuckDB 1.5.5's
delta extension does not retry a commit that loses the race ("commit conflict at version
N": its put-if-absent of the version file failed, nothing landed), so the loop retries
that INSERT, up to 50 times with a short backoff, as an application using DuckDB would.
Prints "batch <k>" once each batch has committed, or "failed <k>" when it gave up.
TestDeltaInterleavedWriters runs it beside append_loop.py and the gateway's writers.
"""
import random
import sys
import time

from read_duckdb import connect


def main():
    path, first, n, rows = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    con = connect()
    con.execute(f"ATTACH '{path}' AS d (TYPE delta)")
    for k in range(first, first + n):
        for attempt in range(50):
            try:
                con.execute(f"INSERT INTO d SELECT {k * 1000} + range AS id, 'duckdb' AS src FROM range({rows})")
                print(f"batch {k}", flush=True)
                break
            except Exception as e:  # duckdb.TransactionException on a lost race
                if "commit conflict" not in str(e):
                    raise
                time.sleep(random.uniform(0.005, 0.05) * (attempt + 1))
        else:
            print(f"failed {k}", flush=True)


if __name__ == "__main__":
    main()
