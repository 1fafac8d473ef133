#!/bin/sh
# RUSTC_WRAPPER for fuzz/run.sh: libFuzzer's instrumentation
# ($LOBSTER_FUZZ_FLAGS) for lobster's library and the fuzz targets only;
# every other crate compiles exactly as for the tests, so cargo reuses
# their builds. (A wrapper is not part of cargo's fingerprints.)
rustc=$1
shift
instrument=
prev=
for arg in "$@"; do
    case "$prev:$arg" in
        --crate-name:lobster) instrument=1 ;;
        *:*fuzz_targets/*.rs) instrument=1 ;;
    esac
    prev=$arg
done
if [ -n "$instrument" ]; then
    # shellcheck disable=SC2086 # one flag per word
    exec "$rustc" "$@" $LOBSTER_FUZZ_FLAGS
fi
exec "$rustc" "$@"
