#!/usr/bin/env bash
# Runs the Iceberg backend's conformance suite (and the metadata cache's PostgreSQL
# test) with the SQL catalog on a throwaway
# PostgreSQL (integration/postgres/with-postgres.sh; local files for data). Entry point:
# make iceberg-postgres-check.
set -euo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
exec bash "$root/integration/postgres/with-postgres.sh" iceberg-postgres "${ICEBERG_PG_PORT:-15432}" \
  bash -c 'FLIGHTGW_ICEBERG_PG_URI="$PG_URI" ${GO:-go} test -count=1 -run "^(TestConformancePostgres|TestMetadataCachePostgres)$" -v ./catalogs/iceberg'
