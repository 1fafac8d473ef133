//! Helpers: run the binary with a private state directory.

#![allow(dead_code)]

use serde_json::Value;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

/// The binary under test.
pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_lobster")
}

/// A sandbox for one test: a state dir and a working dir.
pub struct Env {
    pub state: tempfile::TempDir,
    pub work: tempfile::TempDir,
    /// `LOBSTER_STORE` for every command (`None`: the files store).
    pub store: Option<String>,
}

/// What one run printed.
#[derive(Debug)]
pub struct Run {
    pub stdout: String,
    pub stderr: String,
    pub code: i32,
}

impl Run {
    /// stdout parsed as JSON (panics with the output on failure).
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not one JSON document ({e}): {self:?}"))
    }
}

impl Env {
    pub fn new() -> Self {
        Env {
            state: tempfile::tempdir().unwrap(),
            work: tempfile::tempdir().unwrap(),
            store: None,
        }
    }

    /// An `Env` whose commands use the store at `url` (`None`: files).
    pub fn with_store(url: Option<&str>) -> Self {
        Env {
            store: url.map(str::to_string),
            ..Env::new()
        }
    }

    pub fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(bin());
        c.args(args)
            .current_dir(self.work.path())
            .env("LOBSTER_STATE_DIR", self.state.path())
            .env_remove("LOBSTER_MAX_OUTPUT_BYTES")
            .stdin(Stdio::null());
        match &self.store {
            Some(url) => c.env("LOBSTER_STORE", url),
            None => c.env_remove("LOBSTER_STORE"),
        };
        c
    }

    pub fn run(&self, args: &[&str]) -> Run {
        finish(self.command(args).output().unwrap())
    }

    pub fn run_with_stdin(&self, args: &[&str], stdin: &str) -> Run {
        let mut child = self
            .command(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(stdin.as_bytes())
            .unwrap();
        finish(child.wait_with_output().unwrap())
    }

    pub fn spawn(&self, args: &[&str]) -> Child {
        self.command(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    }

    /// Tool-mode run of a pipeline.
    pub fn tool(&self, pipeline: &str) -> Run {
        self.run(&["run", "--mode", "tool", pipeline])
    }

    /// The one state file whose name starts with `prefix` (e.g.
    /// `pipeline_resume_`); panics when there is none.
    pub fn state_file(&self, prefix: &str) -> PathBuf {
        std::fs::read_dir(self.state.path())
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .find(|p| {
                p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with(prefix))
            })
            .unwrap_or_else(|| panic!("no state file {prefix}* in {:?}", self.state_files()))
    }

    /// Files in the state dir other than the token key and the sweep marker.
    pub fn state_files(&self) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(self.state.path())
            .map(|rd| {
                rd.filter_map(|e| e.ok())
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        // The run journals (`journal/`) are kept on purpose: every run
        // leaves one.
        names.retain(|n| n != ".token-key" && n != ".swept" && n != "journal");
        names.sort();
        names
    }

    /// A first stage that emits the items of `json` (an array), via a file so no
    /// shell quoting is involved: `exec --json --shell 'cat <file>'`.
    pub fn source(&self, json: &str) -> String {
        let n = std::fs::read_dir(self.work.path())
            .map(|d| d.count())
            .unwrap_or(0);
        let path = self.work.path().join(format!("items-{n}.json"));
        std::fs::write(&path, json).unwrap();
        format!("exec --json --shell 'cat {}'", path.display())
    }

    /// Copy the example WebAssembly steps (built by tests/build-guests.sh)
    /// into `<work>/<dir>` and the sample mail into `<work>/mail`. `None`
    /// (skipped loudly) when the steps are not built; under CI or
    /// `LOBSTER_REQUIRE_GUESTS` a missing build fails instead.
    pub fn copy_examples(&self, dir: &str) -> Option<PathBuf> {
        let built = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../examples/steps/target/wasm32-wasip2/release");
        if !built.join("inbox_list.wasm").is_file() {
            if std::env::var_os("CI").is_some()
                || std::env::var_os("LOBSTER_REQUIRE_GUESTS").is_some()
            {
                panic!(
                    "{} has no example steps; run tests/build-guests.sh",
                    built.display()
                );
            }
            eprintln!("SKIPPED: example steps are not built (tests/build-guests.sh)");
            return None;
        }
        let steps = self.work_path(dir);
        std::fs::create_dir_all(&steps).unwrap();
        for name in [
            "inbox_list",
            "inbox_categorize",
            "inbox_apply",
            "email_triage",
        ] {
            std::fs::copy(
                built.join(format!("{name}.wasm")),
                steps.join(format!("{name}.wasm")),
            )
            .unwrap();
        }
        let mail = self.work_path("mail");
        std::fs::create_dir_all(&mail).unwrap();
        let sample = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/mail");
        for entry in std::fs::read_dir(sample).unwrap() {
            let entry = entry.unwrap();
            std::fs::copy(entry.path(), mail.join(entry.file_name())).unwrap();
        }
        Some(steps)
    }

    pub fn work_path(&self, name: &str) -> PathBuf {
        self.work.path().join(name)
    }
}

pub fn finish(out: Output) -> Run {
    Run {
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        code: out.status.code().unwrap_or(-1),
    }
}

pub use crate::shapes::keys;

/// The resume token of a paused envelope.
pub fn token_of(envelope: &Value) -> String {
    envelope
        .pointer("/requiresApproval/resumeToken")
        .or_else(|| envelope.pointer("/requiresInput/resumeToken"))
        .and_then(Value::as_str)
        .unwrap_or_else(|| panic!("no resume token in {envelope}"))
        .to_string()
}

/// Whether a process with this pid is alive (and not a zombie).
pub fn alive(pid: u32) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"));
    match stat {
        Ok(s) => s.split_whitespace().nth(2).is_none_or(|state| state != "Z"),
        Err(_) => false,
    }
}

pub fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// The repository root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A built guest: `tests/guests` or `examples/steps`. Missing guests fail
/// under CI / tests/run.sh and skip loudly elsewhere.
pub fn guest(dir: &str, name: &str) -> Option<PathBuf> {
    let p = root()
        .join(dir)
        .join(format!("target/wasm32-wasip2/release/{name}.wasm"));
    if p.is_file() {
        return Some(p);
    }
    if std::env::var_os("CI").is_some() || std::env::var_os("LOBSTER_REQUIRE_GUESTS").is_some() {
        panic!("{} is missing; run tests/build-guests.sh", p.display());
    }
    eprintln!(
        "SKIPPED: {} is not built (tests/build-guests.sh)",
        p.display()
    );
    None
}

/// A built guest of `tests/guests` (see [`guest`]).
pub fn test_guest(name: &str) -> Option<PathBuf> {
    guest("tests/guests", name)
}

/// Write `text` to `name` in the work directory (creating its parents).
/// A workflow file that the validator accepts must match the published
/// JSON Schema too (`docs/workflow.schema.json`), so every workflow a test
/// writes keeps the schema honest.
pub fn write(env: &Env, name: &str, text: &str) -> PathBuf {
    let p = env.work_path(name);
    if let Some(parent) = p.parent() {
        std::fs::create_dir_all(parent).unwrap();
    }
    std::fs::write(&p, text).unwrap();
    schema_agrees(&p, text);
    p
}

/// Panics when `text`, a workflow the validator accepts, fails the schema.
pub fn schema_agrees(path: &Path, text: &str) {
    use lobster::workflow::{load, schema, validate};
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    if !["lobster", "yaml", "yml", "json"].contains(&ext) {
        return;
    }
    let Ok(doc) = load::parse_text(text, ext == "json", "w") else {
        return;
    };
    let source = load::Source {
        shown: "w".into(),
        path: path.to_path_buf(),
        digest: String::new(),
    };
    if validate::validate(source, &doc, None).is_err() {
        return;
    }
    if let Err(errors) = schema::check(&doc.value) {
        panic!(
            "{} is a valid workflow but fails docs/workflow.schema.json: {errors:#?}\n{text}",
            path.display()
        );
    }
}

/// The tool envelope's `error.message`.
pub fn err_message(r: &Run) -> String {
    r.json()["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// `stderr` without the `run <id>` line human mode ends it with (for
/// comparing the rest exactly); panics when the line is missing.
pub fn without_run_line(stderr: &str) -> &str {
    let body = stderr.strip_suffix('\n').unwrap_or(stderr);
    let (rest, last) = match body.rfind('\n') {
        Some(i) => (&stderr[..i + 1], &body[i + 1..]),
        None => ("", body),
    };
    let id = last
        .strip_prefix("run ")
        .unwrap_or_else(|| panic!("no run line in {stderr:?}"));
    assert!(
        id.len() == 32 && id.bytes().all(|b| b.is_ascii_hexdigit()),
        "{stderr:?}"
    );
    rest
}

/// One test body on both stores: `$files` runs `$body(None, ARGS…)` on the
/// files store, `$postgres` runs `$body(Some(url), ARGS…)` on PostgreSQL
/// (skipped, loudly, without `LOBSTER_TEST_PG_URL`; see `own_pg::pg_url`).
macro_rules! on_both_stores {
    ($body:ident($($arg:expr),*) => $files:ident, $postgres:ident) => {
        #[test]
        fn $files() {
            $body(None $(, $arg)*);
        }

        #[test]
        fn $postgres() {
            let Some(url) = crate::own_pg::pg_url() else {
                return;
            };
            $body(Some(&url) $(, $arg)*);
        }
    };
}
pub(crate) use on_both_stores;
