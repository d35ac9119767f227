"""Reads Iceberg tables by their metadata files with pyiceberg (StaticTable). Run by
TestOtherReadersReadTableOptions:
    python pyiceberg_static.py <metadata.json>...
Prints one JSON array, for each table the sorted ids of its rows, or {"error": ...}."""
import json
import sys

from pyiceberg.table import StaticTable

out = []
for loc in sys.argv[1:]:
    try:
        out.append(sorted(StaticTable.from_metadata(loc).scan().to_arrow().column("id").to_pylist()))
    except Exception as e:  # the reader's own refusal, reported as such
        out.append({"error": f"{type(e).__name__}: {e}"})
print(json.dumps(out))
