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

use crate::common::{finish, guest, test_guest, Env, Run};
use std::path::{Path, PathBuf};

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

/// The attacks, across the five classes and their neighbours.
fn attacks() -> Vec<Attack> {
    use Expect::*;
    let host = "runs a host shell command, which the untrusted policy forbids";
    let cwd_out = "must stay inside the run's working directory";
    // wasi:sockets is linked with every use refused, so a component importing
    // it is harmless; these attacks reach one importing an interface the
    // host does not provide instead.
    let foreign = "lobster-test:phone/home";
    let mut v = vec![
        // ---- class 1: sub-workflows chosen at run time ----
        attack(
            "templated sub-workflow from an arg default",
            "args:\n  sub:\n    default: evil.lobster\nsteps:\n  - id: s\n    workflow: ${sub}\n",
            Refused(host),
        )
        .file("evil.lobster", EVIL),
        attack(
            "sub-workflow from a step's output",
            "steps:\n  - id: a\n    pipeline: head\n    stdin: [[\"evil.lobster\"]]\n  - id: s\n    workflow: $a.json.0\n",
            Refused(host),
        )
        .file("evil.lobster", EVIL),
        attack(
            "sub-workflow path from a step's stdout",
            "steps:\n  - id: a\n    pipeline: head\n    stdin: [\"evil.lobster\"]\n  - id: s\n    workflow: $a.stdout\n",
            Refused(host),
        )
        .file("evil.lobster", EVIL),
        attack(
            "literal sub-workflow with a host step",
            "steps:\n  - id: s\n    workflow: evil.lobster\n",
            Refused(host),
        )
        .file("evil.lobster", EVIL),
        attack(
            "literal sub-workflow nested two deep",
            "steps:\n  - id: s\n    workflow: mid.lobster\n",
            Refused(host),
        )
        .file("mid.lobster", "steps:\n  - id: m\n    workflow: evil.lobster\n")
        .file("evil.lobster", EVIL),
        attack(
            "templated sub-workflow inside a literal one",
            "steps:\n  - id: s\n    workflow: mid.lobster\n",
            Refused(host),
        )
        .file(
            "mid.lobster",
            "args:\n  f:\n    default: evil.lobster\nsteps:\n  - id: m\n    workflow: ${f}\n",
        )
        .file("evil.lobster", EVIL),
        attack(
            "templated sub-workflow whose exec stage runs a host process",
            "args:\n  sub:\n    default: ex.lobster\nsteps:\n  - id: s\n    workflow: ${sub}\n",
            Refused("runs host processes"),
        )
        .file(
            "ex.lobster",
            "steps:\n  - id: x\n    pipeline: exec --shell 'touch ../pwned'\n",
        ),
        attack(
            "templated sub-workflow reaching a foreign-import component",
            "args:\n  sub:\n    default: phone.lobster\nsteps:\n  - id: s\n    workflow: ${sub}\n",
            Refused(foreign),
        )
        .file("phone.lobster", "steps:\n  - id: n\n    uses: steps/phonehome.wasm\n"),
        attack(
            "templated sub-workflow with parallel host branches",
            "args:\n  sub:\n    default: par.lobster\nsteps:\n  - id: s\n    workflow: ${sub}\n",
            Refused(host),
        )
        .file(
            "par.lobster",
            "steps:\n  - id: p\n    parallel:\n      branches:\n        - id: b\n          run: touch ../pwned\n",
        ),
        attack(
            "templated sub-workflow with a for_each host step",
            "args:\n  sub:\n    default: fe.lobster\nsteps:\n  - id: s\n    workflow: ${sub}\n",
            Refused(host),
        )
        .file(
            "fe.lobster",
            "steps:\n  - id: l\n    pipeline: head\n    stdin: [[1]]\n  - id: f\n    for_each: $l.json\n    steps:\n      - id: t\n        run: touch ../pwned\n",
        ),
        attack(
            "templated sub-workflow asking for host_exec",
            "args:\n  sub:\n    default: he.lobster\nsteps:\n  - id: s\n    workflow: ${sub}\n",
            Refused("permissions.host_exec: true"),
        )
        .file(
            "he.lobster",
            "permissions:\n  host_exec: true\nsteps:\n  - id: x\n    pipeline: head\n",
        ),
        attack(
            "templated sub-workflow through `..`",
            "args:\n  sub:\n    default: ../evil.lobster\nsteps:\n  - id: s\n    workflow: ${sub}\n",
            Refused("outside the run's working directory"),
        )
        .setup(|run| std::fs::write(run.join("../evil.lobster"), EVIL).unwrap()),
        attack(
            "templated sub-workflow through a symlink",
            "args:\n  sub:\n    default: linkdir/evil.lobster\nsteps:\n  - id: s\n    workflow: ${sub}\n",
            Refused("outside the run's working directory"),
        )
        .setup(|run| {
            std::fs::write(run.join("../outside-evil.lobster"), EVIL).unwrap();
            std::fs::create_dir_all(run.join("../wfs")).unwrap();
            std::fs::write(run.join("../wfs/evil.lobster"), EVIL).unwrap();
            link(run, "../wfs");
        }),
        attack(
            "templated sub-workflow that is a hard link to a host workflow",
            "args:\n  sub:\n    default: hard.lobster\nsteps:\n  - id: s\n    workflow: ${sub}\n",
            Refused(host),
        )
        .setup(|run| {
            std::fs::write(run.join("../evil-src.lobster"), EVIL).unwrap();
            std::fs::hard_link(run.join("../evil-src.lobster"), run.join("hard.lobster")).unwrap();
        }),
        attack(
            "templated sub-workflow reading a host JSON file",
            "args:\n  sub:\n    default: ../hostcfg/secret.json\nsteps:\n  - id: s\n    workflow: ${sub}\n",
            Refused("outside the run's working directory"),
        )
        .setup(|run| {
            std::fs::create_dir_all(run.join("../hostcfg")).unwrap();
            std::fs::write(
                run.join("../hostcfg/secret.json"),
                format!("{{\"steps\": \"{SECRET}\"}}"),
            )
            .unwrap();
            std::os::unix::fs::symlink(run.join("../hostcfg"), run.join("cfg")).unwrap();
        }),
        attack(
            "literal sub-workflow through a symlinked directory",
            "steps:\n  - id: s\n    workflow: cfg/secret.json\n",
            Refused("outside the run's working directory"),
        )
        .setup(|run| {
            std::fs::create_dir_all(run.join("../hostcfg")).unwrap();
            std::fs::write(
                run.join("../hostcfg/secret.json"),
                format!("{{\"steps\": \"{SECRET}\"}}"),
            )
            .unwrap();
            std::os::unix::fs::symlink(run.join("../hostcfg"), run.join("cfg")).unwrap();
        }),
        attack(
            "templated sub-workflow that is a directory",
            "args:\n  sub:\n    default: mail\nsteps:\n  - id: s\n    workflow: ${sub}\n",
            Refused("is not a regular file"),
        ),
        attack(
            "templated sub-workflow naming a device",
            "args:\n  sub:\n    default: /dev/zero\nsteps:\n  - id: s\n    workflow: ${sub}\n",
            Refused("not a regular file"),
        ),
        attack(
            "sub-workflow chosen by an arg on the command line",
            "args:\n  sub:\n    default: ok.lobster\nsteps:\n  - id: s\n    workflow: ${sub}\n",
            Refused(host),
        )
        .file("ok.lobster", "steps:\n  - id: o\n    pipeline: head\n")
        .file("evil.lobster", EVIL)
        .args(&["--args-json", "{\"sub\":\"evil.lobster\"}"])
        .no_parity(),
        // ---- class 2: cwd moves the grants ----
        attack(
            "step cwd .. to list the mail outside the root",
            "steps:\n  - id: a\n    cwd: ..\n    pipeline: inbox.list\n",
            Refused(cwd_out),
        )
        .args(&["--allow-read", "mail"]),
        attack(
            "absolute step cwd",
            "steps:\n  - id: a\n    cwd: /tmp\n    pipeline: inbox.list\n",
            Refused("is absolute"),
        )
        .args(&["--allow-read", "mail"]),
        attack(
            "absolute cwd with write grants and inbox.apply",
            "steps:\n  - id: a\n    cwd: /\n    pipeline: inbox.list | inbox.categorize | inbox.apply --apply\n",
            Refused("is absolute"),
        )
        .args(&["--allow-write", "mail"]),
        attack(
            "workflow-wide cwd ..",
            "cwd: ..\nsteps:\n  - id: a\n    pipeline: inbox.list\n",
            Refused(cwd_out),
        )
        .args(&["--allow-read", "mail"]),
        attack(
            "cwd on a workflow: step",
            "steps:\n  - id: a\n    cwd: ../outside\n    workflow: list.lobster\n",
            Refused(cwd_out),
        )
        .file("list.lobster", "steps:\n  - id: l\n    pipeline: inbox.list\n")
        .args(&["--allow-read", "mail"]),
        attack(
            "cwd on a parallel branch",
            "steps:\n  - id: p\n    parallel:\n      branches:\n        - id: b\n          cwd: ..\n          pipeline: inbox.list\n",
            Refused(cwd_out),
        )
        .args(&["--allow-read", "mail"]),
        attack(
            "cwd on a for_each sub-step",
            "steps:\n  - id: l\n    pipeline: head\n    stdin: [[1]]\n  - id: f\n    for_each: $l.json\n    steps:\n      - id: t\n        cwd: ..\n        pipeline: inbox.list\n",
            Refused(cwd_out),
        )
        .args(&["--allow-read", "mail"]),
        attack(
            "templated cwd from an arg",
            "args:\n  d:\n    default: ..\nsteps:\n  - id: a\n    cwd: ${d}\n    pipeline: inbox.list\n",
            Refused(cwd_out),
        )
        .args(&["--allow-read", "mail"]),
        attack(
            "templated cwd from a step's output",
            "steps:\n  - id: a\n    pipeline: head\n    stdin: [\"..\"]\n  - id: b\n    cwd: $a.stdout\n    pipeline: inbox.list\n",
            Refused(cwd_out),
        )
        .args(&["--allow-read", "mail"]),
        attack(
            "templated absolute cwd",
            "args:\n  d:\n    default: /etc\nsteps:\n  - id: a\n    cwd: ${d}\n    pipeline: inbox.list\n",
            Refused("is absolute"),
        )
        .args(&["--allow-read", "mail"]),
        attack(
            "cwd through a symlink out of the working directory",
            "steps:\n  - id: a\n    cwd: linkdir\n    pipeline: inbox.list\n",
            Refused("leads through a link"),
        )
        .setup(|run| link(run, ".."))
        .args(&["--allow-read", "mail"]),
        attack(
            "cwd link/.. leaving through a symlink's parent",
            "steps:\n  - id: a\n    cwd: linkdir/..\n    pipeline: inbox.list\n",
            Refused("leads through a link"),
        )
        .setup(|run| link(run, "../outside"))
        .args(&["--allow-read", "mail"]),
        attack(
            "cwd into a not-yet-existing directory under a symlink",
            "steps:\n  - id: a\n    cwd: linkdir/new\n    pipeline: inbox.list\n",
            Refused("leads through a link"),
        )
        .setup(|run| link(run, "../outside"))
        .args(&["--allow-read", "mail"]),
        attack(
            "cwd sub/../.. escaping lexically",
            "steps:\n  - id: a\n    cwd: mail/../..\n    pipeline: inbox.list\n",
            Refused(cwd_out),
        )
        .args(&["--allow-read", "mail"]),
        attack(
            "cwd inside the run: grants still resolve at the run's directory",
            "steps:\n  - id: a\n    cwd: steps\n    pipeline: inbox.list\n",
            Harmless,
        )
        .args(&["--allow-read", "mail"]),
        attack(
            "sub-workflow in a subdirectory: its cwd is relative to its own file",
            "steps:\n  - id: a\n    workflow: sub/list.lobster\n",
            Refused(cwd_out),
        )
        .file(
            "sub/list.lobster",
            "steps:\n  - id: l\n    cwd: ../..\n    pipeline: inbox.list\n",
        )
        .args(&["--allow-read", "mail"]),
        attack(
            "templated sub-workflow with cwd ..",
            "args:\n  s:\n    default: c.lobster\nsteps:\n  - id: a\n    workflow: ${s}\n",
            Refused(cwd_out),
        )
        .file("c.lobster", "steps:\n  - id: l\n    cwd: ..\n    pipeline: inbox.list\n")
        .args(&["--allow-read", "mail"]),
        attack(
            "grant of .. on the command line",
            "steps:\n  - id: a\n    pipeline: inbox.list\n",
            Refused("is outside the allowed roots"),
        )
        .args(&["--allow-read", "mail/..:/mail"])
        .no_parity(),
        attack(
            "grant through a symlink inside the root",
            "steps:\n  - id: a\n    pipeline: inbox.list\n",
            Refused("is outside the allowed roots"),
        )
        .setup(|run| std::os::unix::fs::symlink(run.join("../mail"), run.join("mail/out")).unwrap())
        .args(&["--allow-read", "mail/out:/mail"])
        .no_parity(),
        attack(
            "permissions.read outside the roots",
            "permissions:\n  read: [..]\nsteps:\n  - id: a\n    pipeline: head\n",
            Refused("directory \"..\" must be relative to the working directory, without `..`"),
        ),
        attack(
            "permissions.write of a sibling directory",
            "permissions:\n  write: [steps]\nsteps:\n  - id: a\n    pipeline: head\n",
            Refused("permissions.write steps is outside the allowed roots"),
        ),
        // ---- class 3: env values copying host secrets ----
        attack(
            "env value $SECRET_TOKEN into a granted name",
            "steps:\n  - id: a\n    env:\n      API_TOKEN: $SECRET_TOKEN\n    pipeline: capgrab see\n",
            Harmless,
        )
        .args(&["--allow-write", "mail", "--allow-env", "API_TOKEN"]),
        attack(
            "env value ${SECRET_TOKEN}",
            "steps:\n  - id: a\n    env:\n      API_TOKEN: x${SECRET_TOKEN}y\n    pipeline: capgrab see\n",
            Harmless,
        )
        .args(&["--allow-write", "mail", "--allow-env", "API_TOKEN"]),
        attack(
            "workflow-wide env from the host",
            "env:\n  API_TOKEN: $SECRET_TOKEN\nsteps:\n  - id: a\n    pipeline: capgrab see\n",
            Harmless,
        )
        .args(&["--allow-write", "mail", "--allow-env", "API_TOKEN"]),
        attack(
            "env chained through a declared variable",
            "env:\n  A: $SECRET_TOKEN\nsteps:\n  - id: a\n    env:\n      API_TOKEN: $A\n    pipeline: capgrab see\n",
            Harmless,
        )
        .args(&["--allow-write", "mail", "--allow-env", "API_TOKEN"]),
        attack(
            "env in a parallel branch",
            "steps:\n  - id: p\n    parallel:\n      branches:\n        - id: b\n          env:\n            API_TOKEN: $SECRET_TOKEN\n          pipeline: capgrab see\n",
            Harmless,
        )
        .args(&["--allow-write", "mail", "--allow-env", "API_TOKEN"]),
        attack(
            "env in a for_each sub-step",
            "steps:\n  - id: l\n    pipeline: head\n    stdin: [[1]]\n  - id: f\n    for_each: $l.json\n    steps:\n      - id: t\n        env:\n          API_TOKEN: ${SECRET_TOKEN}\n        pipeline: capgrab see\n",
            Harmless,
        )
        .args(&["--allow-write", "mail", "--allow-env", "API_TOKEN"]),
        attack(
            "env on a uses: step",
            "steps:\n  - id: a\n    env:\n      API_TOKEN: $SECRET_TOKEN\n    uses: steps/capgrab.wasm\n    with: {}\n",
            Harmless,
        )
        .args(&["--allow-write", "mail", "--allow-env", "API_TOKEN"]),
        attack(
            "env in a templated sub-workflow",
            "args:\n  s:\n    default: e.lobster\nsteps:\n  - id: a\n    workflow: ${s}\n",
            Harmless,
        )
        .file(
            "e.lobster",
            "env:\n  API_TOKEN: $SECRET_TOKEN\nsteps:\n  - id: a\n    pipeline: capgrab see\n",
        )
        .args(&["--allow-write", "mail", "--allow-env", "API_TOKEN"]),
        attack(
            "env name not allowed by the policy",
            "steps:\n  - id: a\n    pipeline: capgrab see\n",
            Refused("--allow-env SECRET_TOKEN is not among the allowed variables"),
        )
        .args(&["--allow-write", "mail", "--allow-env", "SECRET_TOKEN"])
        .no_parity(),
        attack(
            "permissions.env naming the secret",
            "permissions:\n  env: [SECRET_TOKEN]\nsteps:\n  - id: a\n    pipeline: head\n",
            Refused("permissions.env SECRET_TOKEN is not among the allowed variables"),
        ),
        attack(
            "secret through an arg default",
            "args:\n  t:\n    default: $SECRET_TOKEN\nsteps:\n  - id: a\n    env:\n      API_TOKEN: ${t}\n    pipeline: capgrab see\n",
            Harmless,
        )
        .args(&["--allow-write", "mail", "--allow-env", "API_TOKEN"]),
        // ---- class 4: components plain pipelines refuse ----
        attack(
            "uses: a component trying TCP, UDP and name lookup (refused at each use)",
            "steps:\n  - id: n\n    uses: steps/net.wasm\n",
            Harmless,
        ),
        attack(
            "uses: a foreign-import component",
            "steps:\n  - id: n\n    uses: steps/phonehome.wasm\n",
            Refused(foreign),
        ),
        attack(
            "pipeline stage importing a foreign interface",
            "steps:\n  - id: n\n    pipeline: phonehome\n",
            Refused(foreign),
        ),
        attack(
            "foreign-import component in a parallel branch",
            "steps:\n  - id: p\n    parallel:\n      branches:\n        - id: b\n          pipeline: head | phonehome\n",
            Refused(foreign),
        ),
        attack(
            "foreign-import component in a for_each sub-step",
            "steps:\n  - id: l\n    pipeline: head\n    stdin: [[1]]\n  - id: f\n    for_each: $l.json\n    steps:\n      - id: t\n        pipeline: phonehome\n",
            Refused(foreign),
        ),
        attack(
            "templated uses: path",
            "args:\n  c:\n    default: steps/phonehome.wasm\nsteps:\n  - id: n\n    uses: ${c}\n",
            Refused(foreign),
        ),
        attack(
            "uses: a component through a symlink",
            "steps:\n  - id: n\n    uses: linkdir/phonehome.wasm\n",
            Refused(foreign),
        )
        .setup(|run| link(run, "steps")),
        attack(
            "uses: a hard link to a foreign-import component",
            "steps:\n  - id: n\n    uses: innocent.wasm\n",
            Refused(foreign),
        )
        .setup(|run| std::fs::hard_link(run.join("steps/phonehome.wasm"), run.join("innocent.wasm")).unwrap()),
        attack(
            "foreign-import component in a literal sub-workflow",
            "steps:\n  - id: s\n    workflow: n.lobster\n",
            Refused(foreign),
        )
        .file("n.lobster", "steps:\n  - id: n\n    pipeline: phonehome\n"),
        attack(
            "host exec stage in a workflow pipeline",
            "steps:\n  - id: x\n    pipeline: exec --shell 'touch ../pwned'\n",
            Refused("runs host processes"),
        ),
        attack(
            "host run: step",
            "steps:\n  - id: x\n    run: touch ../pwned\n",
            Refused(host),
        ),
        attack(
            "host command: step in a for_each",
            "steps:\n  - id: l\n    pipeline: head\n    stdin: [[1]]\n  - id: f\n    for_each: $l.json\n    steps:\n      - id: t\n        command: touch ../pwned\n",
            Refused(host),
        ),
        attack(
            "templated stage name",
            "args:\n  c:\n    default: exec\nsteps:\n  - id: x\n    pipeline: head | ${c} --shell 'touch ../pwned'\n",
            Refused("takes its command name from a template"),
        ),
        attack(
            "hostile component writing outside its grants",
            "steps:\n  - id: h\n    uses: steps/probe.wasm\n    stdin: null\n",
            Harmless,
        )
        .args(&["--allow-write", "mail"]),
    ];
    v.push(
        attack(
            "parallel branch with a host step beside a harmless one",
            "steps:\n  - id: p\n    parallel:\n      branches:\n        - id: a\n          pipeline: head\n        - id: b\n          run: touch ../pwned\n",
            Refused(host),
        ),
    );
    v
}

#[test]
fn the_untrusted_mode_holds_against_every_attack() {
    let Some(_probe) = World::new() else { return };
    let list = attacks();
    assert!(list.len() >= 50, "only {} attacks", list.len());
    let mut failures = Vec::new();
    for a in &list {
        let w = World::new().unwrap();
        for (name, text) in &a.files {
            let p = w.run.join(name);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        if let Some(f) = a.setup {
            f(&w.run);
        }
        let r = w.attack(&a.extra);
        let msg = message(&r);
        let mut wrong = Vec::new();
        match a.expect {
            Expect::Refused(text) => {
                if r.code == 0 || !msg.contains(text) {
                    wrong.push(format!("expected a refusal containing {text:?}"));
                }
            }
            Expect::Harmless => {}
        }
        let breaches = w.breaches();
        if !breaches.is_empty() {
            wrong.push(format!("breach: {breaches:?}"));
        }
        if r.stdout.contains(SECRET) || r.stderr.contains(SECRET) {
            wrong.push("the secret leaked into the output".into());
        }
        if a.parity {
            let c = w.run(&["check", "--policy", "policy.toml", "wf.lobster"]);
            let flagged = c.code == 1;
            let deferred = c.stdout.contains("decided at run time");
            let refused = matches!(a.expect, Expect::Refused(_));
            if flagged && !refused {
                wrong.push(format!("check flags what run allows: {}", c.stdout));
            }
            if refused && !flagged && !deferred {
                wrong.push(format!(
                    "run refuses but check neither flags nor defers: {}",
                    c.stdout
                ));
            }
        }
        if !wrong.is_empty() {
            failures.push(format!(
                "{}: {}\n  run exit {}: {msg}",
                a.name,
                wrong.join("; "),
                r.code
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Pause `wf.lobster` (its first step is an approval gate) and return the
/// resume token.
fn pause(w: &World, extra: &[&str]) -> String {
    let r = w.attack(extra);
    assert_eq!(r.code, 0, "{r:?}");
    let v = r.json();
    assert_eq!(v["status"], "needs_approval", "{v}");
    crate::common::token_of(&v)
}

fn resume(w: &World, token: &str) -> Run {
    w.run(&[
        "resume",
        "--mode",
        "tool",
        "--policy",
        "policy.toml",
        "--token",
        token,
        "--approve",
        "yes",
    ])
}

const GATED_LIST: &str =
    "steps:\n  - id: gate\n    approval: ok?\n  - id: l\n    pipeline: inbox.list\n";

#[test]
fn resume_refuses_a_preferred_component_dropped_on_the_step_path() {
    let Some(w) = World::new() else { return };
    std::fs::write(w.run.join("wf.lobster"), GATED_LIST).unwrap();
    let token = pause(&w, &["--allow-read", "mail"]);
    // `inbox.list.wasm` is tried before `inbox_list.wasm`: a different
    // component under the preferred name.
    std::fs::copy(
        w.run.join("steps/probe.wasm"),
        w.run.join("steps/inbox.list.wasm"),
    )
    .unwrap();
    let r = resume(&w, &token);
    assert_eq!(r.code, 1, "{r:?}");
    let msg = message(&r);
    assert!(
        msg.contains("step inbox.list changed since the run paused"),
        "{msg}"
    );
    // Refused before the claim: without the intruder the token still works.
    std::fs::remove_file(w.run.join("steps/inbox.list.wasm")).unwrap();
    let r = resume(&w, &token);
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(r.json()["status"], "ok");
}

#[test]
fn resume_refuses_the_same_component_from_another_file() {
    let Some(w) = World::new() else { return };
    std::fs::write(w.run.join("wf.lobster"), GATED_LIST).unwrap();
    let token = pause(&w, &["--allow-read", "mail"]);
    std::fs::copy(
        w.run.join("steps/inbox_list.wasm"),
        w.run.join("steps/inbox.list.wasm"),
    )
    .unwrap();
    let r = resume(&w, &token);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(message(&r).contains("now resolves to"), "{r:?}");
}

#[test]
fn resume_refuses_a_sub_workflow_rewritten_while_paused() {
    let Some(w) = World::new() else { return };
    for (wf, sub) in [
        ("steps:\n  - id: gate\n    approval: ok?\n  - id: s\n    workflow: sub.lobster\n", "sub.lobster"),
        (
            "args:\n  f:\n    default: sub2.lobster\nsteps:\n  - id: gate\n    approval: ok?\n  - id: s\n    workflow: ${f}\n",
            "sub2.lobster",
        ),
    ] {
        std::fs::write(w.run.join("wf.lobster"), wf).unwrap();
        std::fs::write(w.run.join(sub), "steps:\n  - id: o\n    pipeline: head\n").unwrap();
        let token = pause(&w, &[]);
        std::fs::write(w.run.join(sub), EVIL).unwrap();
        let r = resume(&w, &token);
        assert_eq!(r.code, 1, "{r:?}");
        let msg = message(&r);
        assert!(msg.contains("changed since the run paused"), "{msg}");
        assert!(w.breaches().is_empty(), "{:?}", w.breaches());
    }
}

#[test]
fn a_sub_workflow_rewritten_by_an_earlier_step_is_judged_when_it_loads() {
    let Some(w) = World::new() else { return };
    // The plan (built-ins only: milliseconds) walks sub.lobster while it is
    // harmless; then a for_each pauses 4 s between its two items, and the
    // test — standing in for an earlier step with write access — rewrites
    // the literal sub-workflow before the step that loads it.
    std::fs::write(
        w.run.join("wf.lobster"),
        "steps:\n  - id: l\n    pipeline: head\n    stdin: [[1, 2]]\n  - id: f\n    for_each: $l.json\n    batch_size: 1\n    pause_ms: 4000\n    steps:\n      - id: t\n        pipeline: head\n  - id: s\n    workflow: sub.lobster\n",
    )
    .unwrap();
    std::fs::write(
        w.run.join("sub.lobster"),
        "steps:\n  - id: o\n    pipeline: head\n",
    )
    .unwrap();
    let child = w
        .lobster(&[
            "run",
            "--mode",
            "tool",
            "--policy",
            "policy.toml",
            "wf.lobster",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1500));
    std::fs::write(w.run.join("sub.lobster"), EVIL).unwrap();
    let r = finish(child.wait_with_output().unwrap());
    assert_eq!(r.code, 1, "{r:?}");
    let msg = message(&r);
    // Refused when the step loads the file, not by the plan.
    assert!(
        msg.starts_with("Workflow step s sub-workflow sub.lobster: policy refuses this run")
            && msg.contains("runs a host shell command, which the untrusted policy forbids"),
        "{msg}"
    );
    assert!(w.breaches().is_empty(), "{:?}", w.breaches());
}

#[test]
fn check_names_what_only_the_run_can_decide() {
    let Some(w) = World::new() else { return };
    std::fs::write(
        w.run.join("wf.lobster"),
        "args:\n  sub:\n    default: s.lobster\n  d:\n    default: mail\nsteps:\n  - id: s\n    workflow: ${sub}\n  - id: c\n    cwd: ${d}\n    pipeline: head\n",
    )
    .unwrap();
    let r = w.run(&["check", "--policy", "policy.toml", "wf.lobster"]);
    assert_eq!(r.code, 0, "{r:?}");
    assert!(
        r.stdout.contains("warning: wf.lobster:8: step s runs a templated sub-workflow ${sub}: decided at run time"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout
            .contains("warning: wf.lobster:9: step c cwd ${d} is templated: decided at run time"),
        "{}",
        r.stdout
    );
    let r = w.run(&[
        "check",
        "--format",
        "json",
        "--policy",
        "policy.toml",
        "wf.lobster",
    ]);
    let v = r.json();
    assert_eq!(v["ok"], true, "{v}");
    assert_eq!(
        v["decidedAtRunTime"].as_array().map(Vec::len),
        Some(2),
        "{v}"
    );
    // A literal escape is a problem, with its position.
    std::fs::write(
        w.run.join("wf.lobster"),
        "steps:\n  - id: c\n    cwd: ../outside\n    pipeline: head\n",
    )
    .unwrap();
    let r = w.run(&["check", "--policy", "policy.toml", "wf.lobster"]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(
        r.stdout
            .contains("wf.lobster:2: step c cwd ../outside leads to"),
        "{}",
        r.stdout
    );
}

#[test]
fn a_templated_uses_path_is_held_to_its_pin_when_it_loads() {
    let Some(w) = World::new() else { return };
    // Pinned to probe's bytes, but the arg swaps in another component.
    let probe = std::fs::read(w.run.join("steps/probe.wasm")).unwrap();
    let digest = blake3::hash(&probe).to_hex().to_string();
    std::fs::write(
        w.run.join("lobster.lock"),
        format!("version = 1\n\n[steps]\n\"steps/probe.wasm\" = \"{digest}\"\n"),
    )
    .unwrap();
    std::fs::copy(
        w.run.join("steps/capgrab.wasm"),
        w.run.join("steps/probe.wasm"),
    )
    .unwrap();
    std::fs::write(
        w.run.join("wf.lobster"),
        "args:\n  c:\n    default: steps/probe.wasm\nsteps:\n  - id: p\n    uses: ${c}\n",
    )
    .unwrap();
    let r = w.run(&["run", "--mode", "tool", "wf.lobster"]);
    assert_eq!(r.code, 1, "{r:?}");
    let msg = message(&r);
    assert!(
        msg.contains("step steps/probe.wasm does not match its pin in lobster.lock"),
        "{msg}"
    );
}

#[test]
fn trusted_env_values_still_read_the_host_environment() {
    // The documented difference: without a policy (trusted), `env:` values
    // expand host variables first; under untrusted (above) they never do.
    let Some(w) = World::new() else { return };
    std::fs::write(
        w.run.join("wf.lobster"),
        "env:\n  A: wf-$LANG\nsteps:\n  - id: a\n    env:\n      X: ${SECRET_TOKEN}+$A\n    run: printf %s \"$X\"\n",
    )
    .unwrap();
    let r = w.run(&["run", "--mode", "tool", "wf.lobster"]);
    assert_eq!(r.code, 0, "{r:?}");
    assert_eq!(
        r.json()["output"],
        serde_json::json!([format!("{SECRET}+wf-C.UTF-8")])
    );
}
