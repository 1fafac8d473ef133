//! [`WasmStep`]: a component on the step path, as a pipeline [`Command`].
//! `run` collects the input items, instantiates the component in a fresh
//! store under the run's limits and grants, and calls it with the stage's
//! arguments.

use super::component::{ComponentKind, LoadedComponent};
use super::describe::{FlagKind, Requirement};
use super::env::StepEnv;
use super::error::SandboxError;
use crate::dsl::{Args, FlagValue};
use crate::error::{Error, Result};
use crate::kernel::{
    collect, grants::Grants, stream_of, Command, Context, FlagSpec, ItemStream, Output, Signature,
};
use crate::value::string_to_number;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

/// A resolved wasm step.
pub struct WasmStep {
    name: &'static str,
    summary: &'static str,
    help: &'static str,
    flags: &'static [FlagSpec],
    side_effects: &'static [&'static str],
    path: PathBuf,
    component: Arc<LoadedComponent>,
}

fn leak(s: String) -> &'static str {
    Box::leak(s.into_boxed_str())
}

impl WasmStep {
    /// The step `name` backed by `component` (loaded from `path`). Steps
    /// live for the rest of the process ([`Command`]'s signature is
    /// `'static`); one per stage name and digest is kept, so resolving the
    /// same step again does not allocate.
    pub fn intern(name: &str, path: PathBuf, component: Arc<LoadedComponent>) -> &'static WasmStep {
        static STEPS: OnceLock<Mutex<HashMap<(String, String), &'static WasmStep>>> =
            OnceLock::new();
        let key = (name.to_string(), component.digest().to_string());
        let steps = STEPS.get_or_init(Default::default);
        if let Some(step) = steps.lock().ok().and_then(|m| m.get(&key).copied()) {
            return step;
        }
        let step: &'static WasmStep = Box::leak(Box::new(WasmStep::new(name, path, component)));
        if let Ok(mut m) = steps.lock() {
            m.insert(key, step);
        }
        step
    }

    fn new(name: &str, path: PathBuf, component: Arc<LoadedComponent>) -> WasmStep {
        let (summary, help, flags, writes) = match component.meta() {
            Some(meta) => (
                meta.summary.clone(),
                meta.help(component.digest()),
                meta.flags
                    .iter()
                    .map(|f| FlagSpec {
                        name: leak(f.name.clone()),
                        value: match f.kind {
                            FlagKind::Switch => None,
                            _ => Some(leak(f.name.clone())),
                        },
                        kind: match f.kind {
                            FlagKind::Switch => crate::kernel::FlagType::Switch,
                            FlagKind::Text => crate::kernel::FlagType::Text,
                            FlagKind::Number => crate::kernel::FlagType::Number,
                        },
                        description: leak(f.description.clone()),
                    })
                    .collect(),
                meta.requires.iter().any(|r| {
                    matches!(r, Requirement::Dir { access: super::Access::ReadWrite, .. })
                }),
            ),
            None => (
                format!("wasi:cli/command component {}", path.display()),
                format!(
                    "{name} — wasi:cli/command component (JSON items on stdin, JSON on stdout)\n\nComponent: {}\nblake3 {}\n",
                    path.display(),
                    component.digest()
                ),
                Vec::new(),
                false,
            ),
        };
        let side_effects: &'static [&'static str] = if writes {
            &["wasm_step", "writes_files"]
        } else {
            &["wasm_step"]
        };
        WasmStep {
            name: leak(name.to_string()),
            summary: leak(summary),
            help: leak(help),
            flags: Box::leak(flags.into_boxed_slice()),
            side_effects,
            path,
            component,
        }
    }

    /// blake3 of the component (64 hex digits); record it to bind approvals.
    pub fn digest(&self) -> &str {
        self.component.digest()
    }

    /// The component file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The loaded component.
    pub fn component(&self) -> &LoadedComponent {
        &self.component
    }

    /// The stage's arguments as argv for the guest: positionals first, then
    /// flags as `--name=value` (bare flags as `--name`), so the guest's
    /// greedy parser gives back exactly these arguments.
    pub fn argv(args: &Args) -> Vec<String> {
        let mut argv: Vec<String> = args.positional.clone();
        for (k, v) in &args.flags {
            argv.push(match v {
                FlagValue::Bool(true) => format!("--{k}"),
                other => format!("--{k}={}", other.as_str()),
            });
        }
        argv
    }

    /// What of `grants` this step gets: a `lobster:step` component only the
    /// directories (at most the access) and variables its `describe` asks
    /// for; a `wasi:cli/command` component, which cannot describe its
    /// needs, gets `grants` as they are (the run's flags, narrowed by any
    /// `permissions:` that apply).
    pub fn granted(&self, grants: &Grants) -> Grants {
        let Some(meta) = self.component.meta() else {
            return grants.clone();
        };
        let asks = &meta.requires;
        let mut out = grants.clone();
        out.dirs.retain_mut(|d| {
            let wanted = asks.iter().find_map(|r| match r {
                Requirement::Dir { path, access } if *path == d.guest => Some(*access),
                _ => None,
            });
            match wanted {
                Some(a) => {
                    d.access = d.access.min(a);
                    true
                }
                None => false,
            }
        });
        out.env.retain(|e| {
            asks.iter()
                .any(|r| matches!(r, Requirement::Env { name } if name == e))
        });
        out.tools.retain(|t| {
            asks.iter()
                .any(|r| matches!(r, Requirement::Tool { name, .. } if name == t))
        });
        out.llm &= meta.wants_llm();
        out
    }

    /// Refuse to run when the step describes a capability `grants` lack.
    pub fn check_grants(&self, grants: &Grants) -> std::result::Result<(), SandboxError> {
        let Some(meta) = self.component.meta() else {
            return Ok(());
        };
        match meta.requires.iter().find(|r| !r.granted_by(grants)) {
            None => Ok(()),
            Some(r) => {
                let (what, flag) = r.describe();
                Err(SandboxError::MissingCapability {
                    step: self.name.to_string(),
                    what,
                    flag,
                })
            }
        }
    }
}

impl Command for WasmStep {
    fn signature(&self) -> Signature {
        Signature {
            name: self.name,
            description: self.summary,
            flags: self.flags,
            positional: None,
            side_effects: self.side_effects,
        }
    }

    fn other_flags(&self) -> crate::kernel::OtherFlags {
        // A `wasi:cli/command` component declares no flags: its arguments are its own.
        match self.component.meta() {
            Some(_) => crate::kernel::OtherFlags::Refuse,
            None => crate::kernel::OtherFlags::Pass,
        }
    }

    fn help(&self) -> &'static str {
        self.help
    }

    fn validate(&self, args: &Args) -> Result<()> {
        let Some(meta) = self.component.meta() else {
            return Ok(());
        };
        for flag in meta.flags.iter().filter(|f| f.kind == FlagKind::Number) {
            if let Some(FlagValue::Str(s)) = args.flag(&flag.name) {
                if string_to_number(s).is_nan() {
                    return Err(Error::runtime(format!(
                        "{} --{} must be a number, got {s:?}",
                        self.name, flag.name
                    )));
                }
            }
        }
        Ok(())
    }

    fn preflight(&self, _args: &Args, ctx: &Context) -> Result<()> {
        ctx.grants
            .resolve_dirs(ctx.authority().workdir())
            .map_err(SandboxError::from)?;
        self.check_grants(&ctx.grants)?;
        Ok(())
    }

    fn digest(&self) -> Option<&str> {
        Some(self.component.digest())
    }

    fn imports(&self) -> &[String] {
        self.component.imports()
    }

    fn run(&self, args: &Args, input: ItemStream, ctx: &Context) -> Result<Output> {
        let items = collect(input)?;
        self.check_grants(&ctx.grants)?;
        let granted = self.granted(&ctx.grants);
        let mut env = StepEnv::from_grants(&granted, ctx)?;
        if let Some(meta) = self.component.meta() {
            // Every call is judged again when it is made (policy, grants,
            // describe, budgets) by the run's broker.
            env.broker = Some(Arc::new(super::broker_port::RunBroker::new(
                ctx,
                self.name,
                meta.tools(),
                meta.wants_llm(),
                &granted,
            )));
        }
        let limits = ctx.limits.steps.effective(&ctx.limits);
        let argv = Self::argv(args);
        let started = std::time::Instant::now();
        // Under digest rule 2 the sandbox hashes the texts it hands over
        // and gets back; with the journal off nothing is hashed.
        let rule = ctx.journal.digest_rule();
        let mut digests = crate::journal::GuestDigests::default();
        let wanted = (rule == Some(crate::journal::DigestRule::V2)).then_some(&mut digests);
        let result = self
            .component
            .run_digested(self.name, &argv, &items, &env, &limits, wanted);
        let report = super::report::StepReport {
            step: self.name,
            elapsed: started.elapsed(),
            fuel_used: env.fuel.get(),
            breach: result.as_ref().err().and_then(super::report::breach_kind),
        };
        if let Some(observe) = &ctx.sandbox.observer {
            observe.observe(&report);
        }
        if let Some(rule) = rule {
            let output = result.as_ref().ok().map(Vec::as_slice);
            let (input_digest, output_digest) = match rule {
                crate::journal::DigestRule::V1 => super::report::items_digests(&items, output),
                crate::journal::DigestRule::V2 => (digests.input, digests.output),
            };
            let _ = ctx.journal.append(super::report::journal_event(
                &report,
                self.component.digest(),
                input_digest,
                output_digest,
                output.is_some(),
            ));
        }
        match result {
            Ok(out) => Ok(Output::Items(stream_of(out))),
            Err(SandboxError::Cancelled { .. }) => Err(ctx.cancel.error_during(Some(
                super::activity::in_phase(self.name, super::activity::Phase::Run),
            ))),
            Err(e) => Err(e.into()),
        }
    }
}

impl std::fmt::Debug for WasmStep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WasmStep")
            .field("name", &self.name)
            .field("path", &self.path)
            .field("digest", &self.component.digest())
            .field(
                "kind",
                &match self.component.kind() {
                    ComponentKind::Step => "step",
                    ComponentKind::Command => "command",
                },
            )
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dsl::parse;
    use crate::journal::{self, DigestRule, Event, Journal, RunStarted};
    use crate::kernel::Mode;
    use crate::value::Item;
    use serde_json::json;

    /// One run of `step` on `input` in `ctx`: its output items and how many
    /// digests it took on this thread.
    fn run_once(step: &WasmStep, args: &Args, input: &[Item], ctx: &Context) -> (Vec<Item>, u64) {
        let before = journal::digests_taken();
        let out = match step.run(args, stream_of(input.to_vec()), ctx).unwrap() {
            Output::Items(s) => collect(s).unwrap(),
            _ => panic!("items expected"),
        };
        (out, journal::digests_taken() - before)
    }

    /// The `step` event `ctx`'s journal recorded (the run ended and its
    /// journal read back from the store).
    fn recorded_step(store: &crate::state::StateStore, ctx: &Context) -> journal::Step {
        let id = ctx.journal.run_id().unwrap().to_string();
        ctx.journal.end("ok", None).unwrap();
        let text = store.journal_text(&id).unwrap().unwrap();
        journal::replay::events_of(&text)
            .into_iter()
            .find_map(|e| match e {
                Event::Step(s) => Some(s),
                _ => None,
            })
            .unwrap_or_else(|| panic!("no step event in {text}"))
    }

    /// Rule 2: a WebAssembly step's digests are of the text the guest was
    /// handed and the text it handed back, byte for byte — cmd-echo writes
    /// its JSON with a newline after it and its keys as serde orders them,
    /// which printing its items again would not reproduce. Rule 1 prints
    /// the items. Without a journal, the step takes no digest at all.
    #[test]
    fn a_wasm_steps_digests_follow_the_runs_rule_and_are_not_taken_without_a_journal() {
        let Some(path) = crate::sandbox::test_guest("cmd-echo.wasm") else {
            return;
        };
        let tmp = tempfile::tempdir().unwrap();
        let cache = crate::sandbox::ArtifactCache::new(tmp.path().join("cache"));
        let component = crate::sandbox::load_file(&path, &cache).unwrap();
        let step = WasmStep::intern("cmd-echo", path.clone(), component);
        let store = crate::state::StateStore::new(tmp.path().join("state"));
        let mut ctx = crate::kernel::Context::builder(Mode::Tool, store.clone()).build();
        let input = vec![json!({"b": 1, "a": "é\n", "10": [1.5]}), json!("x")];
        let args = Args::default();

        let (out, taken) = run_once(step, &args, &input, &ctx);
        assert_eq!(taken, 0, "digests taken with the journal off");
        let expected_out: Vec<Item> = input
            .iter()
            .map(|i| json!({"item": i, "argv": ["cmd-echo"]}))
            .collect();
        assert_eq!(out, expected_out);

        let handed = serde_json::to_string(&input).unwrap();
        let returned = format!("{}\n", serde_json::to_string(&expected_out).unwrap());
        for rule in [DigestRule::V2, DigestRule::V1] {
            let started = RunStarted {
                run_id: journal::new_run_id(),
                digests: rule,
                ..RunStarted::default()
            };
            ctx.journal = Journal::start(&store, started).unwrap();
            let (again, taken) = run_once(step, &args, &input, &ctx);
            assert_eq!(again, out);
            assert_eq!(taken, 2, "{rule:?}: one digest each for input and output");
            let s = recorded_step(&store, &ctx);
            assert!(s.ok, "{s:?}");
            let (input_digest, output_digest) = match rule {
                DigestRule::V2 => (
                    journal::digest(handed.as_bytes()),
                    journal::digest(returned.as_bytes()),
                ),
                DigestRule::V1 => (journal::items_digest(&input), journal::items_digest(&out)),
            };
            assert_eq!(
                s.input_digest.as_deref(),
                Some(input_digest.as_str()),
                "{rule:?}"
            );
            assert_eq!(
                s.output_digest.as_deref(),
                Some(output_digest.as_str()),
                "{rule:?}"
            );
        }
        // The two rules differ on these bytes (else the test shows nothing).
        assert_ne!(
            journal::digest(returned.as_bytes()),
            journal::items_digest(&out)
        );
        assert_ne!(
            journal::digest(handed.as_bytes()),
            journal::items_digest(&input)
        );

        // A failed step under rule 2: its input digest, no output digest.
        // (Its input is not the text cmd-echo returned last: hashed.)
        ctx.journal = Journal::start(
            &store,
            RunStarted {
                run_id: journal::new_run_id(),
                digests: DigestRule::V2,
                ..RunStarted::default()
            },
        )
        .unwrap();
        let fail = Args {
            positional: vec!["fail".into()],
            ..Args::default()
        };
        assert!(step.run(&fail, stream_of(input.clone()), &ctx).is_err());
        let s = recorded_step(&store, &ctx);
        assert!(!s.ok && s.output_digest.is_none(), "{s:?}");
        assert_eq!(s.input_digest, Some(journal::digest(handed.as_bytes())));
    }

    #[test]
    fn argv_round_trips_through_greedy_parsing() {
        let p = parse("x pos1 --apply --n 5 --s=--weird pos2 --last").unwrap();
        let argv = WasmStep::argv(&p.stages[0].args);
        assert_eq!(
            argv,
            ["pos1", "pos2", "--apply", "--n=5", "--s=--weird", "--last"]
        );
        let tokens: Vec<crate::dsl::Token> = argv
            .iter()
            .map(|t| crate::dsl::Token {
                text: t.clone(),
                span: 0..0,
            })
            .collect();
        assert_eq!(crate::dsl::parse_args(&tokens), p.stages[0].args);
    }

    /// Rule 2 on a chain of steps: the text a step is handed is often the
    /// text the step before returned (noop returns its items as serde
    /// prints them, which is how the host hands them on), and that text's
    /// digest is not taken again — nor, when noop hands it back unchanged,
    /// for its output; any other text is hashed.
    #[test]
    fn a_text_returned_then_handed_on_is_hashed_once() {
        let Some(path) = crate::sandbox::test_guest("noop.wasm") else {
            return;
        };
        let tmp = tempfile::tempdir().unwrap();
        let cache = crate::sandbox::ArtifactCache::new(tmp.path().join("cache"));
        let component = crate::sandbox::load_file(&path, &cache).unwrap();
        let step = WasmStep::intern("noop", path.clone(), component);
        let store = crate::state::StateStore::new(tmp.path().join("state"));
        let mut ctx = crate::kernel::Context::builder(Mode::Tool, store.clone()).build();
        let args = Args::default();
        let a = vec![json!({"b": 1, "10": "é\"", "a": [1.5, null]}), json!(2)];
        let b = vec![json!({"other": true})];
        let text = |items: &[Item]| serde_json::to_string(items).unwrap();
        // (input, digests expected: a text returned just before is not hashed)
        for (input, taken) in [(&a, 2), (&a, 0), (&b, 2), (&a, 2), (&a, 0)] {
            ctx.journal = Journal::start(
                &store,
                RunStarted {
                    run_id: journal::new_run_id(),
                    digests: DigestRule::V2,
                    ..RunStarted::default()
                },
            )
            .unwrap();
            let (out, n) = run_once(step, &args, input, &ctx);
            assert_eq!(&out, input);
            assert_eq!(n, taken, "{input:?}");
            let s = recorded_step(&store, &ctx);
            let want = journal::digest(text(input).as_bytes());
            assert_eq!(s.input_digest.as_deref(), Some(want.as_str()));
            assert_eq!(s.output_digest.as_deref(), Some(want.as_str()));
        }
    }
}
