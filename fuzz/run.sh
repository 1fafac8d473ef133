#!/usr/bin/env bash
# Build the fuzz targets once, then run each for a bounded time from its
# committed seed corpus (fuzz/corpus/<target>/). A crash, panic, timeout or
# out-of-memory fails the script (and CI) and leaves the input in
# fuzz/artifacts/<target>/.
#   bash fuzz/run.sh [SECONDS_PER_TARGET]    (default 45; CI: 20)
#   LOBSTER_FUZZ_OPT=0 bash fuzz/run.sh 20   (CI's smoke run: unoptimised)
# A longer session before a release: `bash fuzz/run.sh 900` (an hour for
# the four targets), or `cargo +nightly fuzz run <target>` with cargo-fuzz.
#
# The build is plain cargo on the stable toolchain (CI installs neither
# nightly nor cargo-fuzz, which alone was a 2-3 minute compile) and shares
# the test build: it uses the main workspace's target directory, lock file
# and dev profile (fuzz/Cargo.toml mirrors it), so every dependency the
# tests built is reused as it is. Only lobster and the targets are compiled
# again: optimised (opt-level 3, debug assertions and overflow checks on, as
# `cargo fuzz build -O -a`) and instrumented with libFuzzer's coverage
# counters and comparison tracing, the flags `cargo fuzz build -s none`
# passes; fuzz/rustc-wrapper.sh adds them to those crates alone. No
# sanitizer: the targets are safe Rust, and what they hunt is panics, hangs
# and runaway memory, which libFuzzer catches itself.
#
# What that gives up: coverage feedback and optimisation inside the
# dependencies (serde_json, the YAML parser), which cargo-fuzz's default
# build instruments too.
#
# LOBSTER_FUZZ_OPT (default 3) is the opt-level of lobster and the targets.
# CI's 20-second smoke run uses 0: measured 2026-12-07 on a 2-core VM after
# a test build, lobster's fuzz build took 49 s at opt-level 0, 150 s at 1
# (with libfuzzer-sys) and 220 s at 3 (CI's log), and 10 s of fuzzing ran
# 335,000 dsl_parse and 37,000 workflow_load inputs at 0 against 400,000
# and 95,000 at 3. A longer session should keep 3.
#
# Cost on top of a finished `cargo test --workspace` (measured 2026-12-02 on
# the shared 2-core machine at load 10-14): the build compiles libfuzzer-sys
# and lobster (optimised, instrumented) and links the four targets, 220-250 s of
# CPU (the old nightly cargo-fuzz build: ~15 min of wall time in CI); then
# 4 x 21 s of fuzzing, one core each (20 s: 0.7 M dsl_parse, 0.15 M
# workflow_load, 0.23 M template_render, 1.4 M token_decode inputs). The
# fuzzing binaries and the instrumented lobster sit in target/debug beside
# the test build; the copy of the lock file in fuzz/Cargo.lock is ignored.
set -euo pipefail
cd "$(dirname "$0")"
secs=${1:-45}
opt=${LOBSTER_FUZZ_OPT:-3}
case "$opt" in
    0|1|2|3) ;;
    *) echo "fuzz/run.sh: LOBSTER_FUZZ_OPT must be 0, 1, 2 or 3 (an opt-level), not '$opt'" >&2; exit 2 ;;
esac
root=$(cd .. && pwd)

export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$root/target}
# The main workspace's versions, so the dependencies match the test build
# (cargo adds libfuzzer-sys to this copy; it is not committed).
cp "$root/Cargo.lock" Cargo.lock
export LOBSTER_FUZZ_FLAGS="-Cpasses=sancov-module
 -Cllvm-args=-sanitizer-coverage-level=4
 -Cllvm-args=-sanitizer-coverage-inline-8bit-counters
 -Cllvm-args=-sanitizer-coverage-pc-table
 -Cllvm-args=-sanitizer-coverage-trace-compares
 -Cllvm-args=-simplifycfg-branch-fold-threshold=0
 -Cllvm-args=-sanitizer-coverage-stack-depth
 --cfg fuzzing"
export RUSTC_WRAPPER="$PWD/rustc-wrapper.sh"
# The settings below make lobster's build for fuzzing differ from the
# tests' (another artifact, never mixed up with an uninstrumented one).
start=$(date +%s)
CARGO_INCREMENTAL=0 cargo build --bins \
    --config "profile.dev.package.lobster.opt-level=$opt" \
    --config 'profile.dev.package.lobster.codegen-units=16' \
    --config "profile.dev.package.lobster-fuzz.opt-level=$opt"
echo "fuzz: targets built (opt-level $opt) in $(($(date +%s) - start)) s"
bin_dir=$CARGO_TARGET_DIR/debug

targets=$(sed -n '/^\[\[bin\]\]/,/^$/s/^name = "\(.*\)"/\1/p' Cargo.toml)
[ -n "$targets" ] || { echo "fuzz: no [[bin]] targets in fuzz/Cargo.toml" >&2; exit 1; }
for target in $targets; do
    # New inputs go to a scratch corpus; the committed seeds stay as they are.
    scratch=$(mktemp -d)
    mkdir -p "artifacts/$target"
    echo "fuzz: $target for ${secs} s"
    "$bin_dir/$target" -artifact_prefix="artifacts/$target/" "$scratch" "corpus/$target" \
        -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1
    rm -rf "$scratch"
done
