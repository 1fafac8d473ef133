//! `lobster step new|build|test`: step projects in Rust, Python or
//! JavaScript/TypeScript (`crate::app::step_project` does the work; this
//! door parses the words and prints what it did). `publish|pull|sign` are
//! `step_registry`'s.

use super::output::{finish, write_once};
use crate::app::step_project::build::{build, Built};
use crate::app::step_project::test::{test, ExampleOutcome, ExampleResult};
use crate::app::step_project::{check_name, create, Lang};
use crate::error::{Error, Result};
use std::path::PathBuf;

/// `lobster help step`.
pub const STEP_HELP: &str = "lobster step — create, build and test a WebAssembly step

Usage:
  lobster step new NAME --lang rust|python|js [--dir DIR] [--sdk GUEST-SDK-DIR]
  lobster step build [DIR]
  lobster step test [DIR]
  lobster step publish FILE|BUNDLE oci://HOST[:PORT]/REPO:TAG
  lobster step pull oci://HOST[:PORT]/REPO[:TAG][@sha256:DIGEST] [-o FILE|DIR]
  lobster step sign --key NAME.key FILE|BUNDLE|oci://REF

new: writes a ready-to-build project in DIR (default: NAME with dots as
dashes): lobster-step.toml, the source with one working flag (--name),
examples.json (the test) and a README. --sdk is the guest-sdk/ directory of
a Lobster checkout (default: the one this lobster was built from).

build: runs the project's toolchain (rust: cargo build --release --target
wasm32-wasip2; python: python -m lobster_step build, from ./.venv when
present; js: node node_modules/lobster-step/build.mjs) and reports the
component's name, size, world and blake3 digest. The compiled cache is
warmed too.

test: runs every example in examples.json ([{\"name\", \"args\": [..],
\"input\": [..], \"output\": [..]}]) through the sandbox, with no grants,
and compares the items. Ends with `N passed, N failed`; exit 1 on a failure.

Example:
  lobster step new greet --lang python && cd greet && lobster step build && lobster step test

Shipping steps (OCI registries, signatures): `lobster step publish --help`.
";

/// Entry point of `lobster step ARGS`.
pub fn step(argv: &[String]) -> i32 {
    if let Some(cmd @ ("publish" | "pull" | "sign")) = argv.first().map(String::as_str) {
        return super::step_registry::step_registry(cmd, &argv[1..]);
    }
    if argv.is_empty() || argv.iter().any(|a| a == "--help" || a == "-h") {
        write_once(STEP_HELP, "");
        return 0;
    }
    let result = match argv[0].as_str() {
        "new" => new(&argv[1..]).map(|t| (t, true)),
        "build" => one_dir(&argv[1..], "build")
            .and_then(|d| build(&d))
            .map(|b| (render_built(&b), true)),
        "test" => one_dir(&argv[1..], "test")
            .and_then(|d| test(&d))
            .map(|r| render_tests(&r)),
        other => Err(Error::parse(format!(
            "lobster step: unknown subcommand {other:?} (expected new, build, test, publish, pull or sign)"
        ))
        .with_hint(super::subcommands::near_word(
            other,
            &["new", "build", "test", "publish", "pull", "sign"],
        ))),
    };
    finish(result.map(|(text, ok)| (text, if ok { 0 } else { 1 })))
}

fn one_dir(argv: &[String], what: &str) -> Result<PathBuf> {
    match argv {
        [] => Ok(PathBuf::from(".")),
        [d] if !d.starts_with("--") => Ok(PathBuf::from(d)),
        _ => Err(Error::parse(format!(
            "lobster step {what}: expected at most one project directory, got {argv:?}"
        ))),
    }
}

/// `lobster step new NAME --lang L [--dir DIR] [--sdk DIR]`.
fn new(argv: &[String]) -> Result<String> {
    let mut name = None;
    let mut lang = None;
    let mut dir = None;
    let mut sdk = None;
    let mut i = 0;
    while i < argv.len() {
        let value = |i: usize| {
            argv.get(i + 1)
                .cloned()
                .ok_or_else(|| Error::parse(format!("{} needs a value", argv[i])))
        };
        match argv[i].as_str() {
            "--lang" => lang = Some(Lang::parse(&value(i)?)?),
            "--dir" => dir = Some(PathBuf::from(value(i)?)),
            "--sdk" => sdk = Some(PathBuf::from(value(i)?)),
            s if !s.starts_with("--") && name.is_none() => {
                name = Some(s.to_string());
                i += 1;
                continue;
            }
            other if other.starts_with("--") => {
                return Err(super::subcommands::unknown_flag(
                    "step",
                    other,
                    &["--lang", "--dir", "--sdk"],
                ))
            }
            other => {
                return Err(Error::parse(format!(
                    "lobster step new: unexpected argument {other:?}"
                )))
            }
        }
        i += 2;
    }
    let name = name.ok_or_else(|| {
        Error::parse("lobster step new NAME --lang rust|python|js: NAME is missing")
    })?;
    check_name(&name)?;
    let lang =
        lang.ok_or_else(|| Error::parse("lobster step new: --lang rust|python|js is required"))?;
    let created = create(&name, lang, dir, sdk)?;
    let dir = created.dir.display();
    let mut out = format!("created {dir} ({} step {name}):\n", lang.name());
    for rel in &created.files {
        out.push_str(&format!("  {rel}\n"));
    }
    out.push_str(&format!(
        "next: see {dir}/README.md, then `lobster step build {dir}` and `lobster step test {dir}`\n",
    ));
    Ok(out)
}

/// `name  size  world  digest  file` of the built component, and a warning
/// when its name is not the manifest's.
fn render_built(b: &Built) -> String {
    let mut out = format!(
        "name    {}\nsize    {} ({} bytes)\nworld   {}\ndigest  blake3:{}\nfile    {}\n",
        b.name,
        super::progress::size(b.size),
        b.size,
        b.world,
        b.digest,
        b.file.display()
    );
    if b.name != b.declared {
        out.push_str(&format!(
            "warning: describe says {:?} but lobster-step.toml says {:?}\n",
            b.name, b.declared
        ));
    }
    out
}

/// One line per example (what differed under a failure), then `N passed,
/// N failed`; and whether all passed.
fn render_tests(results: &[ExampleResult]) -> (String, bool) {
    let (mut passed, mut failed) = (0, 0);
    let mut out = String::new();
    for r in results {
        let label = &r.label;
        match &r.outcome {
            ExampleOutcome::Passed => {
                passed += 1;
                out.push_str(&format!("ok      {label}\n"));
            }
            ExampleOutcome::Differs { expected, got } => {
                failed += 1;
                out.push_str(&format!(
                    "FAILED  {label}\n  expected {}\n  got      {}\n",
                    serde_json::to_string(expected).unwrap_or_default(),
                    serde_json::to_string(got).unwrap_or_default()
                ));
            }
            ExampleOutcome::Failed(e) => {
                failed += 1;
                out.push_str(&format!("FAILED  {label}\n  error: {e}\n"));
            }
        }
    }
    out.push_str(&format!("{passed} passed, {failed} failed\n"));
    (out, failed == 0)
}
