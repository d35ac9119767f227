#!/usr/bin/env python3
"""Has Delta Spark read, and append to, copies of the Spark fixtures after the gateway wrote to them.

A one-off check beside make_fixtures.py (not part of make test: Spark is not at test time).
Usage, from the repository root with the venv and jars of README.md:

    TZ=UTC .venv-spark/bin/python integration/delta/spark/read_back.py <warehouse>/<namespace> <copies>

For each table directory under the namespace (copies of catalogs/delta/testdata/spark that the
gateway appended the fixture's rows to, so that each row is there <copies> times), Spark reads
the latest version and must see every row of expected.json exactly <copies> times; then
Spark appends the fixture's rows once more (its own commit after the gateway's, through its
conflict checks, row tracking and in-commit timestamps) and must read <copies> + 1 of each.
Prints one line per table and exits non-zero on the first mismatch.
"""
import json
import os
import sys
from collections import Counter

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))
from make_fixtures import session  # noqa: E402
from render import render  # noqa: E402


def rows(spark, path):
    df = spark.read.format("delta").load(path)
    cols = df.columns
    return cols, [json.dumps([render(d[c]) for c in cols]) for d in (x.asDict(recursive=True) for x in df.collect())]


def main():
    ns, copies = sys.argv[1], int(sys.argv[2])
    spark = session()
    bad = 0
    for name in sorted(os.listdir(ns)):
        path = os.path.join(ns, name)
        if not os.path.isdir(os.path.join(path, "_delta_log")):
            continue
        with open(os.path.join(path, "expected.json")) as f:
            want = json.load(f)
        base = Counter(json.dumps(r) for r in want["rows"])
        for n in (copies, copies + 1):
            cols, got = rows(spark, path)
            ok = cols == want["columns"] and Counter(got) == Counter({k: v * n for k, v in base.items()})
            print(f"{name}: Spark reads {len(got)} rows, want {sum(base.values()) * n}: {'ok' if ok else 'MISMATCH'}")
            if not ok:
                bad += 1
                break
            if n == copies:
                # The fixture's rows are distinct: one copy of each is the table deduplicated
                # (time travel to Spark's version would fail once the log below the gateway's
                # checkpoint is gone).
                spark.read.format("delta").load(path).dropDuplicates() \
                    .write.format("delta").mode("append").save(path)
    spark.stop()
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
