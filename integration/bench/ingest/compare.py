"""Ingest through the gateway against what a user would compare it with.

    .venv/bin/python integration/bench/ingest/compare.py --bin bin/flightgw \
        --gobench bin/ingestbench [--rows 5000000] [--rounds 5]

(make bench-ingest-py runs it for 5M and 10M rows.) One Arrow table of
(int64, float64, a 16-byte string, a UTC timestamp), in batches of 65536
rows, is written in paired rounds, the order of the sides rotating from
round to round so that a drift in the machine's load hits each alike:

  gw-py     Python ADBC (adbc_driver_flightsql) bulk ingest, mode create,
            auto-commit, into a fresh bin/flightgw on loopback (embedded
            Iceberg default: SQLite catalog, local files);
  pyiceberg pyiceberg 0.12 Table.append of the same table, in-process, into
            a SqlCatalog on SQLite and local files (create_table untimed);
  pyarrow   pyarrow.parquet writing the same table to one local file with
            the same properties and no catalog: the encoding limit;
  gw-go     the ADBC Go driver into a fresh gateway (integration/bench/ingest
            -once, its own rows of the same shape);
  gw-ref    with --ref-bin: gw-py into another build of the gateway (a
            before/after comparison of a change, paired in the same run).

Every side writes ZSTD at the same level, data pages of the same size and
dictionary encoding on (with its fallback to plain); the gateway and
pyarrow write data pages v2, pyiceberg (which has no setting for it) v1. Row
groups: the gateway bounds one by its encoded size (4 MiB, for the memory
bound), pyiceberg by rows (1Mi by default). With --row-groups gateway the
other sides take the row count of the gateway's first file instead; that
costs pyarrow (so pyiceberg) dearly, as it tries a dictionary afresh in
every row group, so the default is pyiceberg's own (all printed below). The gateway's peak RSS
is VmHWM of its process after the ingest. The median and range of each
side are printed, then the ratios of medians (speed of the gateway over
the other side: above 1 the gateway is faster).
"""

import argparse
import os
import shutil
import socket
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

# The gateway's defaults (catalogs/iceberg/parquet.go); the other sides are
# set to them. ROW_GROUP_ROWS is replaced by the gateway's row groups.
ZSTD_LEVEL = 1
ROW_GROUP_ROWS = 1 << 20
PAGE_BYTES = 1 << 20
PAGE_VERSION = "2.0"  # pyiceberg has no property for it: it writes 1.0
BATCH_ROWS = 65536


def make_table(rows: int) -> pa.Table:
    """Rows like integration/bench/ingest/main.go's, built without numpy."""
    hexes = pa.StringArray.from_buffers(
        rows,
        pa.array(range(0, 12 * rows + 1, 12), pa.int32()).buffers()[1],
        pa.py_buffer(os.urandom(6 * rows).hex().encode()),
    )
    tag = pc.binary_join_element_wise("tag-", hexes, "")
    u = pc.random(rows)
    x = pc.multiply(pc.subtract(u, 0.5), 2000.0)
    base = 1_700_000_000_000_000
    ts = pc.cast(pc.floor(pc.add(pc.multiply(pc.random(rows), 365 * 86400 * 1e6), base)), pa.int64())
    t = pa.table(
        {
            "id": pa.array(range(rows), pa.int64()),
            "x": x,
            "tag": tag,
            "ts": ts.cast(pa.timestamp("us", tz="UTC")),
        }
    )
    return pa.Table.from_batches(t.to_batches(max_chunksize=BATCH_ROWS))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def peak_rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmHWM for {pid}")


def cpu_seconds(pid: int) -> float:
    """User and system CPU time of pid so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def gw_ref(args, table: pa.Table, tmp: Path):
    return gw_py(args, table, tmp, binary=args.ref_bin, side="gw-ref")


def gw_py(args, table: pa.Table, tmp: Path, binary=None, side="gw-py"):
    import adbc_driver_flightsql.dbapi as flight_sql

    port = free_port()
    env = {**os.environ, "FLIGHTGW_LOG_LEVEL": "warn"}
    proc = subprocess.Popen(
        [binary or args.bin, "serve", "--data-dir", str(tmp / "gw"), "--listen", f"127.0.0.1:{port}"],
        env=env,
    )
    try:
        for _ in range(1200):
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                    break
            except OSError:
                time.sleep(0.05)
        with flight_sql.connect(f"grpc://127.0.0.1:{port}", autocommit=True) as conn, conn.cursor() as cur:
            gw0, me0 = cpu_seconds(proc.pid), time.process_time()
            start = time.perf_counter()
            n = cur.adbc_ingest("bench", table, mode="create")
            dur = time.perf_counter() - start
            cpu[f"{side} gateway"].append(cpu_seconds(proc.pid) - gw0)
            cpu[f"{side} client"].append(time.process_time() - me0)
        if n != table.num_rows:
            raise RuntimeError(f"gateway ingested {n} rows, want {table.num_rows}")
        rss = peak_rss(proc.pid)
        global ROW_GROUP_ROWS, GW_FILES, GW_ROW_GROUP
        files = sorted((tmp / "gw").rglob("*.parquet"))
        GW_FILES = len(files)
        GW_ROW_GROUP = pq.ParquetFile(files[0]).metadata.row_group(0).num_rows
        if args.row_groups == "gateway":
            ROW_GROUP_ROWS = GW_ROW_GROUP
        return dur, rss
    finally:
        proc.terminate()
        proc.wait()


def py_iceberg(args, table: pa.Table, tmp: Path):
    from pyiceberg.catalog.sql import SqlCatalog

    (tmp / "wh").mkdir()
    cat = SqlCatalog("bench", uri=f"sqlite:///{tmp}/catalog.db", warehouse=f"file://{tmp}/wh")
    cat.create_namespace("default")
    tbl = cat.create_table(
        "default.bench",
        schema=table.schema,
        properties={
            "write.parquet.compression-codec": "zstd",
            "write.parquet.compression-level": str(ZSTD_LEVEL),
            "write.parquet.row-group-limit": str(ROW_GROUP_ROWS),
            "write.parquet.page-size-bytes": str(PAGE_BYTES),
        },
    )
    start, c0 = time.perf_counter(), time.process_time()
    tbl.append(table)
    dur = time.perf_counter() - start
    cpu["pyiceberg"].append(time.process_time() - c0)
    return dur, None


def py_arrow(args, table: pa.Table, tmp: Path):
    start, c0 = time.perf_counter(), time.process_time()
    pq.write_table(
        table,
        tmp / "t.parquet",
        compression="zstd",
        compression_level=ZSTD_LEVEL,
        row_group_size=ROW_GROUP_ROWS,
        data_page_size=PAGE_BYTES,
        data_page_version=PAGE_VERSION,
        write_batch_size=20000,
        dictionary_pagesize_limit=2 << 20,
        use_dictionary=True,
        write_statistics=True,
    )
    dur = time.perf_counter() - start
    cpu["pyarrow"].append(time.process_time() - c0)
    return dur, None


def gw_go(args, table: pa.Table, tmp: Path):
    out = subprocess.run(
        [args.gobench, "-once", "-bin", args.bin, "-rows", str(table.num_rows), "-batch", str(BATCH_ROWS)],
        check=True, capture_output=True, text=True,
    ).stdout.split()
    return float(out[0]), int(out[1])


# CPU seconds of each side (the gateway's from /proc), beside the wall
# times: on a shared machine they vary far less.
cpu = {"gw-py gateway": [], "gw-py client": [], "gw-ref gateway": [], "gw-ref client": [], "pyiceberg": [], "pyarrow": []}

GW_FILES = 0
GW_ROW_GROUP = 0

SIDES = {"gw-py": gw_py, "pyiceberg": py_iceberg, "pyarrow": py_arrow, "gw-go": gw_go, "gw-ref": gw_ref}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="bin/flightgw")
    ap.add_argument("--gobench", default="bin/ingestbench")
    ap.add_argument("--rows", type=int, default=5_000_000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--sides", default="gw-py,pyiceberg,pyarrow,gw-go")
    ap.add_argument("--ref-bin", help="another gateway build to pair with gw-py (side gw-ref)")
    ap.add_argument("--row-groups", choices=("pyiceberg", "gateway"), default="pyiceberg",
                    help="row groups of pyiceberg and pyarrow: pyiceberg's default (1Mi rows) or the gateway's")
    args = ap.parse_args()
    args.bin = os.path.abspath(args.bin)
    args.gobench = os.path.abspath(args.gobench)
    sides = args.sides.split(",")
    if args.ref_bin:
        args.ref_bin = os.path.abspath(args.ref_bin)
        sides.append("gw-ref")

    table = make_table(args.rows)
    mb = table.nbytes / 1e6
    load0 = os.getloadavg()
    print(f"rows {args.rows}, Arrow {mb:.0f} MB in batches of {BATCH_ROWS}; {args.rounds} paired rounds")
    times = {s: [] for s in sides}
    rss = []
    for r in range(args.rounds):
        order = sides[r % len(sides):] + sides[: r % len(sides)]
        for s in order:
            with tempfile.TemporaryDirectory(prefix="flightgw-cmp-") as d:
                dur, peak = SIDES[s](args, table, Path(d))
            times[s].append(dur)
            if peak is not None:
                rss.append((s, peak))
        print(f"round {r + 1}: " + "  ".join(f"{s} {times[s][-1]:.2f}s" for s in sides), flush=True)
    print(f"every side: zstd level {ZSTD_LEVEL}, data pages of {PAGE_BYTES} B (v{PAGE_VERSION[0]}; pyiceberg v1), dictionary on with "
          f"fallback to plain; row groups: gateway {GW_ROW_GROUP} rows (<= 4 MiB, {GW_FILES} files), "
          f"pyiceberg and pyarrow {ROW_GROUP_ROWS} rows")
    load1 = os.getloadavg()
    print(f"load average (1m) {load0[0]:.1f} at start, {load1[0]:.1f} at end, on {os.cpu_count()} cores")
    med = {s: statistics.median(v) for s, v in times.items()}
    for s in sides:
        v = times[s]
        print(f"{s:10s} median {med[s]:6.2f}s  range {min(v):.2f}-{max(v):.2f}s  {mb / med[s]:7.1f} MB/s  {args.rows / med[s]:11.0f} rows/s")
    print("CPU seconds (median): " + ", ".join(f"{k} {statistics.median(v):.2f}" for k, v in cpu.items() if v))
    for s in ("gw-py", "gw-go", "gw-ref"):
        peaks = [p for n, p in rss if n == s]
        if peaks:
            print(f"{s:10s} gateway peak RSS max {max(peaks) / 1e6:.0f} MB (target <= 300)")
    if "gw-py" in med:
        for other, target in (("pyiceberg", 1.0), ("pyarrow", 0.8)):
            if other in med:
                print(f"gw-py / {other}: {med[other] / med['gw-py']:.2f} (target >= {target})")
        if "gw-ref" in med:
            print(f"gw-py / gw-ref (this build over the reference build): {med['gw-ref'] / med['gw-py']:.2f}")


if __name__ == "__main__":
    main()
