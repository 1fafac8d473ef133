//! Run stages in order; items stream lazily from one stage to the next.

use super::{plan, Context, Mode};
use crate::dsl::Pipeline;
use crate::error::{Error, Result};
use crate::kernel::{parsed, stream_of, Halt, ItemStream, LazyStream, Output};
use crate::value::Item;

/// How a pipeline run ended (errors are the `Err` side).
#[derive(Debug, PartialEq)]
pub enum Outcome {
    /// Every stage ran. `rendered` holds what renderers wrote (human mode).
    Completed {
        items: Vec<Item>,
        rendered: Option<String>,
    },
    /// Stage `stage` halted for a human.
    Halted {
        stage: usize,
        halt: Halt,
        rendered: Option<String>,
    },
}

/// Run `pipeline` from stage `from`, feeding `input` to that stage.
///
/// The whole remaining pipeline is checked first, so nothing runs when any
/// stage is unknown or has bad arguments.
pub fn run_pipeline(
    pipeline: &Pipeline,
    from: usize,
    input: Vec<Item>,
    ctx: &Context,
) -> Result<Outcome> {
    if !ctx.journal.is_on() {
        return run_stages(pipeline, from, input, ctx, &mut Vec::new());
    }
    let mut begun = Vec::new();
    crate::journal::host::clear();
    let result = run_stages(pipeline, from, input, ctx, &mut begun);
    record_stages(pipeline, &begun, &result, ctx);
    crate::journal::host::clear();
    result
}

/// One `step` event per built-in stage that began (WebAssembly steps record
/// their own, with digests and fuel). Stages stream into each other, so a
/// stage's wall time is from its start to the pipeline's end; no per-item
/// digest is taken (the 1M-item path pays nothing per item).
fn record_stages(
    pipeline: &Pipeline,
    begun: &[(usize, bool, std::time::Instant)],
    result: &Result<Outcome>,
    ctx: &Context,
) {
    let halted_at = match result {
        Ok(Outcome::Halted { stage, .. }) => Some(*stage),
        _ => None,
    };
    for &(index, wasm, at) in begun {
        if wasm {
            continue;
        }
        let name = &pipeline.stages[index].name;
        let host = name == "exec";
        // How an `exec` ended, left by the stage (its exit code, input
        // digest, and its stdout as its stream kept it).
        let end = match host {
            true => ctx.journal.take_host_end().unwrap_or_default(),
            false => Default::default(),
        };
        let whole = end.output_digest.is_some() && end.exit_code.is_some();
        let _ = ctx
            .journal
            .append(crate::journal::Event::Step(crate::journal::Step {
                id: index.to_string(),
                step_kind: if host { "host" } else { "builtin" }.into(),
                name: name.clone(),
                wall_ms: at.elapsed().as_millis() as u64,
                input_digest: end.input_digest,
                output_digest: end.output_digest,
                exit_code: end.exit_code,
                output: end.output,
                // A replay stands the record in for the process when it
                // holds all its output and its exit code (else the stage
                // runs again, with `--rerun-host`).
                replayable: !host || whole,
                ok: result.is_ok() || halted_at.is_some_and(|h| h >= index),
                ..crate::journal::Step::default()
            }));
    }
}

fn run_stages(
    pipeline: &Pipeline,
    from: usize,
    input: Vec<Item>,
    ctx: &Context,
    begun: &mut Vec<(usize, bool, std::time::Instant)>,
) -> Result<Outcome> {
    let commands = plan(pipeline, from, ctx)?;
    for (offset, cmd) in commands.iter().enumerate() {
        let stage = &pipeline.stages[from + offset];
        cmd.preflight(&stage.args, ctx).map_err(|e| {
            if e.span().is_some() {
                e
            } else {
                e.at(stage.span.clone())
            }
        })?;
    }
    let mut rendered: Option<String> = None;
    let mut stream = Flow::Items(stream_of(input));
    for (offset, &cmd) in commands.iter().enumerate() {
        let index = from + offset;
        ctx.cancel.check()?;
        let stage = &pipeline.stages[index];
        if ctx.journal.is_on() {
            begun.push((index, cmd.digest().is_some(), std::time::Instant::now()));
        }
        // Plan-level fusion: a stage followed by a prefix (`head --n K`) may
        // keep only K items (`sort` then runs as a bounded top-K).
        let limit = commands
            .get(offset + 1)
            .and_then(|next| next.prefix_limit(&pipeline.stages[index + 1].args));
        // A replay answers an `exec` stage from the run's record.
        if ctx.journal.replaying().is_some() && stage.name == "exec" && cmd.digest().is_none() {
            ctx.journal.stand_in(index);
        }
        let output = match (stream, limit) {
            (Flow::Lazy(lazy), limit) => {
                cmd.run_lazy(&stage.args, checked_lazy(lazy, ctx), limit, ctx)?
            }
            (Flow::Items(items), Some(limit)) => {
                cmd.run_limited(&stage.args, checked(items, ctx), limit, ctx)?
            }
            (Flow::Items(items), None) => cmd.run(&stage.args, checked(items, ctx), ctx)?,
        };
        stream = match output {
            Output::Items(next) => Flow::Items(next),
            Output::Lazy(next) => Flow::Lazy(next),
            Output::Rendered { text, items } => Flow::Items(match ctx.mode {
                Mode::Tool => stream_of(items),
                Mode::Human => {
                    let out = rendered.get_or_insert_with(String::new);
                    out.push_str(&text);
                    check_output_cap(out.len(), ctx)?;
                    stream_of(Vec::new())
                }
            }),
            Output::Halt(halt) => {
                return Ok(Outcome::Halted {
                    stage: index,
                    halt,
                    rendered,
                })
            }
        };
    }
    let items = match stream {
        Flow::Items(items) => checked(items, ctx),
        Flow::Lazy(lazy) => parsed(checked_lazy(lazy, ctx)),
    };
    let items = items.collect::<Result<Vec<_>>>()?;
    Ok(Outcome::Completed { items, rendered })
}

/// The stream between two stages: items, or items that may still be JSON
/// text (from `exec --json`; see [`crate::commands::Command::run_lazy`]).
enum Flow {
    Items(ItemStream),
    Lazy(LazyStream),
}

/// [`checked`] for a lazy stream.
fn checked_lazy(stream: LazyStream, ctx: &Context) -> LazyStream {
    let cancel = ctx.cancel.clone();
    Box::new(stream.map(move |item| {
        cancel.check()?;
        item
    }))
}

/// Stop pulling as soon as the run is cancelled.
fn checked(stream: ItemStream, ctx: &Context) -> ItemStream {
    let cancel = ctx.cancel.clone();
    Box::new(stream.map(move |item| {
        cancel.check()?;
        item
    }))
}

fn check_output_cap(len: usize, ctx: &Context) -> Result<()> {
    match ctx.limits.max_output_bytes {
        Some(cap) if len > cap => Err(Error::runtime("lobster stdout exceeded maxStdoutBytes")),
        _ => Ok(()),
    }
}
