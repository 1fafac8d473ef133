#!/usr/bin/env sh
# Build the WebAssembly guests the sandbox tests and benchmark load:
#   tests/guests  -> tests/guests/target/wasm32-wasip2/release/*.wasm
#   examples/steps -> examples/steps/target/wasm32-wasip2/release/*.wasm
# Run before `cargo test -p lobster` (tests skip loudly when a .wasm is missing).
#
# Both workspaces build in one target directory, target/guests (the same
# dependency versions, so the second build reuses the first one's: about
# 35 s less on a 2-core machine), and each workspace's components are then
# copied to its own target/wasm32-wasip2/release/, where the tests, the
# README and the benchmarks look for them (the examples' directory is a step
# path: only the examples go there). The Rust "first step" test builds in
# target/guests too, with these dependencies already compiled.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
rustup target add wasm32-wasip2
shared="$root/target/guests"

# build WORKSPACE: build it in $shared, then copy the .wasm files cargo
# reports as this build's artefacts (not whatever else $shared holds).
build() {
  out="$root/$1/target/wasm32-wasip2/release"
  list="$shared/$(echo "$1" | tr / -).artifacts"
  mkdir -p "$shared" "$out"
  cargo build --release --target wasm32-wasip2 --manifest-path "$root/$1/Cargo.toml" \
    --target-dir "$shared" --message-format=json-render-diagnostics >"$list.json"
  grep -o '"[^"]*/wasm32-wasip2/release/[^"/]*\.wasm"' "$list.json" | tr -d '"' | sort -u >"$list"
  if [ ! -s "$list" ]; then
    echo "build-guests.sh: cargo reported no .wasm from $1" >&2
    exit 1
  fi
  while IFS= read -r wasm; do
    cp -p "$wasm" "$out/"
  done <"$list"
}
build tests/guests
build examples/steps
