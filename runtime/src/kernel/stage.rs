//! The stage trait every pipeline stage implements (built-in commands and
//! WebAssembly steps alike), what a stage is handed and what it returns.

use super::Context;
use crate::dsl::Args;
use crate::error::{Error, Result};
use crate::value::{Item, Lazy};

/// A lazy stream of items between stages. Pulling drives the upstream stages.
pub type ItemStream = Box<dyn Iterator<Item = Result<Item>>>;

/// A stream whose items may still be JSON text ([`Lazy`]): what `exec
/// --json` gives, passed on unparsed by the stages that read only a field of
/// each item (see [`Command::run_lazy`]).
pub type LazyStream = Box<dyn Iterator<Item = Result<Lazy>>>;

/// What a stage produced.
pub enum Output {
    /// Items for the next stage (possibly lazy).
    Items(ItemStream),
    /// Items that may not be parsed yet; a stage without a
    /// [`Command::run_lazy`] of its own sees them parsed.
    Lazy(LazyStream),
    /// A renderer wrote `text` for the human; `items` are what it rendered
    /// (tool mode passes them on instead of printing).
    Rendered { text: String, items: Vec<Item> },
    /// Stop the pipeline here and ask a human (approval or input).
    Halt(Halt),
}

/// Why a pipeline stopped before its end.
#[derive(Debug, Clone, PartialEq)]
pub enum Halt {
    /// `approve`: continue only after a yes.
    Approval {
        prompt: String,
        items: Vec<Item>,
        preview: Option<String>,
    },
    /// `ask`: continue with a response that matches `schema`.
    Input {
        prompt: String,
        schema: Item,
        subject: Option<Item>,
        items: Vec<Item>,
    },
}

/// A flag a command accepts.
#[derive(Debug, Clone, Copy)]
pub struct FlagSpec {
    pub name: &'static str,
    /// Placeholder for the value (`"n"`), or `None` for a bare switch.
    pub value: Option<&'static str>,
    /// What the value means (`commands.list` types it in `argsSchema`).
    pub kind: FlagType,
    pub description: &'static str,
}

/// What a flag's value is. Values are always text in the pipeline language;
/// this is what the command reads the text as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlagType {
    /// A bare switch (`--emit`).
    Switch,
    /// Any text.
    Text,
    /// A number (`Number()` of the text).
    Number,
    /// A whole number.
    Integer,
    /// JSON text (`--args-json '{…}'`).
    Json,
}

/// What a stage does with `--flags` its signature does not declare (see
/// [`Command::other_flags`]; `executor::plan` checks them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OtherFlags {
    /// Refused before anything runs, with the nearest declared flag.
    Refuse,
    /// Refused before the first positional; after it they belong to the
    /// child command line (`exec`).
    RefuseBeforeCommand,
    /// Passed on as they are (a `wasi:cli/command` step, which declares none).
    Pass,
}

/// What a command is and what it accepts.
#[derive(Debug, Clone, Copy)]
pub struct Signature {
    pub name: &'static str,
    /// One line, shown by `commands.list`.
    pub description: &'static str,
    pub flags: &'static [FlagSpec],
    /// Description of the positional arguments, if any.
    pub positional: Option<&'static str>,
    /// `local_exec`, `writes_state`, …; empty for pure commands.
    pub side_effects: &'static [&'static str],
}

/// A runnable example: `input | pipeline` gives `output`.
#[derive(Debug, Clone, Copy)]
pub struct Example {
    pub description: &'static str,
    /// Pipeline text using this command (other built-ins may appear).
    pub pipeline: &'static str,
    /// JSON array of input items.
    pub input: &'static str,
    /// JSON array of the expected output items.
    pub output: &'static str,
}

/// A built-in command.
pub trait Command: Send + Sync {
    /// Name, flags and side effects.
    fn signature(&self) -> Signature;

    /// The text `lobster help <name>` prints.
    fn help(&self) -> &'static str;

    /// Runnable examples with expected output.
    fn examples(&self) -> &'static [Example] {
        &[]
    }

    /// Flag names accepted besides the signature's: the reference's
    /// spellings (`previewFromStdin`, `dryRun`, …), never shown in help.
    fn flag_aliases(&self) -> &'static [&'static str] {
        &[]
    }

    /// What happens to a `--flag` that is neither declared nor an alias.
    fn other_flags(&self) -> OtherFlags {
        OtherFlags::Refuse
    }

    /// Reject bad arguments before any stage of the pipeline runs.
    fn validate(&self, _args: &Args) -> Result<()> {
        Ok(())
    }

    /// Checks that need the run's [`Context`] (e.g. a wasm step's grants),
    /// made for every stage before the first stage runs.
    fn preflight(&self, _args: &Args, _ctx: &Context) -> Result<()> {
        Ok(())
    }

    /// The blake3 digest (64 hex digits) of the component behind this
    /// command, for wasm steps; `None` for built-ins. The resume layer
    /// records it so an approval is bound to the exact code.
    fn digest(&self) -> Option<&str> {
        None
    }

    /// Every interface the component behind this command imports (wasm
    /// steps; empty for built-ins), for the authority's component check.
    fn imports(&self) -> &[String] {
        &[]
    }

    /// `Some(n)` when this stage passes on exactly the first `n` items of its
    /// input and nothing else (`head`). The executor tells the stage before
    /// it, so `sort | head --n K` keeps only K items (see
    /// [`Command::run_limited`]).
    fn prefix_limit(&self, _args: &Args) -> Option<usize> {
        None
    }

    /// Run the stage knowing that only the first `limit` items of its output
    /// will ever be used (the next stage is a [`Command::prefix_limit`]).
    /// The output may then be cut to those items; the default ignores the
    /// hint. `sort` overrides it with a bounded top-K.
    fn run_limited(
        &self,
        args: &Args,
        input: ItemStream,
        _limit: usize,
        ctx: &Context,
    ) -> Result<Output> {
        self.run(args, input, ctx)
    }

    /// Run the stage over `input`. Lazy commands return [`Output::Items`]
    /// wrapping the input iterator; nothing upstream runs until pulled.
    fn run(&self, args: &Args, input: ItemStream, ctx: &Context) -> Result<Output>;

    /// Run the stage over items that may still be JSON text, with `limit`
    /// as in [`Command::run_limited`]. The default parses each item as it
    /// is pulled and runs [`Command::run`] (or `run_limited`); a stage that
    /// reads only part of each item overrides it and passes items on
    /// unparsed, which must give exactly what the default would.
    fn run_lazy(
        &self,
        args: &Args,
        input: LazyStream,
        limit: Option<usize>,
        ctx: &Context,
    ) -> Result<Output> {
        let input = parsed(input);
        match limit {
            Some(limit) => self.run_limited(args, input, limit, ctx),
            None => self.run(args, input, ctx),
        }
    }
}

/// Parse every item of a lazy stream as it is pulled.
pub fn parsed(input: LazyStream) -> ItemStream {
    Box::new(input.map(|item| item.and_then(parse_lazy)))
}

/// One item in full; validated text always parses, so the error is only a
/// guard.
pub fn parse_lazy(item: Lazy) -> Result<Item> {
    item.into_item()
        .map_err(|e| Error::runtime(format!("could not parse an item: {e}")))
}

/// Collect a stream, stopping at the first error.
pub fn collect(input: ItemStream) -> Result<Vec<Item>> {
    input.collect()
}

/// A stream over items already in memory.
pub fn stream_of(items: Vec<Item>) -> ItemStream {
    Box::new(items.into_iter().map(Ok))
}
