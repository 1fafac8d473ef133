#!/usr/bin/env bash
# What the run journal costs lobster serve (issue 25), journal on vs off
# (LOBSTER_JOURNAL=off, a switch for the bench only), in paired bursts:
# both servers run at once, idle but for the burst aimed at one of them, so
# each "on" burst has an "off" burst seconds away. On a shared VM whose
# speed drifts by 10-20 % over minutes, journal.sh's rounds (two minutes
# per side) compare different machines; a pair of short bursts compares
# the same one. Reports the median of the bursts and the pairs' ratios
# (median, and mean ± its standard error).
#
#   BENCH_BIN_DIR=DIR      lobster and lobster-load (release) to measure
#   JOURNAL_PAIRS=20       pairs per case
#   JOURNAL_PAIR_SECONDS=3 seconds per burst
#   JOURNAL_PAIR_CLIENTS=16
#   JOURNAL_PAIR_CASES="a b"
# Prints a Markdown table on stdout; progress on stderr. Needs python3 and
# the example steps (tests/build-guests.sh).
set -euo pipefail

script_dir=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
repo_root=$(cd -- "$script_dir/../.." && pwd)
die() { printf 'journal_pairs.sh: %s\n' "$*" >&2; exit 1; }
[[ -n ${BENCH_BIN_DIR:-} ]] || die "set BENCH_BIN_DIR to a directory with release lobster and lobster-load"
[[ -x $BENCH_BIN_DIR/lobster && -x $BENCH_BIN_DIR/lobster-load ]] || die "no lobster and lobster-load in $BENCH_BIN_DIR"
steps_out=$repo_root/examples/steps/target/wasm32-wasip2/release
[[ -f $steps_out/inbox_categorize.wasm && -f $steps_out/email_triage.wasm ]] ||
    die "no example steps in $steps_out: run tests/build-guests.sh"

work=$(mktemp -d "${TMPDIR:-/tmp}/lobster-pairs.XXXXXX")
trap 'rm -rf -- "$work"' EXIT
# shellcheck source=runtime/benches/bench5.sh
. "$script_dir/bench5.sh"
bench5_setup "$work" "$steps_out"
bench_cases
pairs=${JOURNAL_PAIRS:-20} secs=${JOURNAL_PAIR_SECONDS:-3} clients=${JOURNAL_PAIR_CLIENTS:-16}

echo "| serve, $clients clients, $pairs pairs of ${secs} s bursts | on (median) | off (median) | pairs: median | pairs: mean ± s.e. |"
echo "|---|---:|---:|---:|---:|"
for case in ${JOURNAL_PAIR_CASES:-a b}; do
    body=$([[ $case == a ]] && echo "$body_a" || echo "$body_b")
    rm -rf -- "$work/state-on" "$work/state-off"
    python3 "$script_dir/journal_pairs.py" "$BENCH_BIN_DIR" "$work" "$case" "$body" "$pairs" "$secs" "$clients"
done
