//! Running a plain `wasi:cli/command` component as a step: input items as a
//! JSON array on stdin, argv `[name, args…]`, JSON (array or one value) on
//! stdout; a non-zero exit status is a failure.

use super::classify::classify;
use super::component_step::{forward_stderr, input_text, output_items};
use super::engine::SandboxEngine;
use super::env::StepEnv;
use super::error::SandboxError;
use super::host::HostState;
use super::store::new_store;
use crate::journal::GuestDigests;
use crate::kernel::EffectiveLimits;
use crate::value::Item;
use std::sync::atomic::Ordering;
use wasmtime_wasi::p2::bindings::sync::CommandPre;
use wasmtime_wasi::I32Exit;

/// Instantiate and call `wasi:cli/run.run` (with `digests`: hash the stdin
/// handed over and the stdout handed back, see [`GuestDigests`]).
#[allow(clippy::too_many_arguments)]
pub(crate) fn run(
    engine: &SandboxEngine,
    pre: &CommandPre<HostState>,
    name: &str,
    args: &[String],
    input: &[Item],
    env: &StepEnv,
    limits: &EffectiveLimits,
    mut digests: Option<&mut GuestDigests>,
) -> Result<Vec<Item>, SandboxError> {
    let stdin = input_text(input, digests.as_deref_mut())?.into_bytes();
    let mut argv = Vec::with_capacity(args.len() + 1);
    argv.push(name.to_string());
    argv.extend(args.iter().cloned());
    let _activity = super::activity::enter(name, super::activity::Phase::Run);
    let mut s = new_store(engine, name, limits, env, &argv, stdin)?;
    let result = pre
        .instantiate(&mut s.store)
        .and_then(|cmd| cmd.wasi_cli_run().call_run(&mut s.store));
    let stderr_tail = s.store.data().stderr.tail(600);
    let outcome = match result {
        Ok(Ok(())) => Ok(()),
        Ok(Err(())) => Err(SandboxError::Exit {
            step: name.to_string(),
            code: 1,
            stderr: stderr_tail,
        }),
        Err(e) if e.downcast_ref::<I32Exit>().is_some_and(|x| x.0 == 0) => Ok(()),
        Err(e) => Err(classify(
            e,
            name,
            s.store.data(),
            s.stop.load(Ordering::SeqCst),
            limits,
        )),
    };
    forward_stderr(name, s.store.data(), env);
    outcome?;
    let stdout = s.store.data().stdout.take();
    let text = String::from_utf8(stdout).map_err(|_| SandboxError::BadOutput {
        step: name.to_string(),
        detail: "stdout is not UTF-8".into(),
    })?;
    output_items(name, text, digests)
}
