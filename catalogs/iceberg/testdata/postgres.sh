#!/usr/bin/env bash
# Starts a throwaway PostgreSQL cluster on 127.0.0.1 and runs the Iceberg
# backend's conformance suite with the SQL catalog on it (local files for
# data). Entry point: make iceberg-postgres-check. Needs PostgreSQL's server
# binaries (initdb, pg_ctl); as root it runs them as the postgres user.
set -euo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
port=${ICEBERG_PG_PORT:-15432}
pgbin=${PGBIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)}
if [ ! -x "$pgbin/initdb" ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  # make test installs what it needs: PostgreSQL from Debian.
  echo "iceberg-postgres: installing postgresql from Debian" >&2
  apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
  pgbin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
fi
if [ ! -x "$pgbin/initdb" ]; then
  echo "iceberg-postgres: SKIPPED, no PostgreSQL server binaries (apt-get install postgresql, or set PGBIN)" >&2
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
FLIGHTGW_ICEBERG_PG_URI="postgres://postgres@127.0.0.1:$port/postgres?sslmode=disable" \
  ${GO:-go} test -count=1 -run '^TestConformancePostgres$' -v ./catalogs/iceberg
