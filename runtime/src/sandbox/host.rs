//! The data of one guest's store and the `lobster:step/host` functions:
//! `log` (tagged with the step name, counted against stderr) and
//! `state-get`/`state-set` (JSON values scoped to the step and the run).

use super::bindings::lobster::step::{host, types};
use super::bindings::LogLevel;
use super::limits::MemoryLimiter;
use super::log::{Level, LogLine, LogSink};
use super::output::{CappedPipe, OutputOverflow};
use crate::state::{StateStore, Writer};
use std::sync::Arc;
use wasmtime::component::ResourceTable;
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

/// Largest value a step may store with `state-set`.
pub const MAX_STATE_VALUE_BYTES: usize = 1 << 20;
/// Longest key a step may use.
pub const MAX_STATE_KEY_BYTES: usize = 200;
/// Bytes of state one step execution may write in total (all `state-set`
/// calls), counted as stored on disk.
pub const MAX_STATE_WRITE_BYTES: usize = 16 << 20;

/// The state store as one step of one run sees it.
#[derive(Clone)]
pub(crate) struct ScopedState {
    pub(crate) store: StateStore,
    /// The run's state scope (`adhoc`, or a workflow's).
    pub(crate) scope: String,
    /// The step's name.
    pub(crate) step: String,
}

/// The store key of (`scope`, `step`, `key`): `step_` and a keyed blake3 of
/// the three, each length-prefixed. Unambiguous — no two different triples
/// share a file, whatever dots, case or punctuation they contain (step
/// `a.k` key `put` and step `a` key `k.put` used to) — and always a safe
/// file name.
pub(crate) fn state_file_key(scope: &str, step: &str, key: &str) -> String {
    let mut h = blake3::Hasher::new_derive_key("lobster 2026 step state key");
    for part in [scope, step, key] {
        h.update(&(part.len() as u64).to_le_bytes());
        h.update(part.as_bytes());
    }
    format!("step_{}", &h.finalize().to_hex()[..48])
}

/// Everything a guest's `Store` carries.
pub(crate) struct HostState {
    pub(crate) wasi: WasiCtx,
    pub(crate) table: ResourceTable,
    pub(crate) limiter: MemoryLimiter,
    pub(crate) step: Arc<str>,
    pub(crate) stdout: CappedPipe,
    pub(crate) stderr: CappedPipe,
    pub(crate) state: Option<ScopedState>,
    pub(crate) log: LogSink,
    pub(crate) output_cap: usize,
    /// When the step must stop (bounds guest sleeps).
    pub(crate) deadline: Option<std::time::Instant>,
    /// The run's cancellation (bounds guest sleeps).
    pub(crate) cancel: Option<crate::kernel::Cancel>,
    /// The guest's monotonic clock.
    pub(crate) monotonic: super::sleep::StepMonotonic,
    /// Bytes written with `state-set` so far.
    pub(crate) state_written: usize,
    /// Tools and models for a `lobster:step@0.2.0` step (`None` in
    /// `describe` and for commands: every broker call is refused).
    pub(crate) broker: Option<std::sync::Arc<dyn super::broker_port::StepBroker>>,
}

impl WasiView for HostState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

fn level(l: LogLevel) -> Level {
    match l {
        LogLevel::Trace => Level::Trace,
        LogLevel::Debug => Level::Debug,
        LogLevel::Info => Level::Info,
        LogLevel::Warn => Level::Warn,
        LogLevel::Error => Level::Error,
    }
}

impl HostState {
    fn state_key(&self, key: &str) -> Result<(StateStore, String), String> {
        let Some(scoped) = &self.state else {
            return Err("state is not available to this step".into());
        };
        if key.is_empty() || key.len() > MAX_STATE_KEY_BYTES {
            return Err(format!(
                "state key must be 1 to {MAX_STATE_KEY_BYTES} bytes"
            ));
        }
        Ok((
            scoped.store.clone(),
            state_file_key(&scoped.scope, &scoped.step, key),
        ))
    }
}

impl host::Host for HostState {
    fn log(&mut self, l: LogLevel, message: String) -> wasmtime::Result<()> {
        let level = level(l);
        if !self.stderr.account(message.len() + 1) {
            return Err(wasmtime::Error::new(OutputOverflow(self.output_cap)));
        }
        (self.log)(&LogLine {
            step: self.step.to_string(),
            level,
            message,
        });
        Ok(())
    }

    fn state_get(&mut self, key: String) -> wasmtime::Result<Option<String>> {
        let Ok((store, key)) = self.state_key(&key) else {
            return Ok(None);
        };
        Ok(store
            .user(Writer::Step)
            .get(&key)
            .ok()
            .flatten()
            .map(|v| crate::value::to_js_json(&v)))
    }

    fn state_set(&mut self, key: String, value: String) -> wasmtime::Result<Result<(), String>> {
        let (store, key) = match self.state_key(&key) {
            Ok(k) => k,
            Err(e) => return Ok(Err(e)),
        };
        if value.len() > MAX_STATE_VALUE_BYTES {
            return Ok(Err(format!(
                "state value is larger than {MAX_STATE_VALUE_BYTES} bytes"
            )));
        }
        let parsed: crate::value::Item = match serde_json::from_str(&value) {
            Ok(v) => v,
            Err(e) => return Ok(Err(format!("state value is not JSON: {e}"))),
        };
        let budget = MAX_STATE_WRITE_BYTES.saturating_sub(self.state_written);
        if budget == 0 {
            return Ok(Err(format!(
                "this step already wrote {MAX_STATE_WRITE_BYTES} bytes of state in this run"
            )));
        }
        // Stored compact and bounded in bytes on disk, not only as sent.
        match store
            .user(Writer::Step)
            .set_compact(&key, &parsed, MAX_STATE_VALUE_BYTES.min(budget))
        {
            Ok(written) => {
                self.state_written += written;
                Ok(Ok(()))
            }
            Err(e) => Ok(Err(e.to_string())),
        }
    }
}

impl types::Host for HostState {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_keys_are_scoped_unambiguously() {
        let k = state_file_key;
        // Dots in step names and keys no longer meet.
        assert_ne!(
            k("adhoc", "hx-state.k", "put"),
            k("adhoc", "hx-state", "k.put")
        );
        assert_ne!(k("adhoc", "inbox", "list.x"), k("adhoc", "inbox.list", "x"));
        // Nor do case and punctuation (the reference's file-name mapping
        // folds them).
        assert_ne!(k("adhoc", "s", "Key"), k("adhoc", "s", "key"));
        assert_ne!(k("adhoc", "s", "a/b"), k("adhoc", "s", "a_b"));
        // The scope separates runs/workflows.
        assert_ne!(k("adhoc", "s", "k"), k("wf", "s", "k"));
        assert_ne!(k("a", "bc", "k"), k("ab", "c", "k"));
        assert_eq!(k("adhoc", "s", "k"), k("adhoc", "s", "k"));
        let name = crate::state::key_to_file_name(&k("adhoc", "s", "../../x")).unwrap();
        assert!(name.starts_with("step_") && !name.contains('/'), "{name}");
    }
}

mod v02 {
    use super::super::bindings::v02::lobster::step::{broker, host, types};
    use super::super::broker_port::CallBounds;
    use super::HostState;
    use crate::sandbox::bindings::LogLevel;

    impl host::Host for HostState {
        fn log(&mut self, l: types::LogLevel, message: String) -> wasmtime::Result<()> {
            let l = match l {
                types::LogLevel::Trace => LogLevel::Trace,
                types::LogLevel::Debug => LogLevel::Debug,
                types::LogLevel::Info => LogLevel::Info,
                types::LogLevel::Warn => LogLevel::Warn,
                types::LogLevel::Error => LogLevel::Error,
            };
            super::host::Host::log(self, l, message)
        }

        fn state_get(&mut self, key: String) -> wasmtime::Result<Option<String>> {
            super::host::Host::state_get(self, key)
        }

        fn state_set(
            &mut self,
            key: String,
            value: String,
        ) -> wasmtime::Result<Result<(), String>> {
            super::host::Host::state_set(self, key, value)
        }
    }

    impl types::Host for HostState {}

    impl HostState {
        fn bounds(&self) -> CallBounds {
            CallBounds {
                deadline: self.deadline,
                output_bytes: self.output_cap,
            }
        }

        fn no_broker(&self) -> String {
            format!(
                "step {} has no broker here (describe runs with nothing granted); nothing was sent",
                self.step
            )
        }
    }

    impl broker::Host for HostState {
        fn invoke_tool(
            &mut self,
            tool: String,
            action: Option<String>,
            args_json: String,
        ) -> wasmtime::Result<Result<String, String>> {
            let Some(b) = self.broker.clone() else {
                return Ok(Err(self.no_broker()));
            };
            Ok(b.invoke_tool(&tool, action.as_deref(), &args_json, self.bounds()))
        }

        fn llm_json(&mut self, request_json: String) -> wasmtime::Result<Result<String, String>> {
            let Some(b) = self.broker.clone() else {
                return Ok(Err(self.no_broker()));
            };
            Ok(b.llm_json(&request_json, self.bounds()))
        }
    }
}
