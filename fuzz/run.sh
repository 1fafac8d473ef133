#!/usr/bin/env bash
# Build the fuzz targets once, then run each for a bounded time from its
# committed seed corpus (fuzz/corpus/<target>/). A crash, panic, timeout or
# out-of-memory fails the script (and CI) and leaves the input in
# fuzz/artifacts/<target>/.
#   bash fuzz/run.sh [SECONDS_PER_TARGET]    (default 45)
#
# Build flags, chosen for CI time on a small machine:
#   -O           optimised: many more executions per second than a debug build.
#   -a           debug assertions on (overflow checks too): more bugs are panics.
#   -s none      no sanitizer. The targets are safe Rust; what they hunt is
#                panics, hangs and runaway memory, which libFuzzer catches
#                without ASan. ASan would instrument all of wasmtime and
#                cranelift (linked in, never run by these targets) and made
#                the build several times slower.
# Measured on the shared 2-core development machine (load ~12 from other
# builds): the first build took 75 min of wall time but 14 min 15 s of CPU
# (user), i.e. about 7-8 min on an idle 2-core runner; later builds reuse
# fuzz/target. Each target then runs SECONDS (4 x 45 s = 3 min), so the fuzz
# part of CI stays around 10 min from cold. 30 s per target ran 1.2 M
# (dsl_parse), 0.5 M (template_render), 5 M (token_decode) and 0.2 M
# (workflow_load) inputs without a crash.
set -euo pipefail
cd "$(dirname "$0")"
secs=${1:-45}

rustup toolchain list | grep -q '^nightly' || rustup toolchain install nightly --profile minimal
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked

flags=(-O -a -s none)
start=$(date +%s)
cargo +nightly fuzz build "${flags[@]}"
echo "fuzz: targets built in $(($(date +%s) - start)) s"

for target in $(cargo +nightly fuzz list); do
    # New inputs go to a scratch corpus; the committed seeds stay as they are.
    scratch=$(mktemp -d)
    echo "fuzz: $target for ${secs} s"
    cargo +nightly fuzz run "${flags[@]}" "$target" "$scratch" "corpus/$target" -- \
        -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1
    rm -rf "$scratch"
done
echo "fuzz: no crash in $(($(date +%s) - start)) s"
