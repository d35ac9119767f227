"""Ingest into a Delta table: through the gateway against delta-rs in-process.

    .venv-delta/bin/python integration/bench/delta/compare.py --bin bin/flightgw \
        [--ref-bin other/flightgw] [--rows 10000000] [--rounds 5]

(make delta-ingest-bench runs it.) One Arrow table of (int64, float64, a 16-byte string, a
UTC timestamp), the rows of integration/bench/ingest/compare.py, in batches of 65536 rows,
is written once to an Arrow IPC file; then, in paired rounds whose order alternates (so a
drift in the machine's load hits both alike), each side writes all of it as a new Delta
table on local files:

  gateway   Python ADBC (adbc_driver_flightsql) bulk ingest, mode create, auto-commit, into
            a fresh bin/flightgw on loopback serving one catalog of type delta (ZSTD level 1,
            its default);
  delta-rs  deltalake 1.6.6 write_deltalake of the same table, in a fresh Python process
            (so that its peak RSS is its own), ZSTD at the same level;
  gw-ref    with --ref-bin: the gateway side again with another build (a before/after
            comparison of a change, paired in the same rounds).

Both sides read the rows from the IPC file memory-mapped and untimed. Printed: each round,
then each side's median and range of wall time, the median and range of the per-round
ratio delta-rs/gateway (above 1 the gateway is faster), the median CPU seconds of the
gateway process, of its client and of delta-rs, the peak RSS (VmHWM) of the gateway
process and of the delta-rs process (with, beside it, that process's RSS before the write:
the mapped table it reads), and the load average at start and end.
"""

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

ZSTD_LEVEL = 1  # internal/pqwrite.DefaultZstdLevel, the gateway's
BATCH_ROWS = 65536


def make_table(rows: int) -> pa.Table:
    """Rows like integration/bench/ingest/compare.py's."""
    hexes = pa.StringArray.from_buffers(
        rows,
        pa.array(range(0, 12 * rows + 1, 12), pa.int32()).buffers()[1],
        pa.py_buffer(os.urandom(6 * rows).hex().encode()),
    )
    tag = pc.binary_join_element_wise("tag-", hexes, "")
    x = pc.multiply(pc.subtract(pc.random(rows), 0.5), 2000.0)
    base = 1_700_000_000_000_000
    ts = pc.cast(pc.floor(pc.add(pc.multiply(pc.random(rows), 365 * 86400 * 1e6), base)), pa.int64())
    t = pa.table({
        "id": pa.array(range(rows), pa.int64()),
        "x": x,
        "tag": tag,
        "ts": ts.cast(pa.timestamp("us", tz="UTC")),
    })
    return pa.Table.from_batches(t.to_batches(max_chunksize=BATCH_ROWS))


def read_ipc(path: str) -> pa.Table:
    with pa.memory_map(path) as src:
        return pa.ipc.open_file(src).read_all()


def status_bytes(pid, key: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no {key} for {pid}")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def gateway(args, ipc: str, tmp: Path, binary: str = "") -> dict:
    import adbc_driver_flightsql.dbapi as flight_sql

    table = read_ipc(ipc)
    (tmp / "wh").mkdir()
    cfg = tmp / "flightgw.yaml"
    cfg.write_text(
        "catalogs:\n  - name: dl\n    type: delta\n"
        f"    properties: {{warehouse: {json.dumps(str(tmp / 'wh'))}, create-namespaces: default}}\n"
        "default_catalog: dl\n")
    port = free_port()
    proc = subprocess.Popen(
        [binary or args.bin, "serve", "--data-dir", str(tmp / "gw"), "--config", str(cfg), "--listen", f"127.0.0.1:{port}"],
        env={**os.environ, "FLIGHTGW_LOG_LEVEL": "warn"}, stdout=subprocess.DEVNULL)
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
            wall = time.perf_counter() - start
            out = {"wall": wall, "cpu": cpu_seconds(proc.pid) - gw0, "client_cpu": time.process_time() - me0,
                   "rss": status_bytes(proc.pid, "VmHWM")}
        if n != table.num_rows:
            raise RuntimeError(f"gateway ingested {n} rows, want {table.num_rows}")
        logs = sorted((tmp / "wh" / "default" / "bench" / "_delta_log").glob("*.json"))
        if len(logs) != 1:  # a staged create: version 0 holds the table and its rows
            raise RuntimeError(f"gateway wrote {len(logs)} log entries, want 1")
        return out
    finally:
        proc.terminate()
        proc.wait()


def delta_rs(args, ipc: str, tmp: Path) -> dict:
    out = subprocess.run([sys.executable, __file__, "--child-delta-rs", ipc, str(tmp / "t")],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def child_delta_rs(ipc: str, path: str):
    from deltalake import DeltaTable, WriterProperties, write_deltalake

    table = read_ipc(ipc)
    before = status_bytes("self", "VmRSS")
    start, c0 = time.perf_counter(), time.process_time()
    write_deltalake(path, table, mode="error",
                    writer_properties=WriterProperties(compression="ZSTD", compression_level=ZSTD_LEVEL))
    wall = time.perf_counter() - start
    cpu = time.process_time() - c0
    rss = status_bytes("self", "VmHWM")
    n = DeltaTable(path).count()
    if n != table.num_rows:
        raise RuntimeError(f"delta-rs wrote {n} rows, want {table.num_rows}")
    json.dump({"wall": wall, "cpu": cpu, "rss": rss, "rss_before": before}, sys.stdout)
    sys.stdout.flush()
    os._exit(0)  # delta-rs 1.6.6 can abort at interpreter exit (integration/delta/read_table.py)


SIDES = {"gateway": gateway, "delta-rs": delta_rs}


def gw_ref(args, ipc: str, tmp: Path) -> dict:
    return gateway(args, ipc, tmp, args.ref_bin)


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--child-delta-rs":
        child_delta_rs(sys.argv[2], sys.argv[3])
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="bin/flightgw")
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--ref-bin", default="", help="another build of bin/flightgw, paired in the same rounds")
    args = ap.parse_args()
    args.bin = os.path.abspath(args.bin)
    if args.ref_bin:
        args.ref_bin = os.path.abspath(args.ref_bin)
        SIDES["gw-ref"] = gw_ref

    load0 = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="flightgw-delta-bench-") as d:
        ipc = os.path.join(d, "rows.arrow")
        table = make_table(args.rows)
        mb = table.nbytes / 1e6
        with pa.OSFile(ipc, "wb") as f, pa.ipc.new_file(f, table.schema) as w:
            w.write_table(table)
        del table
        print(f"rows {args.rows}, Arrow {mb:.0f} MB in batches of {BATCH_ROWS}; {args.rounds} paired rounds; "
              f"ZSTD level {ZSTD_LEVEL} both sides")
        res = {s: [] for s in SIDES}
        for r in range(args.rounds):
            order = list(SIDES) if r % 2 == 0 else list(SIDES)[::-1]
            for s in order:
                with tempfile.TemporaryDirectory(prefix="round-", dir=d) as t:
                    res[s].append(SIDES[s](args, ipc, Path(t)))
            print(f"round {r + 1}: " + "  ".join(f"{s} {res[s][-1]['wall']:.2f}s" for s in SIDES), flush=True)
    load1 = os.getloadavg()

    def med(s, k):
        return statistics.median(x[k] for x in res[s])

    for s in SIDES:
        walls = [x["wall"] for x in res[s]]
        print(f"{s:9s} wall median {med(s, 'wall'):.2f}s range {min(walls):.2f}-{max(walls):.2f}s "
              f"({args.rows / med(s, 'wall'):,.0f} rows/s)")
    ratios = [b["wall"] / a["wall"] for a, b in zip(res["gateway"], res["delta-rs"])]
    print(f"delta-rs/gateway wall time, per round: median {statistics.median(ratios):.2f}, "
          f"range {min(ratios):.2f}-{max(ratios):.2f} (target >= 1.5 on an idle machine)")
    print(f"CPU seconds (median): gateway {med('gateway', 'cpu'):.2f} (target <= delta-rs's), "
          f"its ADBC client {med('gateway', 'client_cpu'):.2f}, delta-rs {med('delta-rs', 'cpu'):.2f}")
    if args.ref_bin:
        ref = [b["wall"] / a["wall"] for a, b in zip(res["gateway"], res["gw-ref"])]
        print(f"gw-ref ({args.ref_bin}): wall median {med('gw-ref', 'wall'):.2f}s, CPU seconds {med('gw-ref', 'cpu'):.2f} "
              f"(min {min(x['cpu'] for x in res['gw-ref']):.2f}; gateway min {min(x['cpu'] for x in res['gateway']):.2f}), "
              f"peak RSS {max(x['rss'] for x in res['gw-ref']) / 1e6:.0f} MB; gw-ref/gateway wall per round: median "
              f"{statistics.median(ref):.2f}, range {min(ref):.2f}-{max(ref):.2f}")
    print(f"peak RSS (max): gateway {max(x['rss'] for x in res['gateway']) / 1e6:.0f} MB (target <= 300), "
          f"delta-rs process {max(x['rss'] for x in res['delta-rs']) / 1e6:.0f} MB "
          f"(counting the pages of the mapped input it touched, at most {mb:.0f} MB; "
          f"{max(x['rss_before'] for x in res['delta-rs']) / 1e6:.0f} MB before the write)")
    print(f"load average (1m) {load0[0]:.1f} at start, {load1[0]:.1f} at end, on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
