# shellcheck shell=bash
# The set-up the serve benchmarks share (serve.sh, serve_first.sh,
# journal_instr.sh, journal_pairs.sh), sourced by each: one tenant "bench"
# (token from LOBSTER_BENCH_TOKEN) whose catalog holds bench5, five
# sandboxed wasm steps (the example steps inbox.categorize and
# email.triage) on three inline messages.
#
#   bench5_setup WORK STEPS_OUT
# writes WORK/workflows/bench5.lobster, copies the two steps from STEPS_OUT
# into WORK/steps/, and writes WORK/serve.toml with its state in WORK/state
# (created). The caller sets LOBSTER_BENCH_TOKEN (bench_cases below does)
# and starts the server.

bench5_setup() {
    local work=$1 steps_out=$2
    mkdir -p "$work/workflows" "$work/steps" "$work/state"
    cp -- "$steps_out/inbox_categorize.wasm" "$steps_out/email_triage.wasm" "$work/steps/"
    # Five wasm steps, each a one-stage pipeline resolved on the step path.
    cat >"$work/workflows/bench5.lobster" <<'YAML'
name: bench5
description: Five sandboxed wasm steps on three inline messages (serve benchmark).
permissions:
  host_exec: false
steps:
  - id: s1
    pipeline: inbox.categorize
    stdin:
      - {id: "1", file: 1.eml, folder: inbox, from: "Ann <ann@example.com>", to: me@example.com, subject: "Budget review tomorrow?", date: "2026-11-30", labels: [], body: "Can you send the numbers before the meeting?"}
      - {id: "2", file: 2.eml, folder: inbox, from: news@shop.example, to: me@example.com, subject: "Weekly newsletter", date: "2026-11-30", labels: [], body: "Unsubscribe at any time."}
      - {id: "3", file: 3.eml, folder: inbox, from: billing@vendor.example, to: me@example.com, subject: "Invoice 42", date: "2026-11-30", labels: [], body: "Your invoice is attached. Payment due in 30 days."}
  - id: s2
    pipeline: email.triage
    stdin: $s1.json
  - id: s3
    pipeline: inbox.categorize --work-domain example.com
    stdin: $s2.json
  - id: s4
    pipeline: email.triage
    stdin: $s3.json
  - id: s5
    pipeline: inbox.categorize
    stdin: $s4.json
YAML
    cat >"$work/serve.toml" <<TOML
listen = "127.0.0.1:0"
state = "$work/state"
request_timeout_ms = 60000

[[tenant]]
name = "bench"
token_env = "LOBSTER_BENCH_TOKEN"
workflows = ["workflows/"]
steps = ["steps/"]
max_concurrent_runs = 256
requests_per_minute = 1000000000
self_approve = true
TOML
}

# bench_cases: serve.sh's two cases as request bodies for POST /v1/runs —
# $pipeline and $body_a (case (a), a 3-stage built-in pipeline), $body_b
# (case (b), bench5) — and a random $LOBSTER_BENCH_TOKEN, exported for the
# server's token_env.
bench_cases() {
    export LOBSTER_BENCH_TOKEN
    LOBSTER_BENCH_TOKEN=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
    pipeline='commands.list | where name==exec | pick name,description'
    body_a=$(python3 -c 'import json,sys; print(json.dumps({"pipeline": sys.argv[1]}))' "$pipeline")
    body_b='{"workflow":"bench5"}'
}
