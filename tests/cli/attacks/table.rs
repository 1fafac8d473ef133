//! The attack table, across the five classes and their neighbours, and the
//! test that runs every attack in it under the untrusted policy.

use super::{attack, link, message, Attack, Expect, World, EVIL, SECRET};

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
