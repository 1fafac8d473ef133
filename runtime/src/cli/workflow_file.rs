//! Recognising workflow file paths on the command line (the files themselves
//! are run by the workflow layer).

pub use crate::workflow::{has_workflow_extension, looks_like_workflow, WORKFLOW_EXTENSIONS};

use super::output::{pretty_line, write_once, Printer};
use super::run_args::RunArgs;
use crate::envelope::Status;
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

/// Human mode: the output's JSON when there is any; a pause prints
/// `{status, output, requiresApproval, requiresInput}` and how to resume.
pub fn print_human(paused: Paused, printer: &Printer) -> i32 {
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
