//! The adversarial suite of the untrusted mode (issue 10): a workflow author
//! controls the `.lobster` files, their sub-workflows, args, step outputs
//! and step components, but not the operator policy or the command line.
//! Every attack runs the real binary with real guest steps under
//!
//! ```toml
//! trust = "untrusted"
//! roots = ["mail"]
//! env = ["LANG", "API_TOKEN"]
//! ```
//!
//! and asserts: refused with a message naming the excess (or harmless), no
//! canary file outside the roots, no secret text in stdout or stderr, and
//! (for attacks that live in the workflow alone) that `lobster check
//! --policy` agrees with `lobster run --policy`.
//!
//! The harness (policy, attacks, their world) is here; the attack table is
//! in `table.rs`, the attacks between check and use in `toctou.rs`.

use crate::common::{finish, guest, test_guest, Env, Run};
use std::path::{Path, PathBuf};

mod table;
mod toctou;

/// The host secret no step may ever see.
const SECRET: &str = "s3cr3t-canary-94f1e";

const POLICY: &str = "trust = \"untrusted\"\nroots = [\"mail\"]\nenv = [\"LANG\", \"API_TOKEN\"]\n";

/// A sub-workflow that runs a host command.
const EVIL: &str = "steps:\n  - id: x\n    run: touch ../pwned\n";

/// What an attack must end in.
#[derive(Clone, Copy, Debug)]
enum Expect {
    /// Refused; the error message contains this text.
    Refused(&'static str),
    /// Allowed to run, but with no effect outside the roots and no secret.
    Harmless,
}

/// One attack: files written into the run's working directory (`run/`),
/// extra command-line words (operator's grants), a set-up hook, and the
/// verdict.
struct Attack {
    name: &'static str,
    files: Vec<(&'static str, String)>,
    extra: Vec<&'static str>,
    setup: Option<fn(&Path)>,
    expect: Expect,
    /// Whether the attack lives in the workflow alone, so `lobster check
    /// --policy` can be compared with the run.
    parity: bool,
}

fn attack(name: &'static str, wf: &str, expect: Expect) -> Attack {
    Attack {
        name,
        files: vec![("wf.lobster", wf.to_string())],
        extra: Vec::new(),
        setup: None,
        expect,
        parity: true,
    }
}

impl Attack {
    fn file(mut self, name: &'static str, text: &str) -> Self {
        self.files.push((name, text.to_string()));
        self
    }
    fn args(mut self, extra: &[&'static str]) -> Self {
        self.extra.extend_from_slice(extra);
        self
    }
    fn setup(mut self, f: fn(&Path)) -> Self {
        self.setup = Some(f);
        self
    }
    fn no_parity(mut self) -> Self {
        self.parity = false;
        self
    }
}

/// The world of one attack: `work/` holds things outside the run
/// (`work/mail` with a message whose subject is the secret, `work/outside`),
/// `work/run` is the run's working directory with `mail/`, `steps/` and the
/// policy.
struct World {
    env: Env,
    run: PathBuf,
}

impl World {
    fn new() -> Option<World> {
        let env = Env::new();
        let run = env.work_path("run");
        std::fs::create_dir_all(run.join("steps")).unwrap();
        std::fs::create_dir_all(env.work_path("outside")).unwrap();
        let built = env.copy_examples("run/steps")?;
        // copy_examples puts the mail next to the steps' parent; move it.
        let _ = built;
        std::fs::rename(env.work_path("mail"), run.join("mail")).unwrap();
        std::fs::create_dir_all(env.work_path("mail")).unwrap();
        std::fs::write(
            env.work_path("mail/900-outside.eml"),
            format!("From: x@y\nSubject: {SECRET}\nLabels: inbox\n\nOutside the root.\n"),
        )
        .unwrap();
        for name in ["net", "phonehome", "capgrab", "probe", "hostile"] {
            let p = test_guest(name)?;
            std::fs::copy(p, run.join(format!("steps/{name}.wasm"))).unwrap();
        }
        guest("examples/steps", "inbox_list")?;
        std::fs::write(run.join("policy.toml"), POLICY).unwrap();
        Some(World { env, run })
    }

    fn lobster(&self, args: &[&str]) -> std::process::Command {
        let mut c = self.env.command(args);
        c.current_dir(&self.run)
            .env("SECRET_TOKEN", SECRET)
            .env("API_TOKEN", "public-api-token")
            .env("LANG", "C.UTF-8")
            .env_remove("LOBSTER_POLICY")
            .env_remove("LOBSTER_STEP_PATH");
        c
    }

    fn run(&self, words: &[&str]) -> Run {
        finish(self.lobster(words).output().unwrap())
    }

    /// `lobster run --mode tool --policy policy.toml EXTRA… wf.lobster`.
    fn attack(&self, extra: &[&str]) -> Run {
        let mut words = vec!["run", "--mode", "tool", "--policy", "policy.toml"];
        words.extend_from_slice(extra);
        words.push("wf.lobster");
        self.run(&words)
    }

    /// Every file under `work/` whose name says an attack got through, and
    /// every change to what lies outside the run's directory.
    fn breaches(&self) -> Vec<String> {
        let mut out = Vec::new();
        let mut stack = vec![self.env.work.path().to_path_buf()];
        while let Some(dir) = stack.pop() {
            for e in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
                let p = e.path();
                let name = e.file_name().to_string_lossy().into_owned();
                if name.contains("pwned") {
                    out.push(p.display().to_string());
                }
                if e.file_type().is_ok_and(|t| t.is_dir()) {
                    stack.push(p);
                }
            }
        }
        let outside: Vec<_> = std::fs::read_dir(self.env.work_path("mail"))
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        if outside != ["900-outside.eml"] {
            out.push(format!("work/mail changed: {outside:?}"));
        }
        if std::fs::read_dir(self.env.work_path("outside"))
            .unwrap()
            .next()
            .is_some()
        {
            out.push("work/outside was written".into());
        }
        out
    }
}

fn message(r: &Run) -> String {
    serde_json::from_str::<serde_json::Value>(&r.stdout)
        .ok()
        .and_then(|v| v["error"]["message"].as_str().map(String::from))
        .unwrap_or_else(|| format!("{}{}", r.stdout, r.stderr))
}

fn link(from: &Path, to: &str) {
    std::os::unix::fs::symlink(from.join(to), from.join("linkdir")).unwrap();
}
