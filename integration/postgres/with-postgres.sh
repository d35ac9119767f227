#!/usr/bin/env bash
# with-postgres.sh NAME PORT COMMAND...: starts a throwaway PostgreSQL cluster on
# 127.0.0.1:PORT, runs COMMAND from the repository root with PG_URI
# (postgres://postgres@127.0.0.1:PORT/postgres?sslmode=disable), PG_PORT and PG_PSQL
# (psql on that server) in its environment, and removes the cluster however COMMAND
# ends, exiting with its status. Needs PostgreSQL's server binaries (initdb, pg_ctl):
# as root with apt-get it installs them from Debian (make test installs what it needs);
# without them it says so, naming NAME, and exits 0 (the check is skipped). As root it
# runs the server as the postgres user. Used by catalogs/iceberg/testdata/postgres.sh
# and integration/paimon-java/postgres.sh.
set -euo pipefail
name=$1 port=$2
shift 2
root=$(cd "$(dirname "$0")/../.." && pwd)
pgbin=${PGBIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)}
if [ ! -x "$pgbin/initdb" ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "$name: installing postgresql from Debian" >&2
  apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
  pgbin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
fi
if [ ! -x "$pgbin/initdb" ]; then
  echo "$name: SKIPPED, no PostgreSQL server binaries (apt-get install postgresql, or set PGBIN)" >&2
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
export PG_PORT=$port
export PG_URI="postgres://postgres@127.0.0.1:$port/postgres?sslmode=disable"
export PG_PSQL="$pgbin/psql -h 127.0.0.1 -p $port -U postgres"
"$@"
