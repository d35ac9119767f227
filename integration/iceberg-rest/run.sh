#!/usr/bin/env bash
# Runs the flightgw Iceberg backend's conformance suite against Iceberg's own
# REST catalog server (org.apache.iceberg.rest.RESTCatalogServer from the
# iceberg-open-api test fixtures, resolved from Maven Central by pom.xml),
# serving a JDBC catalog on SQLite with local files in a temporary directory.
# It also runs the multi-table commit tests (CommitTables through the
# transactions/commit endpoint). Entry point: make iceberg-rest-check.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
port=${ICEBERG_REST_PORT:-18181}
work=$(mktemp -d)
mkdir -p "$work/warehouse" "$here/target"

mvn -q -B -f "$here/pom.xml" dependency:build-classpath -Dmdep.outputFile="$here/target/classpath.txt"

# RESTCatalogServer reads CATALOG_* variables as catalog properties
# (CATALOG_REST_PORT is rest.port; "__" spells "-" and "_" spells "."). With
# include-credentials it hands its s3.* credentials to clients in each
# table's config, which GetSecurityContext reports.
CATALOG_WAREHOUSE="file://$work/warehouse" \
CATALOG_INCLUDE__CREDENTIALS=true CATALOG_S3_SESSION__TOKEN=fixture-session-token \
CATALOG_URI="jdbc:sqlite:file:$work/catalog.db" \
CATALOG_JDBC_USER=user CATALOG_JDBC_PASSWORD=password \
CATALOG_REST_PORT="$port" \
  java -cp "$(cat "$here/target/classpath.txt")" org.apache.iceberg.rest.RESTCatalogServer \
  >"$work/server.log" 2>&1 &
pid=$!
cleanup() {
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

for _ in $(seq 1 240); do
  if curl -sf "http://127.0.0.1:$port/v1/config" >/dev/null; then break; fi
  if ! kill -0 "$pid" 2>/dev/null; then
    echo "iceberg-rest: the server exited:" >&2
    cat "$work/server.log" >&2
    exit 1
  fi
  sleep 0.5
done
curl -sf "http://127.0.0.1:$port/v1/config" >/dev/null || { echo "iceberg-rest: server not up" >&2; cat "$work/server.log" >&2; exit 1; }

cd "$root"
status=0
FLIGHTGW_ICEBERG_REST_URI="http://127.0.0.1:$port" FLIGHTGW_ICEBERG_REST_WAREHOUSE="$work/warehouse" \
  ${GO:-go} test -count=1 -run '^(TestConformanceREST|TestRESTSecurityContext|TestRESTCommitTables|TestRESTCommitTablesAtomic)$' -v ./catalogs/iceberg || status=$?
if [ "$status" -ne 0 ]; then
  echo "--- server log (tail)" >&2
  tail -50 "$work/server.log" >&2
fi
exit "$status"
