//! argv → request → outcome → stdout/stderr/exit code.
//!
//! Dispatch (first match wins): leading `--store URL` / `--color WHEN`; no
//! arguments or a leading `-h`/`--help` → help; `help [topic]`; `version`;
//! `doctor`; `graph`; `run`; `resume`; `call`; `check`, `bundle`, `lock`,
//! `keys` (the trust layer); `mcp`; `serve`; `steps precompile`;
//! `step new|build|test|publish|pull|sign` (step projects, shipping steps);
//! `store`; `runs`, `approvals`, `verify` (the run journal); `schema`;
//! `completions`; anything else is `run <argv…>`. The subcommands are listed
//! once, in [`subcommands`]. This room prints; nothing below it does.

mod argv;
pub mod bundle;
mod call;
pub mod check;
pub mod check_format;
pub mod color;
mod completions;
mod doctor;
pub mod help;
pub mod keys;
pub mod lock;
pub mod mcp;
pub mod os_args;
pub mod output;
pub mod progress;
pub mod replay;
pub mod resume_args;
mod run;
pub mod run_args;
pub mod runs;
mod runs_render;
pub mod serve;
pub mod step_project;
pub mod step_registry;
pub mod steps;
pub mod store;
pub mod subcommands;
mod topics;
pub mod trust_args;
pub mod workflow_file;

use crate::error::Error;
use crate::kernel::Mode;
use output::{human_error, write_once, Printer};
use run::{resume, run};
use topics::print_help;

/// Run the CLI with `args` (without the program name); returns the exit code.
pub fn main(args: Vec<String>) -> i32 {
    // The journal's writer starts its thread from the process's timer once
    // a window has passed (a short process writes its journal at its end).
    crate::state::journal::set_scheduler(|due, f| {
        crate::kernel::timer::at(due, f);
    });
    let code = dispatch(args);
    // Journal records still queued for the files store's writers.
    crate::state::journal::flush_all();
    code
}

fn dispatch(args: Vec<String>) -> i32 {
    let mut args = args;
    // Leading global flags, in any order: `--store URL`, `--color WHEN`.
    loop {
        let taken = match args.first().map(String::as_str) {
            Some(first) if first == "--store" || first.starts_with("--store=") => {
                store::take_store_flag(args)
            }
            Some(first) if first == "--color" || first.starts_with("--color=") => {
                color::take_color_flag(args)
            }
            _ => break,
        };
        args = match taken {
            Ok(args) => args,
            Err(msg) => {
                write_once("", &format!("Parse error: {msg}\n"));
                return 2;
            }
        };
    }
    let first = args.first().map(String::as_str);
    match first {
        None | Some("-h" | "--help") => print_help(&[]),
        Some("help") => print_help(&args[1..]),
        Some("version" | "--version" | "-v") => version(&args[1..]),
        Some("doctor") => doctor::doctor(&args[1..]),
        Some("graph") => graph(&args[1..]),
        Some("run") => run(&args[1..], false),
        Some("resume") => resume(&args[1..]),
        Some("call") => call::call(&args[1..]),
        Some("check") => check::check(&args[1..]),
        Some("bundle") => bundle::bundle(&args[1..]),
        Some("lock") => lock::lock(&args[1..]),
        Some("keys") => keys::keys(&args[1..]),
        Some("mcp") => mcp::mcp(&args[1..]),
        Some("serve") => serve::serve(&args[1..]),
        Some("steps") => steps::steps(&args[1..]),
        Some("step") => step_project::step(&args[1..]),
        Some("store") => store::store(&args[1..]),
        Some("runs") => runs::runs(&args[1..]),
        Some("approvals") => runs::approvals(&args[1..]),
        Some("verify") => runs::verify(&args[1..]),
        Some("replay") => replay::replay(&args[1..]),
        Some("schema") => schema(&args[1..]),
        Some("completions") => completions::completions(&args[1..]),
        Some(_) => run(&args, true),
    }
}

/// `lobster version`: the version alone, as the reference prints it;
/// `--verbose` adds the commit and the wasmtime version.
fn version(argv: &[String]) -> i32 {
    if argv.iter().any(|a| a == "--help" || a == "-h") {
        write_once(help::VERSION_HELP, "");
        return 0;
    }
    if argv.iter().any(|a| a == "--verbose") {
        write_once(
            &format!(
                "lobster {}\ncommit: {}\nwasmtime: {}\n",
                crate::VERSION,
                crate::COMMIT,
                crate::WASMTIME_VERSION
            ),
            "",
        );
        return 0;
    }
    write_once(&format!("{}\n", crate::VERSION), "");
    0
}

/// `lobster schema workflow`: the JSON Schema of workflow files.
fn schema(argv: &[String]) -> i32 {
    match argv.first().map(String::as_str) {
        Some("workflow") => {
            write_once(crate::workflow::schema::WORKFLOW_SCHEMA, "");
            0
        }
        Some("-h" | "--help") => {
            write_once(help::SCHEMA_HELP, "");
            0
        }
        None => {
            write_once("", help::SCHEMA_HELP);
            2
        }
        Some(other) => {
            let hint = crate::executor::suggest(other, ["workflow"])
                .map(|n| format!(" (did you mean `{n}`?)"))
                .unwrap_or_default();
            write_once(
                "",
                &format!("Parse error: lobster schema: unknown schema {other:?}{hint}; the one schema is `workflow`\n"),
            );
            2
        }
    }
}

fn graph(argv: &[String]) -> i32 {
    if argv.iter().any(|a| a == "--help" || a == "-h") {
        write_once(help::GRAPH_HELP, "");
        return 0;
    }
    let printer = Printer {
        mode: Mode::Human,
        max_bytes: None,
        text: None,
    };
    match crate::workflow::graph::graph_cli(argv) {
        Ok(text) => {
            write_once(&text, "");
            0
        }
        Err(e) => printer.error(&e),
    }
}

/// Human-readable error text, for callers outside this module.
pub fn render_error(e: &Error, text: Option<&str>) -> String {
    human_error(e, text)
}
