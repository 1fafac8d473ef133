//! Counters for `GET /metrics`, rendered as Prometheus text.

use crate::kernel::StepReport;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

/// Upper bounds (seconds) of the run duration histogram.
const BUCKETS: [f64; 12] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0, 30.0,
];

/// The server's metrics. Cheap to update from any thread.
#[derive(Default)]
pub struct Metrics {
    runs: Mutex<BTreeMap<(String, String), u64>>,
    refused: Mutex<BTreeMap<String, u64>>,
    limited: Mutex<BTreeMap<(String, String), u64>>,
    durations: Mutex<BTreeMap<String, Histogram>>,
    in_flight: AtomicI64,
    requests: AtomicU64,
    steps: Mutex<BTreeMap<String, Histogram>>,
    fuel: Mutex<BTreeMap<String, u64>>,
    breaches: Mutex<BTreeMap<(String, String), u64>>,
}

#[derive(Default, Clone)]
struct Histogram {
    counts: [u64; BUCKETS.len()],
    sum: f64,
    count: u64,
}

impl Histogram {
    fn observe(&mut self, took: Duration) {
        let secs = took.as_secs_f64();
        for (i, b) in BUCKETS.iter().enumerate() {
            if secs <= *b {
                self.counts[i] += 1;
            }
        }
        self.sum += secs;
        self.count += 1;
    }

    /// The `_bucket`, `_sum` and `_count` lines of `name` for `tenant`.
    fn render(&self, out: &mut String, name: &str, tenant: &str) {
        for (i, b) in BUCKETS.iter().enumerate() {
            let _ = writeln!(
                out,
                "{name}_bucket{{tenant=\"{tenant}\",le=\"{b}\"}} {}",
                self.counts[i]
            );
        }
        let _ = writeln!(
            out,
            "{name}_bucket{{tenant=\"{tenant}\",le=\"+Inf\"}} {}",
            self.count
        );
        let _ = writeln!(out, "{name}_sum{{tenant=\"{tenant}\"}} {}", self.sum);
        let _ = writeln!(out, "{name}_count{{tenant=\"{tenant}\"}} {}", self.count);
    }
}

impl Metrics {
    /// A run (or resume) of `tenant` settled with `status` after `took`.
    pub fn run_settled(&self, tenant: &str, status: &str, took: Duration) {
        *lock(&self.runs)
            .entry((tenant.to_string(), status.to_string()))
            .or_default() += 1;
        lock(&self.durations)
            .entry(tenant.to_string())
            .or_default()
            .observe(took);
    }

    /// A WebAssembly step of one of `tenant`'s runs finished (reported by
    /// the sandbox through the tenant's `StepObserver`).
    pub fn step_finished(&self, tenant: &str, report: &StepReport<'_>) {
        lock(&self.steps)
            .entry(tenant.to_string())
            .or_default()
            .observe(report.elapsed);
        if let Some(fuel) = report.fuel_used {
            *lock(&self.fuel).entry(tenant.to_string()).or_default() += fuel;
        }
        if let Some(kind) = report.breach {
            *lock(&self.breaches)
                .entry((tenant.to_string(), kind.to_string()))
                .or_default() += 1;
        }
    }

    /// The policy authority refused something in a run of `tenant`.
    pub fn policy_refused(&self, tenant: &str) {
        *lock(&self.refused).entry(tenant.to_string()).or_default() += 1;
    }

    /// A 429 for `tenant` (`reason`: `rate_limited` or `too_many_runs`).
    pub fn limited(&self, tenant: &str, reason: &str) {
        *lock(&self.limited)
            .entry((tenant.to_string(), reason.to_string()))
            .or_default() += 1;
    }

    /// One more (or one fewer, `delta` = -1) run going on.
    pub fn in_flight(&self, delta: i64) {
        self.in_flight.fetch_add(delta, Ordering::SeqCst);
    }

    /// An HTTP request was answered.
    pub fn request(&self) {
        self.requests.fetch_add(1, Ordering::Relaxed);
    }

    /// The Prometheus text exposition; `queues` is each tenant's queue
    /// depth (runs accepted and not yet taken by a node).
    pub fn render(&self, queues: &[(String, u64)]) -> String {
        let mut out = String::new();
        out.push_str("# HELP lobster_runs_total Runs and resumes settled, by tenant and status.\n# TYPE lobster_runs_total counter\n");
        for ((t, s), n) in lock(&self.runs).iter() {
            let _ = writeln!(
                out,
                "lobster_runs_total{{tenant=\"{t}\",status=\"{s}\"}} {n}"
            );
        }
        out.push_str("# HELP lobster_run_duration_seconds Wall time of runs and resumes.\n# TYPE lobster_run_duration_seconds histogram\n");
        for (t, h) in lock(&self.durations).iter() {
            h.render(&mut out, "lobster_run_duration_seconds", t);
        }
        out.push_str("# HELP lobster_step_duration_seconds Wall time of WebAssembly steps.\n# TYPE lobster_step_duration_seconds histogram\n");
        for (t, h) in lock(&self.steps).iter() {
            h.render(&mut out, "lobster_step_duration_seconds", t);
        }
        out.push_str("# HELP lobster_fuel_used_total Fuel burned by WebAssembly steps.\n# TYPE lobster_fuel_used_total counter\n");
        for (t, n) in lock(&self.fuel).iter() {
            let _ = writeln!(out, "lobster_fuel_used_total{{tenant=\"{t}\"}} {n}");
        }
        out.push_str("# HELP lobster_sandbox_limit_breaches_total Steps stopped by a sandbox limit, by kind (fuel, deadline, memory, output, result).\n# TYPE lobster_sandbox_limit_breaches_total counter\n");
        for ((t, k), n) in lock(&self.breaches).iter() {
            let _ = writeln!(
                out,
                "lobster_sandbox_limit_breaches_total{{tenant=\"{t}\",kind=\"{k}\"}} {n}"
            );
        }
        out.push_str("# HELP lobster_queue_depth Runs accepted and waiting for a node.\n# TYPE lobster_queue_depth gauge\n");
        for (t, n) in queues {
            let _ = writeln!(out, "lobster_queue_depth{{tenant=\"{t}\"}} {n}");
        }
        out.push_str("# HELP lobster_policy_refusals_total Runs ended by a policy refusal.\n# TYPE lobster_policy_refusals_total counter\n");
        for (t, n) in lock(&self.refused).iter() {
            let _ = writeln!(out, "lobster_policy_refusals_total{{tenant=\"{t}\"}} {n}");
        }
        out.push_str("# HELP lobster_rate_limited_total Requests answered 429.\n# TYPE lobster_rate_limited_total counter\n");
        for ((t, r), n) in lock(&self.limited).iter() {
            let _ = writeln!(
                out,
                "lobster_rate_limited_total{{tenant=\"{t}\",reason=\"{r}\"}} {n}"
            );
        }
        let _ = writeln!(
            out,
            "# HELP lobster_runs_in_flight Runs going on now.\n# TYPE lobster_runs_in_flight gauge\nlobster_runs_in_flight {}",
            self.in_flight.load(Ordering::SeqCst)
        );
        let _ = writeln!(
            out,
            "# HELP lobster_http_requests_total HTTP requests answered.\n# TYPE lobster_http_requests_total counter\nlobster_http_requests_total {}",
            self.requests.load(Ordering::Relaxed)
        );
        out
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_counters_and_histogram() {
        let m = Metrics::default();
        m.run_settled("acme", "ok", Duration::from_millis(3));
        m.run_settled("acme", "ok", Duration::from_millis(300));
        m.limited("acme", "rate_limited");
        m.in_flight(1);
        m.step_finished(
            "acme",
            &StepReport {
                step: "s",
                elapsed: Duration::from_millis(2),
                fuel_used: Some(1000),
                breach: Some("fuel"),
            },
        );
        let text = m.render(&[("acme".to_string(), 4)]);
        assert!(text.contains("lobster_step_duration_seconds_count{tenant=\"acme\"} 1"));
        assert!(text.contains("lobster_fuel_used_total{tenant=\"acme\"} 1000"));
        assert!(
            text.contains("lobster_sandbox_limit_breaches_total{tenant=\"acme\",kind=\"fuel\"} 1")
        );
        assert!(text.contains("lobster_queue_depth{tenant=\"acme\"} 4"));
        assert!(
            text.contains("lobster_runs_total{tenant=\"acme\",status=\"ok\"} 2"),
            "{text}"
        );
        assert!(
            text.contains("lobster_run_duration_seconds_bucket{tenant=\"acme\",le=\"0.005\"} 1")
        );
        assert!(text.contains("lobster_run_duration_seconds_count{tenant=\"acme\"} 2"));
        assert!(
            text.contains("lobster_rate_limited_total{tenant=\"acme\",reason=\"rate_limited\"} 1")
        );
        assert!(text.contains("lobster_runs_in_flight 1"));
    }
}
