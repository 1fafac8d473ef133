//! Hostile guests against the limits: fuel, the deadline, cancellation,
//! memory, recursion, output and stderr floods, oversized results, panics
//! and traps each end in their own error, and the host still runs a step.

use super::common::{args, limits, test_guest_dir};
use super::{assert_host_ok, hostile, load};
use lobster::sandbox::{EffectiveLimits, SandboxError, StepEnv, Stream};
use std::time::{Duration, Instant};

#[test]
fn infinite_loop_runs_out_of_fuel() {
    let l = EffectiveLimits {
        fuel: 50_000_000,
        ..limits()
    };
    let Some(err) = hostile(&["loop"], l) else {
        return;
    };
    assert!(
        matches!(
            err,
            SandboxError::OutOfFuel {
                limit: 50_000_000,
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        "step hostile ran out of fuel (limit 50000000)"
    );
}

#[test]
fn infinite_loop_hits_the_deadline() {
    let l = EffectiveLimits {
        fuel: u64::MAX / 4,
        timeout: Some(Duration::from_millis(300)),
        ..limits()
    };
    let start = Instant::now();
    let Some(err) = hostile(&["loop"], l) else {
        return;
    };
    assert!(
        matches!(err, SandboxError::Timeout { limit_ms: 300, .. }),
        "{err:?}"
    );
    assert_eq!(err.to_string(), "step hostile timed out after 300ms");
    assert!(start.elapsed() < Duration::from_secs(10));
}

#[test]
fn run_cancellation_stops_a_spinning_step() {
    let Some(h) = load(&test_guest_dir(), "hostile.wasm") else {
        return;
    };
    let cancel = lobster::executor::Cancel::default();
    let env = StepEnv {
        cancel: Some(cancel.clone()),
        ..StepEnv::closed()
    };
    cancel.arm_deadline(Duration::from_millis(200));
    let l = EffectiveLimits {
        fuel: u64::MAX / 4,
        timeout: None,
        ..limits()
    };
    let err = h
        .run("hostile", &args(&["loop"]), &[], &env, &l)
        .unwrap_err();
    assert!(matches!(err, SandboxError::Cancelled { .. }), "{err:?}");
    assert_host_ok();
}

#[test]
fn memory_bomb_hits_the_memory_limit() {
    let l = EffectiveLimits {
        memory_bytes: 32 << 20,
        ..limits()
    };
    let Some(err) = hostile(&["grow"], l) else {
        return;
    };
    assert!(matches!(err, SandboxError::MemoryLimit { .. }), "{err:?}");
    assert_eq!(
        err.to_string(),
        "step hostile exceeded its memory limit (33554432 bytes)"
    );
}

#[test]
fn unbounded_recursion_crashes_cleanly() {
    let Some(err) = hostile(&["recurse"], limits()) else {
        return;
    };
    match &err {
        SandboxError::Crashed { reason, .. } => {
            assert!(reason.contains("stack overflow"), "{reason}")
        }
        other => panic!("expected a crash, got {other:?}"),
    }
}

#[test]
fn stdout_flood_hits_the_output_cap() {
    let l = EffectiveLimits {
        output_bytes: 512_000,
        ..limits()
    };
    let Some(err) = hostile(&["flood-stdout"], l) else {
        return;
    };
    assert!(
        matches!(
            err,
            SandboxError::OutputLimit {
                stream: Stream::Stdout,
                limit: 512_000,
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        "step hostile wrote more than 512000 bytes to stdout"
    );
}

#[test]
fn stderr_and_log_floods_hit_the_stderr_cap() {
    let l = EffectiveLimits {
        output_bytes: 10_000,
        ..limits()
    };
    for mode in ["flood-stderr", "flood-log"] {
        let Some(err) = hostile(&[mode], l) else {
            return;
        };
        assert!(
            matches!(
                err,
                SandboxError::OutputLimit {
                    stream: Stream::Stderr,
                    limit: 10_000,
                    ..
                }
            ),
            "{mode}: {err:?}"
        );
    }
}

#[test]
fn oversized_result_is_refused() {
    let l = EffectiveLimits {
        output_bytes: 100_000,
        ..limits()
    };
    let Some(err) = hostile(&["big-result"], l) else {
        return;
    };
    assert!(
        matches!(err, SandboxError::ResultTooLarge { limit: 100_000, .. }),
        "{err:?}"
    );
}

#[test]
fn panic_and_trap_are_crashes() {
    let Some(err) = hostile(&["panic"], limits()) else {
        return;
    };
    match &err {
        SandboxError::Crashed { reason, .. } => {
            assert!(reason.contains("panic"), "{reason}");
            assert!(reason.contains("panicked on purpose"), "{reason}");
        }
        other => panic!("expected a crash, got {other:?}"),
    }
    let Some(err) = hostile(&["trap"], limits()) else {
        return;
    };
    assert!(matches!(err, SandboxError::Crashed { .. }), "{err:?}");
    let Some(err) = hostile(&["no-such-mode"], limits()) else {
        return;
    };
    assert!(matches!(err, SandboxError::InvalidArgs { .. }), "{err:?}");
}

#[test]
fn a_sleeping_guest_is_woken_by_the_deadline_and_by_cancellation() {
    let l = EffectiveLimits {
        timeout: Some(Duration::from_millis(300)),
        ..limits()
    };
    let start = Instant::now();
    let Some(err) = hostile(&["sleep"], l) else {
        return;
    };
    assert!(
        matches!(err, SandboxError::Timeout { limit_ms: 300, .. }),
        "{err:?}"
    );
    assert!(start.elapsed() < Duration::from_secs(10));

    let Some(h) = load(&test_guest_dir(), "hostile.wasm") else {
        return;
    };
    let cancel = lobster::executor::Cancel::default();
    cancel.arm_deadline(Duration::from_millis(200));
    let env = StepEnv {
        cancel: Some(cancel),
        ..StepEnv::closed()
    };
    let l = EffectiveLimits {
        timeout: None,
        ..limits()
    };
    let start = Instant::now();
    let err = h
        .run("hostile", &args(&["sleep"]), &[], &env, &l)
        .unwrap_err();
    assert!(matches!(err, SandboxError::Cancelled { .. }), "{err:?}");
    assert!(start.elapsed() < Duration::from_secs(10));
}
