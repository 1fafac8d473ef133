//! Run stages in order; items stream lazily from one stage to the next.

use super::{plan, Context, Mode};
use crate::dsl::Pipeline;
use crate::error::{Error, Result};
use crate::kernel::{stream_of, Halt, ItemStream, Output};
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
    let mut stream: ItemStream = stream_of(input);
    for (offset, &cmd) in commands.iter().enumerate() {
        let index = from + offset;
        ctx.cancel.check()?;
        let stage = &pipeline.stages[index];
        // Plan-level fusion: a stage followed by a prefix (`head --n K`) may
        // keep only K items (`sort` then runs as a bounded top-K).
        let limit = commands
            .get(offset + 1)
            .and_then(|next| next.prefix_limit(&pipeline.stages[index + 1].args));
        let output = match limit {
            Some(limit) => cmd.run_limited(&stage.args, checked(stream, ctx), limit, ctx)?,
            None => cmd.run(&stage.args, checked(stream, ctx), ctx)?,
        };
        stream = match output {
            Output::Items(next) => next,
            Output::Rendered { text, items } => match ctx.mode {
                Mode::Tool => stream_of(items),
                Mode::Human => {
                    let out = rendered.get_or_insert_with(String::new);
                    out.push_str(&text);
                    check_output_cap(out.len(), ctx)?;
                    stream_of(Vec::new())
                }
            },
            Output::Halt(halt) => {
                return Ok(Outcome::Halted {
                    stage: index,
                    halt,
                    rendered,
                })
            }
        };
    }
    let items = checked(stream, ctx).collect::<Result<Vec<_>>>()?;
    Ok(Outcome::Completed { items, rendered })
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
