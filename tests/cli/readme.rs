//! Every example in every README runs as written.
//!
//! The fenced `sh`/`console` blocks of README.md, examples/steps/README.md,
//! guest-sdk/README.md and docs/*.md are read; each line that runs `lobster`
//! (`lobster …`, `$ lobster …`, `… | lobster …`, with `\` continuations and
//! the block's `export NAME=value` lines) is run with `/bin/sh -c` in a
//! scratch directory laid out like the repository root: `examples/` (the
//! workflows, the sample mail and the built example steps), plus `mail/`,
//! `steps/`, the example workflows and a `prs.json` at the top, for the
//! examples that name them so. It must succeed, or fail with the error the
//! block shows (a `console` block whose output starts with `Error:`).
//!
//! Tokens and approval ids differ per run, so `<resumeToken>`, `"…"` tokens
//! and `--id <8 hex>` are replaced by the ones the block's last paused run
//! issued (each used once), or by a fresh pause of the right kind (an `ask`
//! for `--response-json`, else an `approve`) when there is none.

use crate::common::{bin, Env};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Lines that cannot run here, each with its reason (matched by substring).
const SKIP: &[(&str, &str)] = &[(
    "exec --json --shell \"inbox list --json\"",
    "`inbox` stands for the agent's own mail CLI (an external service)",
)];

/// One runnable example line.
#[derive(Debug)]
struct Example {
    at: String,
    line: String,
    exports: Vec<(String, String)>,
    /// `Some(first line)` when the block shows an error for it.
    error: Option<String>,
    /// The output a `console` block shows under it, as written.
    shown: Vec<String>,
    block: usize,
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn sources() -> Vec<PathBuf> {
    let root = repo();
    let mut files = vec![
        root.join("README.md"),
        root.join("examples/steps/README.md"),
        root.join("guest-sdk/README.md"),
    ];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    docs.sort();
    files.extend(docs);
    files
}

fn runs_lobster(line: &str) -> bool {
    line.starts_with("lobster ") || line.contains("| lobster ") || line.ends_with("| lobster call")
}

/// The runnable lines of one markdown file.
fn extract(path: &Path, block_base: usize) -> (Vec<Example>, usize) {
    let text = std::fs::read_to_string(path).unwrap();
    let name = path
        .strip_prefix(repo())
        .unwrap_or(path)
        .display()
        .to_string();
    let mut out: Vec<Example> = Vec::new();
    let mut lang: Option<String> = None;
    let mut exports = Vec::new();
    let mut block = block_base;
    let lines: Vec<&str> = text.lines().collect();
    let mut i = 0;
    while i < lines.len() {
        let raw = lines[i];
        let trimmed = raw.trim();
        if let Some(fence) = trimmed.strip_prefix("```") {
            if lang.is_none() {
                lang = Some(fence.trim().to_string());
                exports.clear();
                block += 1;
            } else {
                lang = None;
            }
            i += 1;
            continue;
        }
        let console = lang.as_deref() == Some("console");
        if !matches!(lang.as_deref(), Some("sh" | "console")) {
            i += 1;
            continue;
        }
        let lineno = i + 1;
        let mut line = trimmed.to_string();
        while line.ends_with('\\') && i + 1 < lines.len() {
            line.pop();
            i += 1;
            line.push(' ');
            line.push_str(lines[i].trim());
        }
        i += 1;
        let command = if console {
            match line.strip_prefix("$ ") {
                Some(c) => c.to_string(),
                None => {
                    // Output of the previous command: an error it shows.
                    if let Some(last) = out.last_mut() {
                        if last.block == block {
                            last.shown.push(raw.trim_end().to_string());
                        }
                        if last.block == block
                            && last.error.is_none()
                            && (line.starts_with("Error:") || line.starts_with("Parse error:"))
                        {
                            last.error = Some(line.clone());
                        }
                    }
                    continue;
                }
            }
        } else {
            line
        };
        if let Some(assign) = command.strip_prefix("export ") {
            if let Some((k, v)) = assign.split_once('=') {
                exports.push((k.trim().to_string(), v.trim().to_string()));
            }
            continue;
        }
        if runs_lobster(&command) {
            out.push(Example {
                at: format!("{name}:{lineno}"),
                line: command,
                exports: exports.clone(),
                error: None,
                shown: Vec::new(),
                block,
            });
        }
    }
    (out, block)
}

/// The scratch directory: the repository's example layout.
fn scratch(env: &Env) -> Option<()> {
    let steps = env.copy_examples("steps")?;
    let root = repo();
    let work = env.work.path();
    let copy_dir = |from: &Path, to: &Path| {
        std::fs::create_dir_all(to).unwrap();
        for e in std::fs::read_dir(from).unwrap().flatten() {
            if e.path().is_file() {
                std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
            }
        }
    };
    copy_dir(
        &root.join("examples/workflows"),
        &work.join("examples/workflows"),
    );
    copy_dir(&root.join("examples/workflows"), work);
    copy_dir(&root.join("examples/mail"), &work.join("examples/mail"));
    copy_dir(
        &steps,
        &work.join("examples/steps/target/wasm32-wasip2/release"),
    );
    // guest-sdk/README.md's `greet`, built as examples/steps/greet.
    let greet = root.join("examples/steps/target/wasm32-wasip2/release/greet.wasm");
    std::fs::copy(&greet, steps.join("greet.wasm"))
        .unwrap_or_else(|e| panic!("{}: {e}; run tests/build-guests.sh", greet.display()));
    std::fs::copy(
        root.join("examples/prs.json"),
        work.join("examples/prs.json"),
    )
    .unwrap();
    Some(())
}

/// The token and approval id of a paused envelope printed on stdout.
fn pause_of(stdout: &str) -> Option<(String, Option<String>)> {
    let v: Value = serde_json::from_str(stdout).ok()?;
    let req = [&v["requiresApproval"], &v["requiresInput"]]
        .into_iter()
        .find(|r| r.is_object())?;
    Some((
        req["resumeToken"].as_str()?.to_string(),
        req["approvalId"].as_str().map(str::to_string),
    ))
}

fn shell(env: &Env, line: &str, exports: &[(String, String)]) -> crate::common::Run {
    let dir = Path::new(bin()).parent().unwrap();
    let path = format!(
        "{}:{}",
        dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut c = Command::new("/bin/sh");
    c.arg("-c")
        .arg(line)
        .current_dir(env.work.path())
        .env("PATH", path)
        .env("LOBSTER_STATE_DIR", env.state.path())
        .env_remove("LOBSTER_STEP_PATH")
        .env_remove("LOBSTER_POLICY")
        .env_remove("LOBSTER_MAX_OUTPUT_BYTES")
        .stdin(std::process::Stdio::null());
    for (k, v) in exports {
        c.env(k, v);
    }
    crate::common::finish(c.output().unwrap())
}

/// A fresh pause: an input gate when the line answers one, else an approval.
fn fresh_pause(env: &Env, line: &str) -> (String, Option<String>) {
    let pipeline = if line.contains("--response-json") {
        "ask --prompt ok?"
    } else {
        "exec --json --shell 'echo [1]' | approve --prompt ok?"
    };
    let r = env.run(&["run", "--mode", "tool", pipeline]);
    pause_of(&r.stdout).expect("a pause")
}

fn hex8(word: &str) -> bool {
    word.len() == 8 && word.bytes().all(|b| b.is_ascii_hexdigit())
}

#[test]
fn every_readme_example_runs_as_written() {
    let env = Env::new();
    if scratch(&env).is_none() {
        return;
    }
    let mut examples = Vec::new();
    let mut block = 0;
    for file in sources() {
        let (found, next) = extract(&file, block);
        block = next;
        examples.extend(found);
    }
    assert!(
        examples.len() >= 20,
        "too few examples found: {examples:#?}"
    );
    let mut failures = Vec::new();
    let mut last: Option<(usize, String, Option<String>)> = None;
    let mut ran = 0;
    for ex in &examples {
        if let Some((_, why)) = SKIP.iter().find(|(s, _)| ex.line.contains(s)) {
            eprintln!("skipped {}: {why}", ex.at);
            continue;
        }
        let mut line = ex.line.clone();
        let needs_token = line.contains("<resumeToken>") || line.contains("\"token\":\"…\"");
        if needs_token {
            // The block's own pause when it made one (used once), else a fresh one.
            let token = match last.take() {
                Some((b, token, _)) if b == ex.block => token,
                _ => fresh_pause(&env, &line).0,
            };
            line = line
                .replace("<resumeToken>", &token)
                .replace("\"token\":\"…\"", &format!("\"token\":\"{token}\""));
        }
        let words: Vec<String> = line.split_whitespace().map(str::to_string).collect();
        if let Some(pos) = words.iter().position(|w| w == "--id") {
            if let Some(id) = words.get(pos + 1).filter(|w| hex8(w)) {
                let fresh = match last.take() {
                    Some((b, _, Some(real))) if b == ex.block => real,
                    _ => fresh_pause(&env, &line).1.expect("an approval id"),
                };
                line = line.replace(&format!("--id {id}"), &format!("--id {fresh}"));
            }
        }
        let r = shell(&env, &line, &ex.exports);
        ran += 1;
        match &ex.error {
            None if r.code != 0 => {
                failures.push(format!("{}: `{}` exited {}: {r:?}", ex.at, ex.line, r.code))
            }
            Some(expected) if r.code == 0 || !r.stderr.contains(expected.as_str()) => failures
                .push(format!(
                    "{}: `{}` should fail with {expected:?}: {r:?}",
                    ex.at, ex.line
                )),
            // An error shown in full (no `…`) is what the binary prints,
            // byte for byte (colour is off: stderr is not a terminal).
            Some(_) if !ex.shown.iter().any(|l| l.contains('…')) => {
                let shown = format!("{}\n", ex.shown.join("\n"));
                if any_run_id(&r.stderr) != any_run_id(&shown) {
                    failures.push(format!(
                        "{}: `{}` prints\n{}but the README shows\n{shown}",
                        ex.at, ex.line, r.stderr
                    ));
                }
            }
            _ => {}
        }
        if let Some((token, id)) = pause_of(&r.stdout) {
            last = Some((ex.block, token, id));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    eprintln!("ran {ran} README examples");
}

/// examples/steps/greet is the guest SDK README's "complete step", verbatim.
#[test]
fn the_guest_sdk_readme_step_is_the_built_example() {
    let readme = std::fs::read_to_string(repo().join("guest-sdk/README.md")).unwrap();
    let start =
        readme.find("`src/lib.rs`:\n\n```rust\n").unwrap() + "`src/lib.rs`:\n\n```rust\n".len();
    let end = start + readme[start..].find("```").unwrap();
    let lib = std::fs::read_to_string(repo().join("examples/steps/greet/src/lib.rs")).unwrap();
    assert_eq!(readme[start..end], lib);
}

/// The README's set-up is exactly two commands for a fresh machine: the
/// demo and the test suite.
#[test]
fn the_set_up_is_two_commands() {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let section = readme
        .split("\n## Set-up\n")
        .nth(1)
        .and_then(|s| s.split("\n## ").next())
        .expect("a Set-up section");
    let block = section
        .split("```sh\n")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .expect("a sh block in Set-up");
    let commands: Vec<&str> = block
        .lines()
        .map(|l| l.split('#').next().unwrap_or_default().trim())
        .filter(|l| !l.is_empty())
        .collect();
    assert_eq!(commands, ["bash examples/demo.sh", "bash tests/run.sh"]);
    // Right after it: how to put lobster on the PATH, both ways.
    let after = &section[section.find("```sh\n").unwrap()..];
    let next_paragraph = after.split("\n\n").nth(1).unwrap_or_default();
    assert!(
        next_paragraph.contains("export PATH=\"$PWD/target/debug:$PATH\"")
            && next_paragraph.contains("cargo install --locked --path runtime"),
        "{next_paragraph}"
    );
}

/// What the README says the tools print, they print.
#[test]
fn the_readme_names_what_the_binary_prints() {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let env = Env::new();
    // `step build` names the world with its version; the guest SDK macro.
    assert!(readme.contains("world (lobster:step@0.2.0)"));
    assert!(readme.contains("one `export_step!` line"));
    let lib =
        std::fs::read_to_string(repo().join("runtime/src/app/step_project/templates.rs")).unwrap();
    assert!(lib.contains("lobster_guest::export_step!("));
    // The schema line for editors, and the schema it names.
    assert!(readme.contains("# yaml-language-server: $schema=../../docs/workflow.schema.json"));
    let printed = env.run(&["schema", "workflow"]).stdout;
    let committed = std::fs::read_to_string(repo().join("docs/workflow.schema.json")).unwrap();
    assert_eq!(printed, committed);
    // The serve section starts the shipped example with one line.
    assert!(readme.contains("\nlobster serve --config examples/serve/serve.toml &"));
    // The opening example says it is illustrative.
    assert!(readme.contains("(`inbox list` stands for the agent's own mail tool"));
}

/// `text` with every `run <id>` line (human mode names the run's journal
/// on stderr; the id differs each time) as `run <id>`.
fn any_run_id(text: &str) -> String {
    text.lines()
        .map(|l| match l.strip_prefix("run ") {
            Some(id) if id.len() == 32 && id.bytes().all(|b| b.is_ascii_hexdigit()) => {
                "run <id>".to_string()
            }
            _ => l.to_string(),
        })
        .map(|l| l + "\n")
        .collect()
}
