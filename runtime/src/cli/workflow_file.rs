//! Recognising workflow file paths on the command line (the files themselves
//! are run by the workflow layer).

pub use crate::workflow::{has_workflow_extension, looks_like_workflow, WORKFLOW_EXTENSIONS};

use super::output::{pretty_line, write_once, Printer};
use super::run_args::RunArgs;
use super::{build_context, supervise};
use crate::envelope::Status;
use crate::kernel::Mode;
use crate::resume::Paused;
use crate::value::Item;
use serde_json::{json, Map};

/// The workflow file `run` was asked for: `--file F`, or a single positional
/// without `|` that is an existing file with a workflow extension.
pub fn workflow_target(args: &RunArgs) -> Option<String> {
    match (&args.file, args.rest.as_slice()) {
        (Some(f), _) => Some(f.clone()),
        (None, [one]) if !one.contains('|') && looks_like_workflow(one) => Some(one.clone()),
        _ => None,
    }
}

/// `lobster run wf/missing.lobster`: a lone word that names a workflow file
/// (a workflow extension, no `|` or spaces) that does not exist is "not
/// found", not an unknown command.
pub fn missing_workflow(args: &RunArgs) -> Option<crate::Error> {
    let [one] = args.rest.as_slice() else {
        return None;
    };
    let path = std::path::Path::new(one);
    let lone = !one.contains('|') && !one.chars().any(char::is_whitespace);
    (args.file.is_none() && lone && has_workflow_extension(path) && !path.exists()).then(|| {
        crate::Error::parse(format!("Workflow file not found: {one}")).with_hint(format!(
            "no file {one} in {}; paths are relative to the working directory",
            std::env::current_dir().unwrap_or_default().display()
        ))
    })
}

/// Run (or dry-run) a workflow file and print the result; returns the exit code.
pub fn run_workflow(file: &str, args: &RunArgs, printer: &mut Printer) -> i32 {
    if args.file.is_some() && !args.rest.is_empty() {
        return printer.error(&crate::Error::parse(
            "run --file takes no pipeline text (got extra arguments)",
        ));
    }
    let ctx = build_context(
        args.mode,
        &args.limits,
        args.cwd.as_deref(),
        Some(&args.sandbox),
    );
    let ctx = match ctx {
        Ok(c) => c,
        Err(e) => return printer.error(&e),
    };
    printer.max_bytes = ctx.limits.max_output_bytes;
    let path = ctx.cwd.join(file);
    if args.dry_run {
        return match crate::workflow::dry_run::plan(&path, args.args_json.as_deref(), &ctx) {
            Ok(plan) => {
                write_once("", &plan);
                0
            }
            Err(e) => printer.error(&e),
        };
    }
    supervise(&ctx, printer);
    let result = crate::app::exec::run_workflow_file(&path, args.args_json.as_deref(), &ctx);
    match (args.mode, result) {
        (Mode::Human, Ok(paused)) => print_human(paused, printer),
        (_, other) => printer.finish(other),
    }
}

/// Human mode: the output's JSON when there is any; a pause prints
/// `{status, output, requiresApproval, requiresInput}` and how to resume.
fn print_human(paused: Paused, printer: &Printer) -> i32 {
    let env = &paused.envelope;
    let (out, err) = match env.status {
        Status::Ok if env.output.is_empty() => (String::new(), String::new()),
        Status::Ok => (pretty_line(&Item::Array(env.output.clone())), String::new()),
        _ => {
            let full = env.to_json();
            let mut m = Map::new();
            for k in ["status", "output", "requiresApproval", "requiresInput"] {
                m.insert(k.into(), full.get(k).cloned().unwrap_or(json!(null)));
            }
            let v = Item::Object(m);
            (pretty_line(&v), super::output::resume_hint(env))
        }
    };
    if printer.max_bytes.is_some_and(|cap| out.len() > cap) {
        return printer.error(&crate::Error::runtime(
            "lobster stdout exceeded maxStdoutBytes",
        ));
    }
    write_once(&out, &err);
    0
}
