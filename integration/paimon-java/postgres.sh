#!/usr/bin/env bash
# On a throwaway PostgreSQL (integration/postgres/with-postgres.sh): the Paimon backend's
# conformance suite with the JDBC metastore (TestConformanceJDBCPostgres), then make
# paimon-jdbc-check with Paimon Java's JdbcCatalog on a database of its own, so that Java
# and the gateway start from empty Paimon tables. Entry point: make
# paimon-jdbc-postgres-check.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
exec bash "$root/integration/postgres/with-postgres.sh" paimon-jdbc-postgres "${PAIMON_PG_PORT:-15433}" bash -c '
  set -euo pipefail
  FLIGHTGW_PAIMON_PG_URI="$PG_URI" ${GO:-go} test -count=1 -run "^TestConformanceJDBCPostgres$" -v ./catalogs/paimon
  $PG_PSQL -q -c "CREATE DATABASE paimon_interop"
  ${MAKE:-make} --no-print-directory paimon-jdbc-check \
    PAIMON_JDBC_URI="jdbc:postgresql://127.0.0.1:$PG_PORT/paimon_interop?user=postgres&sslmode=disable"'
