#!/usr/bin/env bash
# Runs the StarRocks backend's tests against the StarRocks stand-in:
# installs MariaDB if missing (Debian package mariadb-server), starts a
# throwaway mariadbd on a loopback port in a temporary directory, builds and
# starts the stand-in (integration/starrocks-standin) on it, runs the tests
# with FLIGHTGW_STARROCKS_* set, and stops both. Entry point:
# make test-starrocks.
#
#   bash integration/starrocks-standin/run.sh            the default tests (Go; with mvn, StarRocks'
#                                                        Stream Load SDK (integration/starrocks-sdk);
#                                                        with PYTHON, FLIGHTGW_BIN and FLIGHTGW_SEED
#                                                        set, also the Python ADBC and JDBC ones)
#   bash integration/starrocks-standin/run.sh CMD ARGS   CMD with the environment set
#
# To run the same tests against a real cluster instead, set the variables
# yourself (docs/starrocks.md) and run the go test commands below.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
GO=${GO:-go}

if ! command -v mariadbd >/dev/null 2>&1 && ! command -v mysqld >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "starrocks-standin: installing mariadb-server from Debian" >&2
    apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mariadb-server >/dev/null
  fi
fi
mysqld=$(command -v mariadbd || command -v mysqld || true)
installdb=$(command -v mariadb-install-db || command -v mysql_install_db || true)
if [ -z "$mysqld" ] || [ -z "$installdb" ]; then
  echo "starrocks-standin: SKIPPED, no MariaDB server (apt-get install mariadb-server)" >&2
  exit 0
fi

work=$(mktemp -d)
standin_pid=
mysqld_pid=
cleanup() {
  [ -n "$standin_pid" ] && kill "$standin_pid" 2>/dev/null && wait "$standin_pid" 2>/dev/null || true
  [ -n "$mysqld_pid" ] && kill "$mysqld_pid" 2>/dev/null && wait "$mysqld_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null || echo 13306)
"$installdb" --no-defaults --user=root --datadir="$work/data" --auth-root-authentication-method=normal \
  --skip-test-db >"$work/install.log" 2>&1 || { cat "$work/install.log" >&2; exit 1; }
"$mysqld" --no-defaults --user=root --datadir="$work/data" --socket="$work/mysql.sock" \
  --port="$port" --bind-address=127.0.0.1 --skip-grant-tables --skip-name-resolve --character-set-server=utf8mb4 --collation-server=utf8mb4_bin \
  --pid-file="$work/mysqld.pid" --log-error="$work/mysqld.err" &
mysqld_pid=$!
for _ in $(seq 1 100); do
  [ -S "$work/mysql.sock" ] && break
  sleep 0.2
done
[ -S "$work/mysql.sock" ] || { echo "starrocks-standin: mariadbd did not start" >&2; cat "$work/mysqld.err" >&2; exit 1; }

cd "$root"
$GO build -o "$work/standin" ./integration/starrocks-standin
password=standin-$RANDOM$RANDOM
"$work/standin" -mariadb "root@tcp(127.0.0.1:$port)/" -user root -password "$password" >"$work/addrs" 2>"$work/standin.log" &
standin_pid=$!
for _ in $(seq 1 100); do
  [ -s "$work/addrs" ] && break
  sleep 0.1
done
[ -s "$work/addrs" ] || { echo "starrocks-standin: the stand-in did not start" >&2; cat "$work/standin.log" >&2; exit 1; }
addrs=$(head -1 "$work/addrs")
field() { python3 -c 'import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]])' "$addrs" "$1"; }
export FLIGHTGW_STARROCKS_FE=$(field fe)
export FLIGHTGW_STARROCKS_MYSQL=$(field mysql)
export FLIGHTGW_STARROCKS_ADMIN=$FLIGHTGW_STARROCKS_FE
export FLIGHTGW_STARROCKS_USER=root
export FLIGHTGW_STARROCKS_PASSWORD=$password
echo "starrocks-standin: FE $FLIGHTGW_STARROCKS_FE, MySQL $FLIGHTGW_STARROCKS_MYSQL (MariaDB on 127.0.0.1:$port)" >&2

status=0
if [ $# -gt 0 ]; then
  "$@" || status=$?
else
  $GO test -count=1 ./catalogs/starrocks/ || status=$?
  $GO test -count=1 -run 'StarRocks' ./integration/ || status=$?
  # StarRocks' own Stream Load SDK (from Maven Central) runs its
  # transaction flow against the stand-in.
  if command -v mvn >/dev/null; then
    mvn -q -B -f integration/starrocks-sdk/pom.xml test || status=$?
  fi
  # The Python ADBC and JDBC tests, when make test-starrocks built what
  # they run (PYTHON: the venv's python; FLIGHTGW_BIN, FLIGHTGW_SEED).
  if [ -n "${PYTHON:-}" ] && [ -x "$PYTHON" ] && [ -n "${FLIGHTGW_BIN:-}" ]; then
    "$PYTHON" -m pytest -q integration/python/test_starrocks.py || status=$?
  fi
  if [ -n "${FLIGHTGW_SEED:-}" ] && [ -n "${FLIGHTGW_BIN:-}" ] && command -v mvn >/dev/null; then
    mvn -q -B -f integration/jdbc/pom.xml test -Dtest=StarRocksJdbcTest || status=$?
  fi
fi
if [ $status -ne 0 ]; then
  echo "--- stand-in log (last 40 lines)" >&2
  tail -40 "$work/standin.log" >&2
fi
exit $status
