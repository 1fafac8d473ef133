//! The typed options a run is started with, whatever door it came through:
//! the limits a caller asks for ([`LimitArgs`], resolved with the tool
//! contract's defaults and clamps), the working directory it names
//! ([`resolve_cwd`]), and what every run of a front door gets for its
//! WebAssembly steps ([`StepOptions`]: a step path and the grants). Doors
//! turn their flags or fields into these; nothing here parses a wire format.

use crate::error::{Error, Result};
use crate::kernel::{Grants, Limits, Mode};
use std::path::{Component, Path, PathBuf};
use std::time::Duration;

/// Default whole-run timeout in tool mode.
pub const DEFAULT_TIMEOUT_MS: u64 = 20_000;
/// Smallest timeout accepted (smaller values are raised to it).
pub const MIN_TIMEOUT_MS: u64 = 200;
/// Default output cap in tool mode.
pub const DEFAULT_MAX_STDOUT_BYTES: usize = 512_000;
/// Smallest output cap accepted (smaller values are raised to it).
pub const MIN_MAX_STDOUT_BYTES: usize = 1024;

/// Limit settings as given (flags, request fields, environment).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LimitArgs {
    pub timeout_ms: Option<u64>,
    pub max_stdout_bytes: Option<u64>,
    /// `--policy FILE`: the operator policy (see [`crate::policy`]); refused
    /// when `LOBSTER_POLICY` is set, so a caller cannot swap the operator's.
    pub policy: Option<String>,
}

impl LimitArgs {
    /// Effective limits: clamped, with tool-mode defaults.
    ///
    /// `LOBSTER_MAX_OUTPUT_BYTES` is not read here: as in the reference it
    /// caps each child process exactly, from the child's own environment
    /// (see `process::spawn::env_output_cap`); the 1024 minimum belongs to
    /// the tool's `maxStdoutBytes` only.
    pub fn resolve(&self, mode: Mode) -> Result<Limits> {
        let tool = mode == Mode::Tool;
        let timeout_ms = self
            .timeout_ms
            .or(tool.then_some(DEFAULT_TIMEOUT_MS))
            .map(|ms| ms.max(MIN_TIMEOUT_MS));
        let cap = self
            .max_stdout_bytes
            .or(tool.then_some(DEFAULT_MAX_STDOUT_BYTES as u64))
            .map(|b| (b as usize).max(MIN_MAX_STDOUT_BYTES));
        Ok(Limits {
            timeout: timeout_ms.map(Duration::from_millis),
            max_output_bytes: cap,
            ..Limits::default()
        })
    }
}

/// Resolve a requested working directory: relative, and inside `base`.
/// The directory is opened beneath `base` through a capability handle
/// ([`crate::kernel::root::open_dir`]): `..` and symlinks are followed only
/// while they stay inside, and the answer is where the handle really is.
pub fn resolve_cwd(base: &Path, requested: &str) -> Result<PathBuf> {
    use crate::kernel::root::{open_dir, Refused};
    let requested_path = Path::new(requested);
    if requested_path.is_absolute() {
        return Err(Error::parse("cwd must be a relative path"));
    }
    let outside = || Error::parse("cwd must stay within the gateway working directory");
    // Reject lexical escapes even when the target does not exist.
    let mut depth: i64 = 0;
    for c in requested_path.components() {
        match c {
            Component::ParentDir => depth -= 1,
            Component::Normal(_) => depth += 1,
            _ => {}
        }
        if depth < 0 {
            return Err(outside());
        }
    }
    match open_dir(base, requested_path) {
        Ok(dir) => Ok(dir.path),
        Err(Refused::Outside) => Err(outside()),
        Err(Refused::WrongKind) => {
            Err(Error::parse(format!("cwd is not a directory: {requested}")))
        }
        Err(Refused::Missing) => Err(Error::parse(format!("cwd does not exist: {requested}"))),
        Err(Refused::Unreadable(e)) => Err(Error::runtime(format!(
            "cannot open working directory {requested}: {e}"
        ))),
    }
}

/// What every run of a front door gets for its WebAssembly steps: extra
/// step directories (searched before `LOBSTER_STEP_PATH` and `./steps`) and
/// the grants (`--allow-*`); each run gets them with a fresh clock and seed.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StepOptions {
    /// `--steps DIR`, in order.
    pub steps: Vec<PathBuf>,
    /// `--allow-read`, `--allow-write`, `--allow-env`, `--allow-tool`,
    /// `--allow-llm`.
    pub grants: Grants,
}

impl StepOptions {
    /// The grants of one run: these, with the run's own clock and seed
    /// (recorded with any pause).
    pub fn grants_for_run(&self) -> Grants {
        self.grants.fresh_run()
    }
}

/// Flags that say where WebAssembly steps come from and what they may touch,
/// as a door's caller wrote them (turned into [`StepOptions`] with
/// `TryFrom`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SandboxArgs {
    /// `--steps DIR` (repeatable): searched before `LOBSTER_STEP_PATH` and `./steps`.
    pub steps: Vec<String>,
    /// `--allow-read DIR[:/GUEST]` (repeatable).
    pub allow_read: Vec<String>,
    /// `--allow-write DIR[:/GUEST]` (repeatable).
    pub allow_write: Vec<String>,
    /// `--allow-env NAME` (repeatable).
    pub allow_env: Vec<String>,
    /// `--allow-tool NAME` (repeatable): gateway tools steps may call through the broker.
    pub allow_tool: Vec<String>,
    /// `--allow-llm`: steps may call a model through the broker.
    pub allow_llm: bool,
}

impl TryFrom<&SandboxArgs> for StepOptions {
    type Error = Error;

    /// The step path and grants the flags ask for (each run gets the
    /// grants with a fresh clock and random seed).
    fn try_from(args: &SandboxArgs) -> Result<Self> {
        let mut builder = Grants::builder();
        for spec in &args.allow_read {
            builder = builder.allow_read(spec);
        }
        for spec in &args.allow_write {
            builder = builder.allow_write(spec);
        }
        for name in &args.allow_env {
            builder = builder.allow_env(name);
        }
        for name in &args.allow_tool {
            builder = builder.allow_tool(name);
        }
        let grants = builder
            .allow_llm(args.allow_llm)
            .build()
            .map_err(|e| Error::parse(e.to_string()))?;
        Ok(StepOptions {
            steps: args.steps.iter().map(PathBuf::from).collect(),
            grants,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clamps_and_defaults() {
        let l = LimitArgs {
            timeout_ms: Some(5),
            max_stdout_bytes: Some(10),
            policy: None,
        }
        .resolve(Mode::Human)
        .unwrap();
        assert_eq!(l.timeout, Some(Duration::from_millis(200)));
        assert_eq!(l.max_output_bytes, Some(1024));
        let l = LimitArgs::default().resolve(Mode::Tool).unwrap();
        assert_eq!(l.timeout, Some(Duration::from_millis(20_000)));
        assert_eq!(l.max_output_bytes, Some(512_000));
    }

    #[test]
    fn cwd_rules() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::os::unix::fs::symlink("/", dir.path().join("root")).unwrap();
        assert!(resolve_cwd(dir.path(), "sub").is_ok());
        assert!(resolve_cwd(dir.path(), "sub/..").is_ok());
        assert_eq!(
            resolve_cwd(dir.path(), "/tmp").unwrap_err().to_string(),
            "cwd must be a relative path"
        );
        let escape = "cwd must stay within the gateway working directory";
        assert_eq!(
            resolve_cwd(dir.path(), "../x").unwrap_err().to_string(),
            escape
        );
        assert_eq!(
            resolve_cwd(dir.path(), "root").unwrap_err().to_string(),
            escape
        );
        // A link inside that leads out through `..` is refused too.
        std::os::unix::fs::symlink("sub/../..", dir.path().join("up")).unwrap();
        assert_eq!(
            resolve_cwd(dir.path(), "up").unwrap_err().to_string(),
            escape
        );
        std::fs::write(dir.path().join("file"), "").unwrap();
        assert_eq!(
            resolve_cwd(dir.path(), "file").unwrap_err().to_string(),
            "cwd is not a directory: file"
        );
        assert_eq!(
            resolve_cwd(dir.path(), "nope").unwrap_err().to_string(),
            "cwd does not exist: nope"
        );
        // The answer is where the directory really is.
        assert_eq!(
            resolve_cwd(dir.path(), "sub").unwrap(),
            dir.path().canonicalize().unwrap().join("sub")
        );
    }
}
