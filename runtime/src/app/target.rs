//! The target rule, written once: what a run request runs.
//!
//! - [`RunTarget::Pipeline`]: pipeline text. A lone word with a workflow
//!   extension (`wf.lobster`) names a workflow file instead. Through
//!   `lobster mcp` it gets the same containment as [`RunTarget::Workflow`]'s
//!   files: opened beneath the run's working directory (relative, or
//!   absolute within it); a lone word that is absolute elsewhere or climbs
//!   out (`..`) is refused whether or not the file exists, so the answer
//!   tells nothing about files outside. `lobster call` keeps the
//!   reference's lookup (an existing workflow file runs, wherever it is).
//! - [`RunTarget::Workflow`]: a workflow of the catalog by its name, else a
//!   workflow file by the same rule.
//! - Where the door's settings refuse files of this process
//!   ([`super::Settings::no_server_files`], `lobster serve`'s tenants), a
//!   workflow is a catalog name only, a lone workflow word and `cwd` are
//!   refused, and no error names a file of the server.
//! - [`RunTarget::OperatorFile`] (`lobster run --file F`, or `lobster run
//!   F`) runs the file the operator named, wherever it is;
//!   [`RunTarget::WorkflowPath`] a file the door itself wrote (`lobster
//!   serve`'s `workflowText`).

use super::request::RunRequest;
use super::Settings;
use crate::error::{Error, Result};
use crate::workflow::has_workflow_extension;
use std::path::{Component, Path, PathBuf};

/// What a run request runs (see the module docs for the rule).
#[derive(Debug, Clone, PartialEq)]
pub enum RunTarget {
    /// Pipeline text (a lone workflow file's name runs that workflow).
    Pipeline(String),
    /// A catalog workflow by name, else a workflow file inside the run's
    /// working directory.
    Workflow(String),
    /// A workflow file the operator named on the command line, relative to
    /// the run's working directory or absolute.
    OperatorFile(String),
    /// A workflow file the front door itself wrote or chose; taken as is.
    WorkflowPath(PathBuf),
}

/// What a resolved target runs.
#[derive(Debug, Clone, PartialEq)]
pub enum Resolved {
    /// This pipeline text.
    Pipeline(String),
    /// The workflow file at this path.
    Workflow(PathBuf),
}

/// The hint of every refusal of a file of the server.
const SERVER_FILES: &str = "this gateway runs the workflows of your catalog (by name) and inline workflow text, not files of the server";

/// Refusals that do not need the run's directory: under
/// [`Settings::no_server_files`], `cwd`, a lone workflow word and a
/// workflow that is not in the catalog. Checked before anything is built.
pub fn check_request(settings: &Settings, request: &RunRequest) -> Result<()> {
    if !settings.no_server_files {
        return Ok(());
    }
    if request.cwd.is_some() {
        return Err(
            Error::parse("cwd is not accepted here: runs use the gateway's own directory")
                .with_hint(SERVER_FILES),
        );
    }
    match &request.target {
        RunTarget::Pipeline(text) => match lone_workflow_path(text) {
            Some(path) => Err(Error::parse(format!(
                "pipeline names a workflow file ({})",
                shown_name(path)
            ))
            .with_hint(SERVER_FILES)),
            None => Ok(()),
        },
        RunTarget::Workflow(name) if settings.catalog.get(name).is_none() => {
            Err(unknown_workflow(settings, name))
        }
        RunTarget::OperatorFile(path) => Err(unknown_workflow(settings, path)),
        _ => Ok(()),
    }
}

fn unknown_workflow(settings: &Settings, name: &str) -> Error {
    let names = settings.catalog.names();
    let hint = if names.is_empty() {
        "this tenant's catalog is empty".to_string()
    } else {
        format!("the workflows are: {}", names.join(", "))
    };
    Error::parse(format!(
        "unknown workflow: {} (not in this tenant's catalog)",
        shown_name(name)
    ))
    .with_hint(hint)
}

/// A name as an error may show it: only its last component, so an answer
/// never repeats a path of the server.
fn shown_name(name: &str) -> String {
    match Path::new(name).file_name() {
        Some(f) if Path::new(name).components().count() > 1 => f.to_string_lossy().into_owned(),
        _ => name.to_string(),
    }
}

/// Resolve `request`'s target for a run in `run_dir`.
pub fn resolve(settings: &Settings, request: &RunRequest, run_dir: &Path) -> Result<Resolved> {
    check_request(settings, request)?;
    match &request.target {
        RunTarget::Pipeline(text) => {
            let text = text.trim();
            match lone_workflow_path(text) {
                // `lobster mcp`'s `lobster_run`: contained like `workflow`.
                Some(path) if settings.door() == "mcp" => lone_path(run_dir, path),
                // `lobster call` keeps the reference's lookup: a lone path
                // to a workflow file runs it, wherever it is.
                Some(path) if looks_like_workflow_in(run_dir, path) => {
                    Ok(Resolved::Workflow(run_dir.join(path)))
                }
                _ => Ok(Resolved::Pipeline(text.to_string())),
            }
        }
        RunTarget::Workflow(name) => match settings.catalog.get(name) {
            Some(entry) => {
                if request.strict_args {
                    entry.check_arg_names(request.args.as_ref())?;
                }
                Ok(Resolved::Workflow(entry.file.clone()))
            }
            None => workflow_inside(run_dir, name).map(Resolved::Workflow),
        },
        RunTarget::OperatorFile(file) => Ok(Resolved::Workflow(run_dir.join(file))),
        RunTarget::WorkflowPath(path) => Ok(Resolved::Workflow(path.clone())),
    }
}

/// A pipeline that is one word with a workflow extension: a workflow file
/// inside `run_dir` when it is one, else the pipeline text it is (an
/// unknown command). Outside `run_dir` it is refused either way.
fn lone_path(run_dir: &Path, path: &str) -> Result<Resolved> {
    let p = Path::new(path);
    if p.is_absolute() || p.components().any(|c| c == Component::ParentDir) {
        return workflow_inside(run_dir, path).map(Resolved::Workflow);
    }
    if run_dir.join(p).is_file() || run_dir.join(p).is_symlink() {
        return workflow_inside(run_dir, path).map(Resolved::Workflow);
    }
    Ok(Resolved::Pipeline(path.to_string()))
}

/// Whether `text` (a path relative to `cwd`, or absolute) is an existing
/// workflow file.
fn looks_like_workflow_in(cwd: &Path, text: &str) -> bool {
    if Path::new(text).is_absolute() {
        return crate::workflow::looks_like_workflow(text);
    }
    let joined = cwd.join(text);
    has_workflow_extension(&joined) && joined.is_file()
}

/// Whether a (trimmed) pipeline text is one word: no stages, no arguments.
fn is_lone_word(text: &str) -> bool {
    !text.contains('|') && !text.contains(char::is_whitespace)
}

/// The path a pipeline text names when it is nothing but a workflow file's
/// name (`wf.lobster`).
pub fn lone_workflow_path(text: &str) -> Option<&str> {
    let text = text.trim();
    (is_lone_word(text) && has_workflow_extension(Path::new(text))).then_some(text)
}

/// `path` relative to `cwd` (or absolute and inside it), an existing
/// workflow file opened beneath it (no `..` above it, no symlink out;
/// [`crate::kernel::root`]). An absolute path elsewhere is refused without
/// looking at it.
pub fn workflow_inside(cwd: &Path, path: &str) -> Result<PathBuf> {
    use crate::kernel::root::{open_file, Refused};
    if path.trim().is_empty() {
        return Err(Error::parse("workflow must name a file or a workflow"));
    }
    if Path::new(path).is_absolute() {
        let base = cwd.canonicalize().unwrap_or_else(|_| cwd.to_path_buf());
        let relative = [&base, cwd]
            .iter()
            .find_map(|b| Path::new(path).strip_prefix(b).ok());
        return match relative {
            Some(rel) if !rel.as_os_str().is_empty() => {
                workflow_inside(&base, &rel.to_string_lossy())
            }
            _ => Err(Error::parse(format!(
                "workflow must be a path relative to the working directory (got {path})"
            ))),
        };
    }
    let base = cwd
        .canonicalize()
        .map_err(|e| Error::runtime(format!("cannot resolve working directory: {e}")))?;
    match open_file(&[base.as_path()], &base.join(path)) {
        Ok(opened) => Ok(opened.path),
        Err(Refused::Missing) => Err(Error::parse(format!("workflow file not found: {path}"))),
        Err(Refused::Outside) => Err(Error::parse(format!(
            "workflow must stay within the working directory (got {path})"
        ))),
        Err(Refused::WrongKind) => Err(Error::parse(format!("workflow is not a file: {path}"))),
        Err(Refused::Unreadable(e)) => Err(Error::runtime(format!(
            "cannot read workflow file {path}: {e}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workflow_paths_stay_inside() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("w.lobster"), "steps: []\n").unwrap();
        std::os::unix::fs::symlink("/etc/passwd", dir.path().join("out.lobster")).unwrap();
        assert!(workflow_inside(dir.path(), "w.lobster").is_ok());
        assert_eq!(
            workflow_inside(dir.path(), "/etc/passwd")
                .unwrap_err()
                .to_string(),
            "workflow must be a path relative to the working directory (got /etc/passwd)"
        );
        assert_eq!(
            workflow_inside(dir.path(), "nope.lobster")
                .unwrap_err()
                .to_string(),
            "workflow file not found: nope.lobster"
        );
        let escape = workflow_inside(dir.path(), "out.lobster");
        assert!(escape.is_err(), "{escape:?}");
    }

    #[test]
    fn a_lone_workflow_word_gets_the_same_containment_as_workflow() {
        let top = tempfile::tempdir().unwrap();
        let run = top.path().join("run");
        std::fs::create_dir_all(&run).unwrap();
        std::fs::write(run.join("w.lobster"), "steps: []\n").unwrap();
        std::fs::write(top.path().join("x.lobster"), "steps: []\n").unwrap();
        std::os::unix::fs::symlink(top.path().join("x.lobster"), run.join("link.lobster")).unwrap();
        let settings = Settings {
            door: "mcp",
            ..Settings::default()
        };
        let run_of = |text: &str| resolve(&settings, &RunRequest::pipeline(text), &run);
        assert!(matches!(run_of("w.lobster"), Ok(Resolved::Workflow(_))));
        // Missing inside: an unknown command, as any other word.
        assert_eq!(
            run_of("gone.lobster").unwrap(),
            Resolved::Pipeline("gone.lobster".into())
        );
        // Outside, present or not, and through a symlink: refused.
        for outside in ["../x.lobster", "../nope.lobster", "link.lobster"] {
            let e = run_of(outside).unwrap_err().to_string();
            assert!(e.contains("must stay within"), "{outside}: {e}");
        }
        let abs = top.path().join("x.lobster").display().to_string();
        assert!(run_of(&abs)
            .unwrap_err()
            .to_string()
            .contains("relative to the working directory"));
        // An absolute path inside the working directory is that file.
        let inside = run.join("w.lobster").display().to_string();
        assert!(matches!(run_of(&inside), Ok(Resolved::Workflow(_))));
    }

    #[test]
    fn a_gateway_names_no_file_of_the_server() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("secret.lobster"), "steps: []\n").unwrap();
        let settings = Settings {
            no_server_files: true,
            ..Settings::default()
        };
        let refused = |target: RunTarget| {
            let mut r = RunRequest::pipeline("x");
            r.target = target;
            resolve(&settings, &r, dir.path()).unwrap_err().to_string()
        };
        assert_eq!(
            refused(RunTarget::Pipeline("secret.lobster".into())),
            "pipeline names a workflow file (secret.lobster)"
        );
        assert_eq!(
            refused(RunTarget::Workflow("/srv/tenants/a/secret.lobster".into())),
            "unknown workflow: secret.lobster (not in this tenant's catalog)"
        );
        assert_eq!(
            refused(RunTarget::Workflow("secret.lobster".into())),
            "unknown workflow: secret.lobster (not in this tenant's catalog)"
        );
    }
}
