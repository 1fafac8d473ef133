//! `lobster step new|build|test`: step projects in Rust, Python or
//! JavaScript/TypeScript.
//!
//! A step project is a directory with `lobster-step.toml` (`name`, `lang`,
//! `entry`, `wasm`: where the build writes the component) and
//! `examples.json` (declared examples: args and input items → expected
//! items). `build` runs the language's pinned toolchain and reports the
//! component's name, size, world and digest; `test` runs every example in
//! the sandbox, so every language tests the same way.

use super::output::{finish, write_once};
use crate::error::{Error, Result};
use crate::executor::{run_pipeline, Outcome};
use crate::kernel::{Context, Mode};
use crate::sandbox::{load_file, ArtifactCache, ComponentKind, StepPath};
use crate::state::StateStore;
use crate::value::Item;
use std::path::{Path, PathBuf};
use std::process::Command;

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

/// The Lobster checkout's `guest-sdk/` this binary was built from.
const BUILT_SDK: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../guest-sdk");

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
            .map(|t| (t, true)),
        "test" => one_dir(&argv[1..], "test").and_then(|d| test(&d)),
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

/// The project's language.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lang {
    /// `lobster-guest` crate, cargo.
    Rust,
    /// `lobster_step` package, componentize-py.
    Python,
    /// `lobster-step` package, esbuild + componentize-qjs.
    Js,
}

impl Lang {
    /// The name `--lang` and `lobster-step.toml` use.
    pub fn name(self) -> &'static str {
        match self {
            Lang::Rust => "rust",
            Lang::Python => "python",
            Lang::Js => "js",
        }
    }

    fn parse(s: &str) -> Result<Lang> {
        match s {
            "rust" => Ok(Lang::Rust),
            "python" | "py" => Ok(Lang::Python),
            "js" | "ts" | "javascript" | "typescript" => Ok(Lang::Js),
            other => Err(Error::parse(format!(
                "--lang must be rust, python or js, got {other:?}"
            ))),
        }
    }
}

/// `lobster-step.toml`.
#[derive(Debug, Clone, serde::Deserialize)]
pub struct Manifest {
    /// The step's name (as `describe` returns it).
    pub name: String,
    /// `rust`, `python` or `js`.
    pub lang: String,
    /// The source entry (Python module file or JS/TS file).
    #[serde(default)]
    pub entry: Option<String>,
    /// Where the build writes the component, relative to the project.
    pub wasm: String,
}

/// Read `DIR/lobster-step.toml`.
pub fn manifest(dir: &Path) -> Result<Manifest> {
    let path = dir.join("lobster-step.toml");
    let text = std::fs::read_to_string(&path).map_err(|e| {
        Error::runtime(format!(
            "{}: {e} (create a project with `lobster step new NAME --lang rust|python|js`)",
            path.display()
        ))
    })?;
    toml::from_str(&text).map_err(|e| Error::parse(format!("{}: {e}", path.display())))
}

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
    if name.is_empty()
        || !name.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'))
    {
        return Err(Error::parse(format!(
            "step name {name:?}: use letters, digits, '.', '-' and '_', starting with a letter (e.g. inbox.tag)"
        )));
    }
    let lang =
        lang.ok_or_else(|| Error::parse("lobster step new: --lang rust|python|js is required"))?;
    let slug = name.replace('.', "-");
    let dir = dir.unwrap_or_else(|| PathBuf::from(&slug));
    if dir.exists() {
        return Err(Error::runtime(format!(
            "{}: already exists; choose another NAME or --dir",
            dir.display()
        )));
    }
    let sdk = match sdk {
        Some(s) => s,
        None => PathBuf::from(BUILT_SDK),
    };
    let sdk = std::fs::canonicalize(&sdk).map_err(|e| {
        Error::runtime(format!(
            "{}: {e}; pass --sdk PATH/TO/lobster/guest-sdk",
            sdk.display()
        ))
    })?;
    let files = super::step_templates::files(lang, &name, &slug, &sdk);
    std::fs::create_dir_all(&dir).map_err(|e| Error::runtime(format!("{}: {e}", dir.display())))?;
    for (rel, text) in &files {
        let path = dir.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| Error::runtime(format!("{}: {e}", parent.display())))?;
        }
        // Source files for the author: the usual mode under their umask
        // (0644 under 022), not the state directory's 0600.
        std::fs::write(&path, text.as_bytes())
            .map_err(|e| Error::runtime(format!("{}: {e}", path.display())))?;
    }
    let mut out = format!("created {} ({} step {name}):\n", dir.display(), lang.name());
    for (rel, _) in &files {
        out.push_str(&format!("  {rel}\n"));
    }
    out.push_str(&format!(
        "next: see {}/README.md, then `lobster step build {}` and `lobster step test {}`\n",
        dir.display(),
        dir.display(),
        dir.display()
    ));
    Ok(out)
}

fn run_tool(cmd: &mut Command, what: &str) -> Result<()> {
    let status = cmd.status().map_err(|e| {
        Error::runtime(format!(
            "cannot run {what}: {e} (is the toolchain installed? see the project's README)"
        ))
    })?;
    if !status.success() {
        return Err(Error::runtime(format!("{what} failed ({status})")));
    }
    Ok(())
}

fn build(dir: &Path) -> Result<String> {
    let m = manifest(dir)?;
    let lang = Lang::parse(&m.lang)?;
    match lang {
        Lang::Rust => run_tool(
            Command::new("cargo")
                .args(["build", "--release", "--target", "wasm32-wasip2"])
                .current_dir(dir),
            "cargo build",
        )?,
        Lang::Python => {
            let venv = dir.join(".venv/bin/python");
            let python = if venv.is_file() {
                venv
            } else {
                PathBuf::from(std::env::var("LOBSTER_PYTHON").unwrap_or_else(|_| "python3".into()))
            };
            // Without the SDK, python would only say `No module named lobster_step`.
            let has_sdk = Command::new(&python)
                .args(["-c", "import importlib.util as u, sys; sys.exit(0 if u.find_spec('lobster_step') else 3)"])
                .current_dir(dir)
                .status()
                .map(|s| s.code());
            if let Ok(Some(3)) = has_sdk {
                return Err(Error::runtime(format!(
                    "the Python step SDK (module lobster_step) is not installed for {}",
                    python.display()
                ))
                .with_hint(format!(
                    "install it into a virtual environment here: `python3 -m venv .venv && .venv/bin/pip install {}/python` (the project's README names the path)",
                    std::fs::canonicalize(BUILT_SDK)
                        .unwrap_or_else(|_| PathBuf::from(BUILT_SDK))
                        .display()
                )));
            }
            run_tool(
                Command::new(&python)
                    .args(["-m", "lobster_step", "build", "."])
                    .current_dir(dir),
                &format!("{} -m lobster_step build", python.display()),
            )?
        }
        Lang::Js => {
            let script = dir.join("node_modules/lobster-step/build.mjs");
            if !script.is_file() {
                return Err(Error::runtime(format!(
                    "{}: missing; run `npm install` in {} first (see its README)",
                    script.display(),
                    dir.display()
                )));
            }
            run_tool(
                Command::new("node")
                    .arg(&script)
                    .args(["build", "."])
                    .current_dir(dir),
                "node lobster-step/build.mjs",
            )?
        }
    }
    report(dir, &m)
}

/// Where the built component is: `wasm` in the manifest, or for a Rust
/// project built with `CARGO_TARGET_DIR` set, the same file name there.
fn wasm_path(dir: &Path, m: &Manifest) -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR").filter(|v| !v.is_empty());
    match (m.lang.as_str(), target, Path::new(&m.wasm).file_name()) {
        ("rust", Some(t), Some(file)) => dir
            .join(PathBuf::from(t))
            .join("wasm32-wasip2")
            .join("release")
            .join(file),
        _ => dir.join(&m.wasm),
    }
}

/// `name  size  world  digest` of the built component.
fn report(dir: &Path, m: &Manifest) -> Result<String> {
    let wasm = wasm_path(dir, m);
    let size = std::fs::metadata(&wasm)
        .map_err(|e| Error::runtime(format!("{}: {e} (did the build write it?)", wasm.display())))?
        .len();
    let cache = ArtifactCache::in_state_dir(StateStore::from_env().dir());
    let c = load_file(&wasm, &cache)?;
    let (name, world) = match c.kind() {
        ComponentKind::Step => (
            c.meta().map(|x| x.name.clone()).unwrap_or_default(),
            // The world its exports (and imports, if any) are of.
            match c.world_version() {
                Some(v) => format!("lobster:step@{v}.0 (step: describe, run)"),
                None => "lobster:step (step: describe, run)".into(),
            },
        ),
        ComponentKind::Command => (m.name.clone(), "wasi:cli/command".into()),
    };
    let mut out = format!(
        "name    {name}\nsize    {} ({size} bytes)\nworld   {world}\ndigest  blake3:{}\nfile    {}\n",
        super::progress::size(size),
        c.digest(),
        wasm.display()
    );
    if name != m.name {
        out.push_str(&format!(
            "warning: describe says {name:?} but lobster-step.toml says {:?}\n",
            m.name
        ));
    }
    Ok(out)
}

#[derive(Debug, serde::Deserialize)]
struct Example {
    #[serde(default)]
    name: String,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    input: Vec<Item>,
    output: Vec<Item>,
}

fn test(dir: &Path) -> Result<(String, bool)> {
    let m = manifest(dir)?;
    let path = dir.join("examples.json");
    let text = std::fs::read_to_string(&path)
        .map_err(|e| Error::runtime(format!("{}: {e}", path.display())))?;
    let examples: Vec<Example> = serde_json::from_str(&text)
        .map_err(|e| Error::parse(format!("{}: {e}", path.display())))?;
    if examples.is_empty() {
        return Err(Error::parse(format!(
            "{}: declares no examples",
            path.display()
        )));
    }
    let wasm = wasm_path(dir, &m);
    if !wasm.is_file() {
        return Err(Error::runtime(format!(
            "{}: missing; run `lobster step build {}` first",
            wasm.display(),
            dir.display()
        )));
    }
    let wasm_dir = wasm.parent().map(Path::to_path_buf).unwrap_or_default();
    let state = StateStore::from_env();
    let path = StepPath::new(vec![std::fs::canonicalize(&wasm_dir).unwrap_or(wasm_dir)]);
    let cwd = std::env::current_dir().unwrap_or_default();
    let registry = crate::executor::registry(path, &state, Default::default(), cwd);
    let ctx = crate::executor::process_context(Mode::Tool, state)
        .registry(registry)
        .build();
    let (mut passed, mut failed) = (0, 0);
    let mut out = String::new();
    for (i, ex) in examples.iter().enumerate() {
        let label = if ex.name.is_empty() {
            format!("example {}", i + 1)
        } else {
            ex.name.clone()
        };
        match run_example(&m.name, ex, &ctx) {
            Ok(items) if items == ex.output => {
                passed += 1;
                out.push_str(&format!("ok      {label}\n"));
            }
            Ok(items) => {
                failed += 1;
                out.push_str(&format!(
                    "FAILED  {label}\n  expected {}\n  got      {}\n",
                    serde_json::to_string(&ex.output).unwrap_or_default(),
                    serde_json::to_string(&items).unwrap_or_default()
                ));
            }
            Err(e) => {
                failed += 1;
                out.push_str(&format!("FAILED  {label}\n  error: {e}\n"));
            }
        }
    }
    out.push_str(&format!("{passed} passed, {failed} failed\n"));
    Ok((out, failed == 0))
}

fn run_example(name: &str, ex: &Example, ctx: &Context) -> Result<Vec<Item>> {
    let mut pipeline = crate::dsl::parse(name)?;
    let tokens: Vec<crate::dsl::Token> = ex
        .args
        .iter()
        .map(|t| crate::dsl::Token {
            text: t.clone(),
            span: 0..0,
        })
        .collect();
    pipeline.stages[0].args = crate::dsl::parse_args(&tokens);
    match run_pipeline(&pipeline, 0, ex.input.clone(), ctx)? {
        Outcome::Completed { items, .. } => Ok(items),
        _ => Err(Error::runtime("the step stopped at a gate")),
    }
}
