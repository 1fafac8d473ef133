//! Running a `lobster:step` component: `describe`, and `run` with
//! argv-style args and the input items as JSON.

use super::bindings::{StepError, StepPre};
use super::classify::classify;
use super::component::{LoadedComponent, Pre};
use super::describe::StepMeta;
use super::engine::SandboxEngine;
use super::env::StepEnv;
use super::error::SandboxError;
use super::host::HostState;
use super::store::{new_store, StepStore};
use crate::journal::GuestDigests;
use crate::kernel::EffectiveLimits;
use crate::value::Item;
use std::sync::atomic::Ordering;

/// Call `describe` in a store with nothing granted.
pub(crate) fn describe(
    engine: &SandboxEngine,
    component: &LoadedComponent,
    label: &str,
    limits: &EffectiveLimits,
) -> Result<StepMeta, SandboxError> {
    let _tick = engine.ticking();
    let _activity = super::activity::enter(label, super::activity::Phase::Describe);
    let mut s = new_store(
        engine,
        label,
        limits,
        &StepEnv::closed(),
        &[label.to_string()],
        Vec::new(),
    )?;
    let result: wasmtime::Result<StepMeta> = match component.pre() {
        Pre::Step(pre) => pre
            .instantiate(&mut s.store)
            .and_then(|step| step.call_describe(&mut s.store))
            .map(Into::into),
        Pre::Step02(pre) => pre
            .instantiate(&mut s.store)
            .and_then(|step| step.call_describe(&mut s.store))
            .map(Into::into),
        Pre::Command(_) => {
            return Err(SandboxError::Engine(
                "describe on a command component".into(),
            ))
        }
    };
    result.map_err(|e| fail(e, label, &s, limits))
}

fn fail(e: wasmtime::Error, step: &str, s: &StepStore, limits: &EffectiveLimits) -> SandboxError {
    classify(
        e,
        step,
        s.store.data(),
        s.stop.load(Ordering::SeqCst),
        limits,
    )
}

/// Instantiate and call `run` (with `digests`: hash the input text handed
/// over and the text handed back, see [`GuestDigests`]).
#[allow(clippy::too_many_arguments)]
pub(crate) fn run(
    engine: &SandboxEngine,
    pre: &StepPre<HostState>,
    name: &str,
    args: &[String],
    input: &[Item],
    env: &StepEnv,
    limits: &EffectiveLimits,
    mut digests: Option<&mut GuestDigests>,
) -> Result<Vec<Item>, SandboxError> {
    let input_json = input_text(input, digests.as_deref_mut())?;
    let argv = [name.to_string()];
    let _activity = super::activity::enter(name, super::activity::Phase::Run);
    let mut s = new_store(engine, name, limits, env, &argv, Vec::new())?;
    let result = pre
        .instantiate(&mut s.store)
        .and_then(|step| step.call_run(&mut s.store, args, &input_json));
    finish(name, result, s, env, limits, digests)
}

/// The input items as the JSON text a guest is handed; with `digests`,
/// its blake3 is taken too.
pub(crate) fn input_text(
    input: &[Item],
    digests: Option<&mut GuestDigests>,
) -> Result<String, SandboxError> {
    let text = serde_json::to_string(input).map_err(|e| SandboxError::Engine(e.to_string()))?;
    if let Some(d) = digests {
        d.input = Some(crate::journal::kept::digest(text.as_bytes()));
    }
    Ok(text)
}

/// Instantiate a `lobster:step@0.2.0` component and call `run`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn run_v02(
    engine: &SandboxEngine,
    pre: &super::bindings::v02::StepPre<HostState>,
    name: &str,
    args: &[String],
    input: &[Item],
    env: &StepEnv,
    limits: &EffectiveLimits,
    mut digests: Option<&mut GuestDigests>,
) -> Result<Vec<Item>, SandboxError> {
    use super::bindings::v02::lobster::step::types::StepError as E02;
    let input_json = input_text(input, digests.as_deref_mut())?;
    let argv = [name.to_string()];
    let mut s = new_store(engine, name, limits, env, &argv, Vec::new())?;
    let result = pre
        .instantiate(&mut s.store)
        .and_then(|step| step.call_run(&mut s.store, args, &input_json))
        .map(|r| {
            r.map_err(|e| match e {
                E02::InvalidArgs(m) => StepError::InvalidArgs(m),
                E02::Failed(m) => StepError::Failed(m),
            })
        });
    finish(name, result, s, env, limits, digests)
}

/// Map `run`'s outcome to items or the precise error, forwarding what the
/// step wrote to stdout/stderr.
fn finish(
    name: &str,
    result: wasmtime::Result<Result<String, StepError>>,
    s: StepStore,
    env: &StepEnv,
    limits: &EffectiveLimits,
    digests: Option<&mut GuestDigests>,
) -> Result<Vec<Item>, SandboxError> {
    let outcome = match result {
        Err(e) => Err(fail(e, name, &s, limits)),
        Ok(Err(StepError::InvalidArgs(message))) => Err(SandboxError::InvalidArgs {
            step: name.to_string(),
            message,
        }),
        Ok(Err(StepError::Failed(message))) => Err(SandboxError::Failed {
            step: name.to_string(),
            message,
        }),
        Ok(Ok(text)) => Ok(text),
    };
    if super::engine::fuel_enabled() {
        if let Ok(left) = s.store.get_fuel() {
            env.fuel.set(limits.fuel.saturating_sub(left));
        }
    }
    // A step's stdout is not its result (that is `run`'s return value):
    // treat it as log text, like stderr.
    forward(name, &s.store.data().stdout.take(), env);
    forward_stderr(name, s.store.data(), env);
    let text = outcome?;
    if text.len() > limits.output_bytes {
        return Err(SandboxError::ResultTooLarge {
            step: name.to_string(),
            limit: limits.output_bytes,
        });
    }
    output_items(name, text, digests)
}

/// The items of the text a guest returned ([`parse_items`]); with
/// `digests`, the text's blake3 is taken too, once it is known to be items
/// (and the text kept on the thread with it, see [`crate::journal::kept`]).
pub(crate) fn output_items(
    name: &str,
    text: String,
    digests: Option<&mut GuestDigests>,
) -> Result<Vec<Item>, SandboxError> {
    let items = parse_items(name, &text)?;
    if let Some(d) = digests {
        let digest = crate::journal::kept::digest(text.as_bytes());
        d.output = Some(digest.clone());
        crate::journal::kept::keep(text, &digest);
    }
    Ok(items)
}

/// Guest stderr, line by line, to the run's log sink (as `info`).
pub(crate) fn forward_stderr(name: &str, state: &HostState, env: &StepEnv) {
    forward(name, &state.stderr.take(), env);
}

/// At most this much of a step's stdout/stderr text reaches the log sink.
const MAX_FORWARDED_BYTES: usize = 16 * 1024;

/// Text a step wrote, line by line, to the run's log sink (as `info`);
/// anything past [`MAX_FORWARDED_BYTES`] is summarised in one line.
fn forward(name: &str, bytes: &[u8], env: &StepEnv) {
    if bytes.is_empty() {
        return;
    }
    let shown = &bytes[..bytes.len().min(MAX_FORWARDED_BYTES)];
    let mut lines: Vec<String> = String::from_utf8_lossy(shown)
        .lines()
        .map(str::to_string)
        .collect();
    if bytes.len() > shown.len() {
        lines.push(format!(
            "… {} more bytes not shown",
            bytes.len() - shown.len()
        ));
    }
    for line in lines {
        (env.log)(&super::log::LogLine {
            step: name.to_string(),
            level: super::log::Level::Info,
            message: line,
        });
    }
}

/// A JSON array is the items; any other JSON value is one item; nothing is no items.
pub(crate) fn parse_items(name: &str, text: &str) -> Result<Vec<Item>, SandboxError> {
    if text.trim().is_empty() {
        return Ok(Vec::new());
    }
    match serde_json::from_str::<Item>(text) {
        Ok(Item::Array(items)) => Ok(items),
        Ok(other) => Ok(vec![other]),
        Err(e) => Err(SandboxError::BadOutput {
            step: name.to_string(),
            detail: e.to_string(),
        }),
    }
}
