"""Appends to a Delta table with DuckDB's delta extension (a table another writer made).

Usage: write_duckdb.py <table-dir> <insert statement into d>

The table is ATTACHed as d (TYPE delta) and the statement run on it: DuckDB writes the
Parquet files and commits the next version itself. The extension is loaded as read_duckdb.py
loads it. TestDeltaGatewayReadsOthers runs it on copies of the delta-rs fixture tables.
"""
import sys

from read_duckdb import connect


def main():
    con = connect()
    con.execute(f"ATTACH '{sys.argv[1]}' AS d (TYPE delta)")
    con.execute(sys.argv[2])


if __name__ == "__main__":
    main()
