#!/usr/bin/env sh
# Build the WebAssembly guests the sandbox tests and benchmark load:
#   tests/guests  -> tests/guests/target/wasm32-wasip2/release/*.wasm
#   examples/steps -> examples/steps/target/wasm32-wasip2/release/*.wasm
# Run before `cargo test -p lobster` (tests skip loudly when a .wasm is missing).
#
# Both workspaces build in the examples' target directory, the one the demo
# and the README build in: the same dependency versions, so each build
# reuses the other's (about 35 s less on a 2-core machine). That directory's
# release/ is a step path, so the test guests' components are moved out of
# it to tests/guests/target/wasm32-wasip2/release/ as soon as they are built
# (cargo puts a fresh component back without compiling it, so a rebuild
# costs nothing).
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
rustup target add wasm32-wasip2
shared="$root/examples/steps/target"
out="$root/tests/guests/target/wasm32-wasip2/release"
mkdir -p "$shared" "$out"

list="$shared/test-guests.json"
cargo build --release --target wasm32-wasip2 --manifest-path "$root/tests/guests/Cargo.toml" \
  --target-dir "$shared" --message-format=json-render-diagnostics >"$list"
# The components cargo reports for this build (not whatever else is there).
wasm=$(grep -o '"[^"]*/wasm32-wasip2/release/[^"/]*\.wasm"' "$list" | tr -d '"' | sort -u)
rm -f "$list"
if [ -z "$wasm" ]; then
  echo "build-guests.sh: cargo reported no .wasm from tests/guests" >&2
  exit 1
fi
echo "$wasm" | while IFS= read -r f; do
  # Each is a hard link to cargo's own copy under deps/, and so may be the
  # one already in $out: mv would refuse to move a file onto itself.
  rm -f "$out/${f##*/}"
  mv "$f" "$out/"
done

cargo build --release --target wasm32-wasip2 --manifest-path "$root/examples/steps/Cargo.toml" \
  --target-dir "$shared"
