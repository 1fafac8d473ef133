#!/usr/bin/env bash
# A throwaway OCI registry on loopback for the registry tests: Debian's
# docker-registry (the CNCF distribution server, 2.8), filesystem storage,
# a free port chosen by the kernel, ready in well under a second.
#
#   bash tests/registry.sh start DIR         # plain http; prints 127.0.0.1:PORT
#   bash tests/registry.sh start-tls DIR     # https with a throwaway CA (DIR/ca.pem)
#                                            # and htpasswd basic auth: user "lobster",
#                                            # password in DIR/password; prints 127.0.0.1:PORT
#   bash tests/registry.sh stop DIR          # stops it and removes DIR
#
# Installs docker-registry (and apache2-utils, openssl for the TLS case)
# from Debian when missing (root only). Storage is DIR/data: a test may
# alter blobs there (DIR/data/docker/registry/v2/blobs/sha256/xx/<hex>/data).
set -euo pipefail

need() {
  local missing=()
  command -v docker-registry >/dev/null || missing+=(docker-registry)
  if [ "${1:-}" = tls ]; then
    command -v htpasswd >/dev/null || missing+=(apache2-utils)
    command -v openssl >/dev/null || missing+=(openssl)
  fi
  if [ ${#missing[@]} -gt 0 ]; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
}

start() {
  local dir=$1 tls=${2:-}
  rm -rf "$dir"
  mkdir -p "$dir/data"
  {
    echo "version: 0.1"
    echo "log: {level: info}"
    echo "storage:"
    echo "  filesystem: {rootdirectory: $dir/data}"
    echo "  delete: {enabled: true}"
    echo "http:"
    echo "  addr: 127.0.0.1:0"
    echo "  secret: lobster-test"
  } >"$dir/config.yml"
  if [ "$tls" = tls ]; then
    (
      cd "$dir"
      openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
        -keyout ca.key -out ca.pem -days 2 -subj /CN=lobster-test-ca 2>/dev/null
      openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
        -keyout key.pem -out req.csr -subj /CN=127.0.0.1 2>/dev/null
      printf 'subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' >ext.cnf
      openssl x509 -req -in req.csr -CA ca.pem -CAkey ca.key -CAcreateserial \
        -out cert.pem -days 2 -extfile ext.cnf 2>/dev/null
      head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n' >password
      htpasswd -Bbn lobster "$(cat password)" >htpasswd 2>/dev/null
    )
    {
      echo "  tls: {certificate: $dir/cert.pem, key: $dir/key.pem}"
      echo "auth:"
      echo "  htpasswd: {realm: lobster-test, path: $dir/htpasswd}"
    } >>"$dir/config.yml"
  fi
  # The log exists before the server starts: the shell opens a background
  # job's redirection in the child, so the loop below could otherwise read
  # it before it is there (and `set -e` end the script: seen under load).
  : >"$dir/log"
  docker-registry serve "$dir/config.yml" >>"$dir/log" 2>&1 &
  echo $! >"$dir/pid"
  for _ in $(seq 1 200); do
    local addr
    addr=$(sed -n 's/.*msg="listening on \([0-9.:]*\)[",].*/\1/p' "$dir/log" | head -1)
    if [ -n "$addr" ]; then
      echo "$addr"
      return 0
    fi
    if ! kill -0 "$(cat "$dir/pid")" 2>/dev/null; then
      cat "$dir/log" >&2
      return 1
    fi
    sleep 0.02
  done
  echo "docker-registry did not start; see $dir/log" >&2
  return 1
}

case "${1:-}" in
  start)
    need
    start "$2"
    ;;
  start-tls)
    need tls
    start "$2" tls
    ;;
  stop)
    if [ -f "$2/pid" ]; then
      kill "$(cat "$2/pid")" 2>/dev/null || true
    fi
    [ -n "${LOBSTER_REGISTRY_KEEP:-}" ] || rm -rf "$2"
    ;;
  *)
    echo "usage: bash tests/registry.sh start|start-tls|stop DIR" >&2
    exit 2
    ;;
esac
