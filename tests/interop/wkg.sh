#!/usr/bin/env bash
# Interop with the WebAssembly ecosystem's own registry client: wkg 0.16.1
# (bytecodealliance/wasm-pkg-tools), through a registry on loopback
# (tests/registry.sh: Debian's docker-registry).
#
#   1. lobster step publish → wkg oci pull: the bytes wkg writes are the
#      component lobster published;
#   2. wkg oci push → lobster step pull: the bytes lobster writes are the
#      component wkg pushed; and lobster runs it by digest.
#
# wkg is built once into target/interop-tools (cargo install --locked,
# about 8 minutes on 2 cores; WKG=/path/to/wkg uses another). Not in
# .ci/run: the build does not fit CI's budget. Usage:
#   bash tests/interop/wkg.sh            # builds lobster (debug) and the example steps if needed
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"

tools="$root/target/interop-tools"
wkg="${WKG:-$tools/bin/wkg}"
if [ ! -x "$wkg" ]; then
  echo "building wkg 0.16.1 into $tools (once; about 8 minutes)" >&2
  cargo install wkg --version 0.16.1 --locked --root "$tools" >&2
fi
"$wkg" --version >&2
cargo build -q -p lobster
lobster="$root/target/debug/lobster"
steps="$root/examples/steps/target/wasm32-wasip2/release"
[ -f "$steps/greet.wasm" ] || bash tests/build-guests.sh >/dev/null

work=$(mktemp -d)
reg="$work/registry"
cleanup() { bash "$root/tests/registry.sh" stop "$reg" || true; rm -rf "$work"; }
trap cleanup EXIT
addr=$(bash "$root/tests/registry.sh" start "$reg")
export LOBSTER_STATE_DIR="$work/state"
printf 'insecure_registries = ["%s"]\n' "$addr" >"$work/policy.toml"
policy="$work/policy.toml"
cd "$work"

fail() { echo "FAIL: $*" >&2; exit 1; }

# 1. lobster publishes, wkg pulls.
"$lobster" step publish "$steps/greet.wasm" "oci://$addr/interop/greet:0.1" --policy "$policy" | tee publish.txt
"$wkg" oci pull --insecure "$addr" "$addr/interop/greet:0.1" -o from-wkg.wasm
cmp "$steps/greet.wasm" from-wkg.wasm || fail "wkg pulled other bytes than lobster published"
echo "ok: lobster step publish -> wkg oci pull: identical bytes ($(wc -c <from-wkg.wasm) bytes)"

# 2. wkg pushes, lobster pulls (and runs it by digest).
"$wkg" oci push --insecure "$addr" "$addr/interop/list:0.2" "$steps/inbox_list.wasm"
"$lobster" step pull "oci://$addr/interop/list:0.2" -o from-lobster.wasm --policy "$policy" | tee pull.txt
cmp "$steps/inbox_list.wasm" from-lobster.wasm || fail "lobster pulled other bytes than wkg pushed"
echo "ok: wkg oci push -> lobster step pull: identical bytes ($(wc -c <from-lobster.wasm) bytes)"
pinned=$(grep -o "oci://[^ ]*@sha256:[0-9a-f]*" pull.txt | head -1)
mkdir -p mail && cp "$root"/examples/mail/* mail/
"$lobster" run --mode tool --policy "$policy" --allow-read mail "$pinned | head --n 1" >run.json \
  || { cat run.json; fail "lobster could not run what wkg pushed"; }
grep -q '"ok": true' run.json || { cat run.json; fail "the run did not succeed"; }
echo "ok: lobster runs the wkg-pushed component by digest ($pinned)"
