"""The distributed-commit actions through pyarrow.flight: three workers
ingest in transactions and prepare, a coordinator commits once, as the
README shows (its example runs here as written)."""

import base64
import json
import re

import pyarrow as pa
import pyarrow.flight as flight

from conftest import REPO

SQL = "type.googleapis.com/arrow.flight.protocol.sql."


# Minimal protobuf, for the Flight SQL messages the workers send: the test
# needs no generated code.
def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b, n = n & 0x7F, n >> 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _field(num: int, value: bytes) -> bytes:
    return _varint(num << 3 | 2) + _varint(len(value)) + value


def _any(name: str, msg: bytes = b"") -> bytes:
    return _field(1, (SQL + name).encode()) + _field(2, msg)


def _first_bytes_field(b: bytes, num: int) -> bytes:
    i = 0
    while i < len(b):
        key, i = _read_varint(b, i)
        size, i = _read_varint(b, i)
        if key == num << 3 | 2:
            return b[i : i + size]
        i += size
    raise ValueError(f"field {num} not found")


def _read_varint(b: bytes, i: int):
    n = shift = 0
    while True:
        n |= (b[i] & 0x7F) << shift
        shift += 7
        i += 1
        if not b[i - 1] & 0x80:
            return n, i


def begin(client) -> bytes:
    [r] = client.do_action(flight.Action("BeginTransaction", _any("ActionBeginTransactionRequest")))
    return _first_bytes_field(_first_bytes_field(r.body.to_pybytes(), 2), 1)


def ingest_in(client, txn: bytes, table: str, ids) -> None:
    options = b"\x08\x01\x10\x02"  # if_not_exist CREATE, if_exists APPEND
    cmd = _field(1, options) + _field(2, table.encode()) + _field(6, txn)
    descriptor = flight.FlightDescriptor.for_command(_any("CommandStatementIngest", cmd))
    data = pa.table({"id": pa.array(ids, pa.int64())})
    writer, _ = client.do_put(descriptor, data.schema)
    writer.write_table(data)
    writer.close()


def readme_python_examples() -> list:
    """The section's Python blocks: a worker's, then the commit's."""
    text = (REPO / "README.md").read_text()
    section = text.split("## Distributed commit (Flight actions)", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, re.S)


def test_readme_commit_messages(gateway):
    worker_code, commit_code = readme_python_examples()
    # The README's worker, as written: its begin and ingest_in make the
    # other workers too.
    scope = {}
    exec(compile(worker_code.replace("grpc://127.0.0.1:32010", gateway.uri), "README.md", "exec"), scope)
    workers = scope["workers"]
    for i in range(3):
        w = flight.FlightClient(gateway.uri)
        txn = scope["begin"](w)
        scope["ingest_in"](w, txn, "orders", pa.table({"id": pa.array(range(i * 100, i * 100 + 100), pa.int64())}))
        workers.append((w, txn.decode()))
    code = commit_code.replace("grpc://127.0.0.1:32010", gateway.uri)
    scope = {"workers": workers}
    exec(compile(code, "README.md", "exec"), scope)
    snapshot = scope["snapshot"]

    tbl = gateway.catalog().load_table("default.orders")
    snaps = tbl.metadata.snapshots
    assert [s.snapshot_id for s in snaps] == [snapshot]
    assert snaps[0].summary["flightgw.commit-id"] == "msg-job-42"
    assert sorted(tbl.scan().to_arrow()["id"].to_pylist()) == sorted([1, 2, 3] + list(range(300)))

    # Repeated after a "lost reply": the same snapshot, nothing appended.
    action = scope["action"]
    again = action(scope["coordinator"], "CommitMessages",
                   {"commit_id": "job-42", "tables": [{"table": "orders", "payloads": scope["payloads"]}]})
    assert again["tables"][0]["snapshot_id"] == snapshot
    assert len(gateway.catalog().load_table("default.orders").metadata.snapshots) == 1

    # A forged payload is refused, naming the signature.
    forged = bytearray(base64.b64decode(scope["payloads"][0]))
    forged[-1] ^= 1
    try:
        action(scope["coordinator"], "CommitMessages",
               {"commit_id": "job-43", "tables": [{"table": "orders",
                "payloads": [base64.b64encode(bytes(forged)).decode()]}]})
    except pa.ArrowInvalid as e:  # pyarrow's form of gRPC InvalidArgument
        assert "HMAC" in str(e), e
    else:
        raise AssertionError("a forged payload was accepted")
