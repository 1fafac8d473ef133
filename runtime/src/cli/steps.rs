//! `lobster steps precompile [--steps DIR]…`: compile every component on the
//! step path into the cache (a gateway runs it at deploy time, so no run
//! pays a first compile).

use super::output::{finish, human_error, write_once};
use crate::error::{Error, Result};
use crate::sandbox::{load_file, ArtifactCache, CacheOutcome, StepPath};
use crate::state::StateStore;
use std::path::PathBuf;
use std::time::Instant;

/// `lobster help steps`.
pub const STEPS_HELP: &str = "lobster steps — manage the WebAssembly steps on the step path

Usage:
  lobster steps precompile [--steps DIR]...

precompile: compile every component on the step path (--steps DIRs,
LOBSTER_STEP_PATH, ./steps) into the compiled cache under the state
directory, one line per component (name, size, cached or compiled, time).
Run it at deploy time: a Python step compiles for ~16 s once, then loads
from the cache in milliseconds. Exit 1 when a component fails to load.

Example:
  lobster steps precompile --steps examples/steps/target/wasm32-wasip2/release
";

/// Entry point of `lobster steps ARGS`.
pub fn steps(argv: &[String]) -> i32 {
    if argv.is_empty() || argv.iter().any(|a| a == "--help" || a == "-h") {
        write_once(STEPS_HELP, "");
        return 0;
    }
    match argv[0].as_str() {
        "precompile" => finish(
            parse_dirs(&argv[1..])
                .and_then(|dirs| precompile(&dirs))
                .map(|(text, ok)| (text, if ok { 0 } else { 1 })),
        ),
        other => {
            let e = Error::parse(format!(
                "lobster steps: unknown subcommand {other:?} (expected precompile)"
            ))
            .with_hint(super::subcommands::near_word(other, &["precompile"]));
            write_once("", &human_error(&e, None));
            2
        }
    }
}

fn parse_dirs(argv: &[String]) -> Result<Vec<PathBuf>> {
    let mut dirs = Vec::new();
    let mut i = 0;
    while i < argv.len() {
        match argv[i].as_str() {
            "--steps" => {
                let d = argv.get(i + 1).ok_or_else(|| {
                    Error::parse("--steps needs a directory: lobster steps precompile --steps DIR")
                })?;
                dirs.push(PathBuf::from(d));
                i += 2;
            }
            s if s.starts_with("--steps=") => {
                dirs.push(PathBuf::from(&s["--steps=".len()..]));
                i += 1;
            }
            other if other.starts_with("--") => {
                return Err(super::subcommands::unknown_flag("steps", other, &["--steps"]))
            }
            other => {
                return Err(Error::parse(format!(
                    "lobster steps precompile: unexpected argument {other:?} (usage: lobster steps precompile [--steps DIR]...)"
                )))
            }
        }
    }
    Ok(dirs)
}

/// Compile every component on the step path; the report and whether all loaded.
fn precompile(extra: &[PathBuf]) -> Result<(String, bool)> {
    let cwd = std::env::current_dir().map_err(|e| Error::runtime(format!("cwd: {e}")))?;
    let path = StepPath::from_env(&cwd, extra);
    let cache = ArtifactCache::in_state_dir(StateStore::from_env().dir());
    let mut out = String::new();
    let mut ok = true;
    let mut count = 0;
    for dir in path.dirs() {
        let files = crate::sandbox::survey::wasm_files(dir);
        for file in files {
            count += 1;
            let size = std::fs::metadata(&file).map(|m| m.len()).unwrap_or(0);
            let started = Instant::now();
            match load_file(&file, &cache) {
                Ok(c) => {
                    crate::sandbox::resolve::remember_name(&cache, &c);
                    let name = c
                        .meta()
                        .map(|m| m.name.clone())
                        .unwrap_or_else(|| "(wasi:cli/command)".into());
                    let how = match c.cache_outcome() {
                        CacheOutcome::Hit => "already cached".to_string(),
                        CacheOutcome::Compiled => "compiled".to_string(),
                        CacheOutcome::Joined => {
                            "compiled (shared with a load at the same time)".to_string()
                        }
                        CacheOutcome::Recompiled(why) => format!("recompiled ({why})"),
                    };
                    out.push_str(&format!(
                        "{name}\t{}\t{}\t{how} in {:.1}s\n",
                        file.display(),
                        super::progress::size(size),
                        started.elapsed().as_secs_f64()
                    ));
                }
                Err(e) => {
                    ok = false;
                    out.push_str(&format!("error\t{e}\n"));
                }
            }
        }
    }
    match cache.dir() {
        Some(d) if count > 0 => out.push_str(&format!(
            "{count} component{} ready in {}\n",
            if count == 1 { "" } else { "s" },
            d.display()
        )),
        _ => {
            return Err(Error::runtime(format!(
                "no .wasm components on the step path ({}); give --steps DIR",
                path.dirs()
                    .iter()
                    .map(|d| d.display().to_string())
                    .collect::<Vec<_>>()
                    .join(":")
            )))
        }
    }
    Ok((out, ok))
}
