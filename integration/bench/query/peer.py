"""A streamed SELECT * through the gateway against Sail, the fastest Flight
SQL peer on PyPI, on the same Parquet files, read by the Python ADBC driver.

    .venv/bin/python integration/bench/query/peer.py --bin bin/flightgw \
        [--rows 10000000] [--rounds 9] [--ref-bin OTHER] [--pprof DIR]

(make bench-query-peer runs it.) One table of (id int64, x float64, a
short string, a UTC timestamp[us]) is ingested through the gateway (Python
ADBC bulk ingest, the embedded Iceberg default); Sail (pysail, `sail flight
server`) is given the table's data directory, the very files the gateway
wrote, as `CREATE TABLE t USING parquet LOCATION '<dir>'`. Then, after one
untimed read on each side, every round reads `SELECT * FROM t` to the end
on each side, batch by batch (nothing is held whole), the order of the
sides alternating from round to round so that a drift of the machine's
load hits both alike. Printed: each side's median time and rows/s, the
median of the rounds' Sail/gateway time ratios (above 1 the gateway is
faster) with their range, the median CPU seconds each server spent on a
read (user and system, its process tree: the figure a loaded machine moves
least), each server's peak RSS during the timed rounds
(sampled every 10 ms, its process tree), and the load average before and
after.

--ref-bin pairs another gateway build (side gw-ref, on the same data
directory) with the gateway in the same rounds: a before/after
measurement of a change (the same build with --env/--ref-env K=V pairs two
settings: FLIGHTGW_* variables). --pprof DIR saves a CPU profile of the gateway
during extra untimed reads, and the allocations they made (DIR/cpu.pprof,
DIR/allocs.pprof, DIR/allocs-base.pprof: go tool pprof -base).
"""

import argparse
import gc
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

import pyarrow as pa

sys.dont_write_bytecode = True  # no __pycache__ in the tree
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "ingest"))
from compare import free_port, make_table  # noqa: E402

SETTLE = 0.2  # seconds of pause before each timed read
QUERY = "SELECT * FROM t"


def wait_port(port: int, proc: subprocess.Popen, what: str):
    for _ in range(1200):
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"{what} did not listen on {port}")


def tree_rss(pid: int) -> int:
    """VmRSS of pid and its descendants, in bytes."""
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) * 1024
            for task in Path(f"/proc/{p}/task").iterdir():
                kids = (task / "children").read_text().split()
                todo.extend(int(k) for k in kids)
        except (FileNotFoundError, ProcessLookupError):
            pass
    return total


class Peaks:
    """Samples the RSS of the servers every 10 ms while running."""

    def __init__(self, pids: dict):
        self.pids, self.peak = pids, {k: 0 for k in pids}
        self.stop = threading.Event()
        self.t = threading.Thread(target=self.run, daemon=True)

    def run(self):
        while not self.stop.is_set():
            for k, pid in self.pids.items():
                self.peak[k] = max(self.peak[k], tree_rss(pid))
            self.stop.wait(0.01)

    def __enter__(self):
        self.t.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.t.join()


class Server:
    def __init__(self, name, argv, port, env=None):
        self.name, self.port = name, port
        self.proc = subprocess.Popen(argv, env={**os.environ, **(env or {})})
        wait_port(port, self.proc, name)
        import adbc_driver_flightsql.dbapi as flight_sql

        self.conn = flight_sql.connect(f"grpc://127.0.0.1:{port}", autocommit=True)

    def read(self, q=QUERY) -> int:
        n = 0
        with self.conn.cursor() as cur:
            cur.execute(q)
            for b in cur.fetch_record_batch():
                n += b.num_rows
        return n

    def close(self):
        try:
            self.conn.close()
        except Exception:
            pass
        self.proc.terminate()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def gateway(name, binary, data: Path, pprof: str = "", extra=()) -> Server:
    port = free_port()
    env = {"FLIGHTGW_LOG_LEVEL": "warn", **dict(e.split("=", 1) for e in extra)}
    if pprof:
        env["FLIGHTGW_PPROF_LISTEN"] = pprof
    return Server(name, [binary, "serve", "--data-dir", str(data), "--listen", f"127.0.0.1:{port}"], port, env)


def sail(binary, location: Path) -> Server:
    port = free_port()
    s = Server("sail", [binary, "flight", "server", "--ip", "127.0.0.1", "--port", str(port)], port,
               {"RUST_LOG": "warn"})
    with s.conn.cursor() as cur:
        cur.execute(f"CREATE TABLE t USING parquet LOCATION '{location}/'")
    return s


def data_dir(warehouse: Path) -> Path:
    files = sorted(warehouse.rglob("*.parquet"))
    if not files:
        raise RuntimeError(f"no Parquet files under {warehouse}")
    dirs = {f.parent for f in files}
    if len(dirs) != 1:
        raise RuntimeError(f"the table's files are in {len(dirs)} directories")
    return dirs.pop()


def tree_cpu(pid: int) -> float:
    """User and system CPU seconds of pid and its descendants so far."""
    total, todo = 0.0, [pid]
    while todo:
        p = todo.pop()
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
            for task in Path(f"/proc/{p}/task").iterdir():
                todo.extend(int(k) for k in (task / "children").read_text().split())
        except (FileNotFoundError, ProcessLookupError):
            pass
    return total


def timed(s: Server, rows: int) -> tuple:
    """The wall time of a read, and the CPU seconds the server and this
    client (the ADBC driver reading) spent on it."""
    gc.collect()
    time.sleep(SETTLE)
    cpu, own = tree_cpu(s.proc.pid), time.process_time()
    start = time.perf_counter()
    got = s.read()
    d = time.perf_counter() - start
    cpu, own = tree_cpu(s.proc.pid) - cpu, time.process_time() - own
    if got != rows:
        raise RuntimeError(f"{s.name} read {got} rows, not {rows}")
    return d, cpu, own


def profile(gw: Server, addr: str, out: Path, rows: int):
    """CPU profile of the gateway over untimed reads, and their allocations."""
    out.mkdir(parents=True, exist_ok=True)
    base = f"http://{addr}/debug/pprof"
    (out / "allocs-base.pprof").write_bytes(urllib.request.urlopen(f"{base}/allocs?gc=1").read())
    secs = 8
    res = {}

    def cpu():
        res["cpu"] = urllib.request.urlopen(f"{base}/profile?seconds={secs}").read()

    t = threading.Thread(target=cpu)
    t.start()
    reads, deadline = 0, time.time() + secs
    while time.time() < deadline:
        gw.read()
        reads += 1
    t.join()
    (out / "cpu.pprof").write_bytes(res["cpu"])
    (out / "allocs.pprof").write_bytes(urllib.request.urlopen(f"{base}/allocs?gc=1").read())
    print(f"profiled {reads} reads of {rows} rows over {secs}s into {out}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="bin/flightgw")
    ap.add_argument("--ref-bin", help="another gateway build, paired as side gw-ref")
    ap.add_argument("--env", action="append", default=[], help="K=V in the gateway's environment")
    ap.add_argument("--ref-env", action="append", default=[], help="K=V in gw-ref's environment")
    ap.add_argument("--sail", default=str(Path(sys.executable).parent / "sail"))
    ap.add_argument("--no-sail", action="store_true", help="leave Sail out (with --ref-bin)")
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--pprof", help="directory for the gateway's CPU and allocation profiles")
    args = ap.parse_args()

    load0 = os.getloadavg()
    tmp = Path(tempfile.mkdtemp(prefix="flightgw-peer-bench-"))
    servers = []
    try:
        pprof_addr = f"127.0.0.1:{free_port()}" if args.pprof else ""
        gw = gateway("gateway", args.bin, tmp / "gw", pprof_addr, args.env)
        servers.append(gw)
        table = make_table(args.rows)
        start = time.perf_counter()
        with gw.conn.cursor() as cur:
            cur.adbc_ingest("t", table, mode="create")
        print(f"ingested {args.rows} rows in {time.perf_counter() - start:.1f}s; schema {table.schema.types}")
        del table
        gc.collect()
        loc = data_dir(tmp / "gw")
        nfiles = len(list(loc.glob("*.parquet")))
        if args.ref_bin or args.ref_env:
            # The same data directory: a gateway's tables name their
            # absolute locations, and both only read.
            servers.append(gateway("gw-ref", args.ref_bin or args.bin, tmp / "gw", extra=args.ref_env))
        if not args.no_sail:
            servers.append(sail(args.sail, loc))
        for s in servers:  # untimed: opens DuckDB, warms page cache and allocators
            if (n := s.read()) != args.rows:
                raise RuntimeError(f"{s.name} read {n} rows, not {args.rows}")
        if args.pprof:
            profile(gw, pprof_addr, Path(args.pprof), args.rows)

        times = {s.name: [] for s in servers}
        cpus = {s.name: [] for s in servers}
        client = {s.name: [] for s in servers}
        with Peaks({s.name: s.proc.pid for s in servers}) as peaks:
            for r in range(args.rounds):
                order = servers if r % 2 == 0 else servers[::-1]
                for s in order:
                    d, cpu, own = timed(s, args.rows)
                    times[s.name].append(d)
                    cpus[s.name].append(cpu)
                    client[s.name].append(own)
        load1 = os.getloadavg()

        print(f"table: {args.rows} rows in {nfiles} Parquet file(s) ({loc}); {args.rounds} paired rounds, "
              f"Python ADBC, {QUERY}")
        for s in servers:
            m = statistics.median(times[s.name])
            print(f"{s.name:8s} median {m:6.3f}s ({min(times[s.name]):.3f}-{max(times[s.name]):.3f})  "
                  f"{args.rows / m / 1e6:5.1f}M rows/s  CPU server {statistics.median(cpus[s.name]):.2f}s "
                  f"client {statistics.median(client[s.name]):.2f}s  "
                  f"peak RSS {peaks.peak[s.name] >> 20} MB")
        for other in [s.name for s in servers[1:]]:
            ratios = sorted(o / g for o, g in zip(times[other], times["gateway"]))
            print(f"{other}/gateway time ratio: median {statistics.median(ratios):.2f} "
                  f"(rounds {ratios[0]:.2f}-{ratios[-1]:.2f}; above 1 the gateway is faster)")
            for what, d in (("server", cpus), ("client", client)):
                r = sorted(o / g for o, g in zip(d[other], d["gateway"]) if g > 0)
                if r:
                    print(f"{other}/gateway {what} CPU ratio: median {statistics.median(r):.2f} "
                          f"(rounds {r[0]:.2f}-{r[-1]:.2f})")
        print("load average before %.2f %.2f %.2f, after %.2f %.2f %.2f" % (*load0, *load1))
    finally:
        for s in servers:
            s.close()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
