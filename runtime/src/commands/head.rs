//! `head`: the first N items, lazily (upstream stops being pulled after N).

use super::{Command, Example, FlagSpec, ItemStream, LazyStream, Output, Signature};
use crate::dsl::{Args, FlagValue};
use crate::error::{Error, Result};
use crate::kernel::Context;
use crate::value::string_to_number;

/// `head --n N` (default 10).
pub struct Head;

const HELP: &str = "head — take first N items\n\nUsage:\n  head --n 10\n";

impl Head {
    fn count(args: &Args) -> Result<usize> {
        let n = match args.flag("n") {
            None => 10.0,
            Some(FlagValue::Bool(_)) => 1.0, // Number(true)
            Some(FlagValue::Str(s)) => string_to_number(s),
        };
        if !n.is_finite() || n < 0.0 {
            return Err(Error::runtime("head --n must be a non-negative number"));
        }
        // JavaScript compares `i < n`, so a fractional n rounds up.
        Ok(n.ceil() as usize)
    }
}

impl Command for Head {
    fn signature(&self) -> Signature {
        Signature {
            name: "head",
            description: "Take first N items",
            flags: &[FlagSpec {
                name: "n",
                value: Some("N"),
                kind: super::FlagType::Number,
                description: "How many items to keep (default 10)",
            }],
            positional: None,
            side_effects: &[],
        }
    }

    fn help(&self) -> &'static str {
        HELP
    }

    fn examples(&self) -> &'static [Example] {
        &[
            Example {
                description: "keep the first two items",
                pipeline: "head --n 2",
                input: "[1, 2, 3]",
                output: "[1, 2]",
            },
            Example {
                description: "default is ten",
                pipeline: "head",
                input: "[1, 2]",
                output: "[1, 2]",
            },
            Example {
                description: "zero keeps nothing",
                pipeline: "head --n 0",
                input: "[1, 2]",
                output: "[]",
            },
        ]
    }

    fn validate(&self, args: &Args) -> Result<()> {
        Self::count(args).map(|_| ())
    }

    fn run(&self, args: &Args, input: ItemStream, _ctx: &Context) -> Result<Output> {
        let n = Self::count(args)?;
        Ok(Output::Items(Box::new(Take {
            input: Some(input),
            left: n,
        })))
    }

    fn prefix_limit(&self, args: &Args) -> Option<usize> {
        Self::count(args).ok()
    }

    /// The first N items, still unparsed.
    fn run_lazy(
        &self,
        args: &Args,
        input: LazyStream,
        _limit: Option<usize>,
        _ctx: &Context,
    ) -> Result<Output> {
        let n = Self::count(args)?;
        Ok(Output::Lazy(Box::new(Take {
            input: Some(input),
            left: n,
        })))
    }
}

/// `input.take(n)` that drops the upstream as soon as it has enough, so an
/// upstream `exec` child is killed at once rather than when the run ends.
struct Take<S> {
    input: Option<S>,
    left: usize,
}

impl<T, S: Iterator<Item = Result<T>>> Iterator for Take<S> {
    type Item = Result<T>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.left == 0 {
            self.input = None;
            return None;
        }
        let next = self.input.as_mut()?.next();
        match &next {
            Some(Ok(_)) => self.left -= 1,
            // An error or the end: nothing more will be pulled.
            _ => self.left = 0,
        }
        if self.left == 0 {
            self.input = None;
        }
        next
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn examples() {
        super::super::examples::check_examples(&super::Head);
    }
}
