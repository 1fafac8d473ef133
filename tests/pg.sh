#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for the store tests: unix socket only (no TCP
# port, so parallel jobs cannot collide), fsync off, trust auth, ~2 s to start.
#
#   bash tests/pg.sh install # installs postgresql from Debian if missing (nothing else)
#   bash tests/pg.sh start   # installs postgresql from Debian if missing, starts, prints the URL
#   bash tests/pg.sh url     # prints the URL of the running cluster
#   bash tests/pg.sh stop    # stops it and removes its directory
#   bash tests/pg.sh kill    # stops it at once (as a crash would), keeping its data;
#                            # `start` then restarts it on the same data
#
# The cluster lives in $LOBSTER_PG_DIR (default /tmp/lobster-pg-<uid>); the
# URL is postgresql://postgres@/postgres?host=<dir>. Runs as root (CI, the dev
# machines) and runs the server as the `postgres` user via runuser.
set -euo pipefail
DIR="${LOBSTER_PG_DIR:-/tmp/lobster-pg-$(id -u)}"

pg_bin() {
  local v
  v=$(ls /usr/lib/postgresql 2>/dev/null | sort -V | tail -1 || true)
  if [ -n "$v" ] && [ -x "/usr/lib/postgresql/$v/bin/initdb" ]; then
    echo "/usr/lib/postgresql/$v/bin"
  fi
}

install_pg() {
  # Skip the default cluster (and its systemd service) Debian would create.
  mkdir -p /etc/postgresql-common/createcluster.d
  echo "create_main_cluster = false" > /etc/postgresql-common/createcluster.d/lobster-no-main.conf
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
}

url() { echo "postgresql://postgres@/postgres?host=$DIR"; }

as_pg() { runuser -u postgres -- "$@"; }

case "${1:-}" in
  install)
    [ -n "$(pg_bin)" ] || install_pg
    ;;
  start)
    [ -n "$(pg_bin)" ] || install_pg
    BIN=$(pg_bin)
    if [ -f "$DIR/postmaster.pid" ] && as_pg "$BIN/pg_ctl" -D "$DIR" status >/dev/null 2>&1; then
      url; exit 0
    fi
    if [ ! -f "$DIR/PG_VERSION" ]; then
      rm -rf "$DIR"
      mkdir -p "$DIR"
      chown postgres "$DIR"
      chmod 700 "$DIR"
      as_pg "$BIN/initdb" -D "$DIR" -U postgres -A trust -E UTF8 --locale=C -N >/dev/null
    fi
    as_pg "$BIN/pg_ctl" -D "$DIR" -w -l "$DIR/server.log" start \
      -o "-k $DIR -c listen_addresses='' -c fsync=off -c max_connections=200" >/dev/null
    url
    ;;
  url)
    url
    ;;
  kill)
    BIN=$(pg_bin)
    as_pg "$BIN/pg_ctl" -D "$DIR" -m immediate stop >/dev/null
    ;;
  stop)
    BIN=$(pg_bin)
    if [ -n "$BIN" ] && [ -d "$DIR" ]; then
      as_pg "$BIN/pg_ctl" -D "$DIR" -m immediate stop >/dev/null 2>&1 || true
    fi
    rm -rf "$DIR"
    ;;
  *)
    echo "usage: bash tests/pg.sh install|start|stop|kill|url" >&2
    exit 2
    ;;
esac
