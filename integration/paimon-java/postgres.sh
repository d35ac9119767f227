#!/usr/bin/env bash
# Starts a throwaway PostgreSQL cluster on 127.0.0.1 (as catalogs/iceberg/testdata/postgres.sh
# does for the Iceberg SQL catalog) and runs, on it, the Paimon backend's conformance suite
# with the JDBC metastore (TestConformanceJDBCPostgres), then make paimon-jdbc-check with
# Paimon Java's JdbcCatalog on the same database. Entry point: make
# paimon-jdbc-postgres-check. Needs PostgreSQL's server binaries (initdb, pg_ctl); as root
# it runs them as the postgres user.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
port=${PAIMON_PG_PORT:-15433}
pgbin=${PGBIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)}
if [ ! -x "$pgbin/initdb" ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "paimon-jdbc-postgres: installing postgresql from Debian" >&2
  apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
  pgbin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
fi
if [ ! -x "$pgbin/initdb" ]; then
  echo "paimon-jdbc-postgres: SKIPPED, no PostgreSQL server binaries (apt-get install postgresql, or set PGBIN)" >&2
  exit 0
fi
work=$(mktemp -d)
as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
[ "$(id -u)" = 0 ] && chown postgres "$work"
cleanup() {
  as_pg "$pgbin/pg_ctl" -D "$work/data" -m immediate stop >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
as_pg "$pgbin/initdb" -D "$work/data" -A trust -U postgres >/dev/null
as_pg "$pgbin/pg_ctl" -D "$work/data" -l "$work/server.log" -w \
  -o "-p $port -k $work -c listen_addresses=127.0.0.1" start >/dev/null
cd "$root"
FLIGHTGW_PAIMON_PG_URI="postgres://postgres@127.0.0.1:$port/postgres?sslmode=disable" \
  ${GO:-go} test -count=1 -run '^TestConformanceJDBCPostgres$' -v ./catalogs/paimon
# A database of its own, so that Java and the gateway start from empty Paimon tables.
as_pg "$pgbin/psql" -h 127.0.0.1 -p "$port" -U postgres -q -c 'CREATE DATABASE paimon_interop'
${MAKE:-make} --no-print-directory paimon-jdbc-check \
  PAIMON_JDBC_URI="jdbc:postgresql://127.0.0.1:$port/paimon_interop?user=postgres&sslmode=disable"
