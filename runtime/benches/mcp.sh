#!/usr/bin/env bash
# `lobster mcp` start-up and per-call cost, side by side with spawning
# `lobster run --mode tool` per call (release build; see mcp_bench.py).
#
#   runtime/benches/mcp.sh        # BENCH_RUNS=21 BENCH_CALLS=201 by default
set -euo pipefail
script_dir=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
repo_root=$(cd -- "$script_dir/../.." && pwd)
target_dir=${CARGO_TARGET_DIR:-$repo_root/target}
echo "building lobster (release)" >&2
cargo build --quiet --release -p lobster --manifest-path "$repo_root/Cargo.toml"
python3 "$script_dir/mcp_bench.py" "$target_dir/release/lobster" \
    --runs "${BENCH_RUNS:-21}" --calls "${BENCH_CALLS:-201}"
