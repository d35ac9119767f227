"""Fixtures: a real flightgw binary on a free loopback port, and readers of
what it writes (pyiceberg on the same SQLite catalog)."""

import os
import socket
import subprocess
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Gateway:
    def __init__(self, data_dir: Path, port: int, proc: subprocess.Popen, log: Path):
        self.data_dir = data_dir
        self.port = port
        self.proc = proc
        self.log = log
        self.uri = f"grpc://127.0.0.1:{port}"

    def catalog(self):
        """pyiceberg's SqlCatalog on the gateway's embedded catalog."""
        from pyiceberg.catalog.sql import SqlCatalog

        return SqlCatalog(
            "lake",
            uri=f"sqlite:///{self.data_dir}/catalog.db",
            warehouse=f"file://{self.data_dir}/warehouse",
        )

    def data_files(self):
        """Every Parquet file under the warehouse, staged or committed."""
        return sorted(p for p in (self.data_dir / "warehouse").rglob("*.parquet"))

    def logs(self) -> str:
        return self.log.read_text(errors="replace")


def start_gateway(tmp: Path, *extra: str, env=None) -> Gateway:
    binary = os.environ.get("FLIGHTGW_BIN", str(REPO / "bin" / "flightgw"))
    port = _free_port()
    data = tmp / "data"
    log = tmp / "gateway.log"
    proc = subprocess.Popen(
        [binary, "serve", "--data-dir", str(data), "--listen", f"127.0.0.1:{port}", *extra],
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
        env={**os.environ, **(env or {})},
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"gateway exited {proc.returncode}:\n{log.read_text()}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return Gateway(data, port, proc, log)
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise RuntimeError(f"gateway did not listen within 60s:\n{log.read_text()}")


def stop_gateway(gw: Gateway) -> None:
    gw.proc.terminate()
    try:
        gw.proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        gw.proc.kill()
        gw.proc.wait()


@pytest.fixture(scope="module")
def gateway(tmp_path_factory):
    gw = start_gateway(tmp_path_factory.mktemp("gw"))
    yield gw
    stop_gateway(gw)
    assert "panic" not in gw.logs(), gw.logs()
    assert not leaked_internals(gw.logs())


def leaked_internals(logs: str) -> list:
    """The client messages (the gateway logs each failed call's: "msg=call
    ... err=...") that show an internal name: a private view (__flightgw_),
    the INSERT's wrapping (__src) or anything else with "__"."""
    return [line for line in logs.splitlines() if "msg=call" in line and "__" in line.partition(" err=")[2]]


@pytest.fixture
def conn(gateway):
    import adbc_driver_flightsql.dbapi as flight_sql

    with flight_sql.connect(gateway.uri) as c:
        yield c
