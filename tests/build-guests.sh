#!/usr/bin/env sh
# Build the WebAssembly guests the sandbox tests and benchmark load:
#   tests/guests  -> tests/guests/target/wasm32-wasip2/release/*.wasm
#   examples/steps -> examples/steps/target/wasm32-wasip2/release/*.wasm
# Run before `cargo test -p lobster` (tests skip loudly when a .wasm is missing).
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
rustup target add wasm32-wasip2
# Explicit target dirs: the tests look for the .wasm files there, whatever
# CARGO_TARGET_DIR says.
cargo build --release --target wasm32-wasip2 --manifest-path "$root/tests/guests/Cargo.toml" \
  --target-dir "$root/tests/guests/target"
cargo build --release --target wasm32-wasip2 --manifest-path "$root/examples/steps/Cargo.toml" \
  --target-dir "$root/examples/steps/target"
