//! Starting one child, feeding it, capturing it, and stopping it with the run.

use super::capture::{spawn_reader, spawn_writer, Captured, Stream};
use super::shell::shell_command;
use super::signals::kill_group;
use crate::error::{Error, Result};
use crate::kernel::{Cancel, CancelReason, Context, GroupGuard};
use std::collections::BTreeMap;
use std::io::ErrorKind;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::Duration;

/// How often a blocked capture looks at the cancellation flag.
const CANCEL_POLL: Duration = Duration::from_millis(50);
/// Grace between SIGTERM and SIGKILL when a signal cancels the run.
const TERM_GRACE: Duration = Duration::from_millis(250);

/// What to run: a program with argv, or a line for the shell.
///
/// The two stay separate all the way to the spawn so that shell syntax can
/// never leak into a direct argv call (the reference's #139/#141).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// `program args…`, spawned directly (no shell); `program` is looked up
    /// in the child environment's `PATH` unless it contains a `/`.
    Argv { program: String, args: Vec<String> },
    /// A shell line, run by [`shell_command`] (`/bin/sh -c` or `LOBSTER_SHELL`).
    Shell { line: String },
}

/// One child process to run to completion. Build it, then call [`Invocation::run`].
///
/// ```no_run
/// # fn demo(ctx: &lobster::executor::Context) -> lobster::Result<()> {
/// use lobster::process::Invocation;
/// let done = Invocation::shell("sort")
///     .stdin(b"b\na\n".to_vec())
///     .not_found("exec shell not found; check LOBSTER_SHELL or ComSpec")
///     .run(ctx)?;
/// assert_eq!(done.stdout, "a\nb\n");
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Invocation {
    target: Target,
    stdin: Option<Vec<u8>>,
    not_found: Option<String>,
    env: Option<BTreeMap<String, String>>,
    cwd: Option<PathBuf>,
    max_output_bytes: Option<Option<usize>>,
}

/// Where a child's output cap comes from.
///
/// Two sources, two contracts: the tool's `maxStdoutBytes`
/// (`--max-stdout-bytes`, at least 1024, also caps the envelope) and the
/// reference's `LOBSTER_MAX_OUTPUT_BYTES` in the child's environment (the
/// process's, or a workflow step's `env:`), which caps each stream of that
/// child exactly, with no minimum. The smaller one is in force.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum CapSource {
    /// The run's `maxStdoutBytes`: `lobster stdout exceeded maxStdoutBytes`.
    Tool,
    /// `LOBSTER_MAX_OUTPUT_BYTES=n`: `Process output exceeded n bytes`.
    Env(usize),
}

impl CapSource {
    /// The error for a stream that went over the cap.
    pub(super) fn overflow(self, stream: &str) -> Error {
        match self {
            CapSource::Tool => Error::runtime(format!("lobster {stream} exceeded maxStdoutBytes")),
            CapSource::Env(n) => Error::runtime(format!("Process output exceeded {n} bytes")),
        }
    }
}

/// `LOBSTER_MAX_OUTPUT_BYTES` of a child's environment, read as the reference
/// reads it: unset or blank is no cap; otherwise a positive integer (digits
/// only, at most 2^53 - 1), else the reference's error.
pub fn env_output_cap(env: &BTreeMap<String, String>) -> Result<Option<usize>> {
    let Some(raw) = env.get("LOBSTER_MAX_OUTPUT_BYTES").map(|v| v.trim()) else {
        return Ok(None);
    };
    if raw.is_empty() {
        return Ok(None);
    }
    const MAX_SAFE: u64 = (1 << 53) - 1;
    match raw.parse::<u64>() {
        Ok(n) if raw.bytes().all(|b| b.is_ascii_digit()) && n > 0 && n <= MAX_SAFE => {
            Ok(Some(usize::try_from(n).unwrap_or(usize::MAX)))
        }
        _ => Err(Error::runtime(
            "LOBSTER_MAX_OUTPUT_BYTES must be a positive safe integer (bytes)",
        )),
    }
}

/// A child just spawned by [`Invocation::start`].
pub(super) struct Started {
    pub child: Child,
    /// Its process group (= its pid).
    pub pgid: i32,
    /// The output cap in force for this child.
    pub cap: Option<usize>,
    /// Where that cap came from (it decides the overflow message).
    pub cap_source: CapSource,
    /// Keeps the group in the run's kill set.
    pub guard: GroupGuard,
}

/// A child that ran to its end (any exit status).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finished {
    /// Everything written to stdout, decoded as UTF-8 (invalid bytes become U+FFFD).
    pub stdout: String,
    /// Everything written to stderr, decoded the same way.
    pub stderr: String,
    /// The exit code, or `None` when a signal ended the child.
    pub code: Option<i32>,
    /// The signal that ended the child, if one did.
    pub signal: Option<i32>,
}

impl Finished {
    /// Exit code 0.
    pub fn success(&self) -> bool {
        self.code == Some(0)
    }

    /// The code as JavaScript would print it: the number, or `null` for a signal.
    pub fn code_text(&self) -> String {
        self.code
            .map_or_else(|| "null".to_string(), |c| c.to_string())
    }
}

impl Invocation {
    /// Run `program` directly with `args`.
    pub fn argv(
        program: impl Into<String>,
        args: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        Self::new(Target::Argv {
            program: program.into(),
            args: args.into_iter().map(Into::into).collect(),
        })
    }

    /// Run `line` through the shell.
    pub fn shell(line: impl Into<String>) -> Self {
        Self::new(Target::Shell { line: line.into() })
    }

    /// Run `target`.
    pub fn new(target: Target) -> Self {
        Invocation {
            target,
            stdin: None,
            not_found: None,
            env: None,
            cwd: None,
            max_output_bytes: None,
        }
    }

    /// Bytes written to the child's stdin (then closed). Without this the
    /// child's stdin is an empty pipe, closed at once.
    pub fn stdin(mut self, bytes: Vec<u8>) -> Self {
        self.stdin = Some(bytes);
        self
    }

    /// The error message when the program (or the shell) does not exist.
    /// Default: `command not found: <program>`.
    pub fn not_found(mut self, message: impl Into<String>) -> Self {
        self.not_found = Some(message.into());
        self
    }

    /// Use this environment instead of `ctx.env` (a workflow step's own env).
    pub fn env(mut self, env: BTreeMap<String, String>) -> Self {
        self.env = Some(env);
        self
    }

    /// Use this working directory instead of `ctx.cwd`.
    pub fn cwd(mut self, cwd: impl Into<PathBuf>) -> Self {
        self.cwd = Some(cwd.into());
        self
    }

    /// Cap stdout and stderr at `cap` bytes each instead of
    /// `ctx.limits.max_output_bytes` (`None`: no cap).
    pub fn max_output_bytes(mut self, cap: Option<usize>) -> Self {
        self.max_output_bytes = Some(cap);
        self
    }

    /// What will be run.
    pub fn target(&self) -> &Target {
        &self.target
    }

    /// Run the child to its end.
    ///
    /// - It gets its own process group, `ctx.cwd`, and exactly `ctx.env`
    ///   (the inherited environment is cleared first).
    /// - The group is registered with `ctx.cancel`, so a timeout or a signal
    ///   kills the whole tree; the run's cancellation error is returned then.
    /// - stdout or stderr beyond the cap kills the group at once and fails
    ///   with `lobster stdout exceeded maxStdoutBytes` (or `stderr`), or with
    ///   `Process output exceeded N bytes` when the child's
    ///   `LOBSTER_MAX_OUTPUT_BYTES` set the cap (see [`CapSource`]).
    /// - A non-zero exit is **not** an error here: look at [`Finished::code`].
    pub fn run(&self, ctx: &Context) -> Result<Finished> {
        let Started {
            mut child,
            pgid,
            cap,
            cap_source,
            guard: _guard,
        } = self.start(ctx)?;
        let result = capture(&mut child, self.stdin.clone(), cap, cap_source, pgid, ctx);
        if result.is_err() {
            // Never leave a tree behind on a failure of ours.
            kill_group(pgid, libc::SIGKILL);
        }
        let outputs = match result {
            Ok(outputs) => outputs,
            Err(e) => {
                let _ = child.wait();
                return Err(e);
            }
        };
        let status = child.wait()?;

        if ctx.cancel.is_cancelled() {
            stop_after_cancel(pgid, &ctx.cancel);
            return Err(ctx
                .cancel
                .check()
                .err()
                .unwrap_or_else(|| Error::runtime("cancelled")));
        }
        let (stdout, stderr) = outputs?;
        Ok(Finished {
            stdout: String::from_utf8_lossy(&stdout).into_owned(),
            stderr: String::from_utf8_lossy(&stderr).into_owned(),
            code: status.code(),
            signal: status.signal(),
        })
    }

    /// Spawn the child (own process group, cwd, env, piped stdio) and
    /// register its group with `ctx.cancel`. Shared by [`Invocation::run`]
    /// and [`Invocation::stream`](super::stream).
    pub(super) fn start(&self, ctx: &Context) -> Result<Started> {
        ctx.cancel.check()?;
        let env = self.env.as_ref().unwrap_or(&ctx.env);
        let cwd = self.cwd.as_deref().unwrap_or(&ctx.cwd);
        let tool_cap = self.max_output_bytes.unwrap_or(ctx.limits.max_output_bytes);
        let (cap, cap_source) = match (tool_cap, env_output_cap(env)?) {
            (Some(t), Some(e)) if e < t => (Some(e), CapSource::Env(e)),
            (None, Some(e)) => (Some(e), CapSource::Env(e)),
            (t, _) => (t, CapSource::Tool),
        };

        let (program, args) = match &self.target {
            Target::Argv { program, args } => (program.clone(), args.clone()),
            Target::Shell { line } => {
                let shell = shell_command(line, env);
                (shell.program, shell.args)
            }
        };
        if program.is_empty() {
            return Err(self.not_found_error(&program));
        }
        // The authority is asked again at the moment of use: a plan-time
        // check that missed a host process cannot let it start.
        if let Err(r) = ctx.authority().judge(&crate::policy::Request::HostProcess) {
            return Err(Error::runtime(format!(
                "policy refuses this run: a host process ({program}) was about to start, which {r}"
            )));
        }

        let mut command = std::process::Command::new(&program);
        command
            .args(&args)
            .env_clear()
            .envs(env.iter())
            .current_dir(cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        // Once the reaper watches, it kills this child's group if we die
        // (however we die), and the spawn can be a `posix_spawn` (vfork: no
        // copy of this process's page tables, no copy-on-write faults in
        // its threads afterwards, which cost a long-running server more
        // than the child itself). Before that, `PR_SET_PDEATHSIG` does it,
        // which needs a `fork`.
        if !crate::kernel::reaper::watching() {
            die_with_parent(&mut command);
        }
        let mut child = command
            .spawn()
            .map_err(|e| self.spawn_error(e, &program, cwd))?;
        // The child leads its own group: its pid is the group id.
        let Ok(pgid) = i32::try_from(child.id()) else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(Error::runtime(format!(
                "cannot track {program}: pid out of range"
            )));
        };
        let guard = ctx.cancel.register_group(pgid);
        Ok(Started {
            child,
            pgid,
            cap,
            cap_source,
            guard,
        })
    }

    /// The bytes for the child's stdin, if any.
    pub(super) fn stdin_bytes(&self) -> Option<&[u8]> {
        self.stdin.as_deref()
    }

    fn not_found_error(&self, program: &str) -> Error {
        Error::runtime(
            self.not_found
                .clone()
                .unwrap_or_else(|| format!("command not found: {program}")),
        )
    }

    fn spawn_error(&self, e: std::io::Error, program: &str, cwd: &Path) -> Error {
        if e.kind() == ErrorKind::NotFound {
            // std reports a missing working directory as ENOENT too.
            if !cwd.is_dir() {
                return Error::runtime(format!("working directory not found: {}", cwd.display()));
            }
            return self.not_found_error(program);
        }
        Error::runtime(format!("cannot start {program}: {e}"))
    }
}

type Outputs = Result<(Vec<u8>, Vec<u8>)>;

/// Feed stdin and collect stdout/stderr. The outer `Err` means "stop now and
/// kill the group" (cancelled, thread failure); the inner one is an output
/// problem to report after the child was reaped (cap exceeded, read error).
fn capture(
    child: &mut Child,
    stdin: Option<Vec<u8>>,
    cap: Option<usize>,
    cap_source: CapSource,
    pgid: i32,
    ctx: &Context,
) -> Result<Outputs> {
    if let Some(pipe) = child.stdin.take() {
        match stdin {
            Some(bytes) if !bytes.is_empty() => spawn_writer(pipe, bytes)?,
            _ => drop(pipe),
        }
    }
    let (tx, rx) = mpsc::channel();
    let mut pending = 0;
    if let Some(pipe) = child.stdout.take() {
        spawn_reader(Stream::Stdout, pipe, cap, tx.clone())?;
        pending += 1;
    }
    if let Some(pipe) = child.stderr.take() {
        spawn_reader(Stream::Stderr, pipe, cap, tx.clone())?;
        pending += 1;
    }
    drop(tx);

    let (mut stdout, mut stderr) = (Vec::new(), Vec::new());
    let mut problem: Option<Error> = None;
    while pending > 0 {
        if ctx.cancel.is_cancelled() {
            // The cancel already signalled the group; do not wait on pipes a
            // stray process might hold open.
            return Ok(Err(ctx
                .cancel
                .check()
                .err()
                .unwrap_or_else(|| Error::runtime("cancelled"))));
        }
        let (stream, captured) = match rx.recv_timeout(CANCEL_POLL) {
            Ok(message) => message,
            Err(RecvTimeoutError::Timeout) => continue,
            Err(RecvTimeoutError::Disconnected) => break,
        };
        pending -= 1;
        match captured {
            Captured::Complete(bytes) => match stream {
                Stream::Stdout => stdout = bytes,
                Stream::Stderr => stderr = bytes,
            },
            Captured::Overflow => {
                kill_group(pgid, libc::SIGKILL);
                problem.get_or_insert_with(|| cap_source.overflow(stream.name()));
            }
            Captured::Failed(e) => {
                kill_group(pgid, libc::SIGKILL);
                problem.get_or_insert_with(|| {
                    Error::runtime(format!("reading child {} failed: {e}", stream.name()))
                });
            }
        }
    }
    Ok(match problem {
        Some(e) => Err(e),
        None => Ok((stdout, stderr)),
    })
}

/// The run was cancelled while this child ran and the child is reaped. Give
/// the rest of its group the SIGTERM grace a signal allows, then SIGKILL it,
/// so nothing outlives the step even after our group registration ends.
pub(super) fn stop_after_cancel(pgid: i32, cancel: &Cancel) {
    if matches!(cancel.reason(), Some(CancelReason::Signal { .. })) && kill_group(pgid, 0) {
        std::thread::sleep(TERM_GRACE);
    }
    kill_group(pgid, libc::SIGKILL);
}

/// Make the child get SIGKILL when this process dies, even by SIGKILL (when
/// no cancellation can run): `PR_SET_PDEATHSIG` in the child before `exec`.
/// Used until the reaper (`executor/reaper.rs`) is up; from then on the
/// reaper kills the child's group instead.
/// If this process died between `fork` and `prctl`, the child sees another
/// parent and exits at once. (Linux ties the signal to the forking thread:
/// every spawn here waits for its child on the thread that spawned it.)
/// Grandchildren are reached through the process group the child leads,
/// which cancellation kills and, after a SIGKILL of lobster, the reaper
/// (`executor/reaper.rs`) that every registered group is listed with.
fn die_with_parent(command: &mut std::process::Command) {
    // SAFETY: getpid/prctl/getppid are async-signal-safe system calls; the
    // closure touches no memory shared with the parent.
    let parent = unsafe { libc::getpid() };
    unsafe {
        command.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            if libc::getppid() != parent {
                return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        });
    }
}
