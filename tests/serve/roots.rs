//! Tenants are separate roots (issue 22): each tenant's runs start in its
//! own `workdir` and every file they name — a sub-workflow, a `uses:`
//! component, a `cwd:` — is opened beneath that root or the tenant's own
//! catalog and step directories. A hostile tenant agent (trusted `acme`,
//! untrusted `beta`) tries to reach the other tenant's catalog, the other
//! tenant's root and a directory outside both, through three doors
//! (`workflowText` on `/v1/runs`, a catalog workflow whose sub-workflow is
//! an argument on `/v1/runs`, the same tool through `/mcp`) and several
//! encodings (absolute, `../`, a symlink in its own root, a templated
//! path). Every case asserts the refusal, that a missing file gets the
//! very same answer (no existence oracle), that no answer names a server
//! path, and that the target workflow — which would write a canary file
//! and read a marker — never ran.

use super::{mcp_call, sha, Server, BIN};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Command;

const ACME: &str = "roots-acme-token";
const BETA: &str = "roots-beta-token";
/// Text only the target workflows hold: seeing it means one was read.
const MARK: &str = "marker-4b1f0e-other-tenant";
const REFUSED: &str = "was not found among this tenant's files";

struct World {
    dir: tempfile::TempDir,
    server: Server,
    /// Every target workflow calls it first: it must never be called.
    listener: Listener,
}

/// A loopback listener that answers 500 to anything and counts connections.
struct Listener {
    addr: std::net::SocketAddr,
    hits: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl Listener {
    fn start() -> Listener {
        use std::io::{Read, Write};
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let hits = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counted = hits.clone();
        std::thread::spawn(move || {
            for mut c in l.incoming().flatten() {
                counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let _ = c.set_read_timeout(Some(std::time::Duration::from_millis(200)));
                let _ = c.read(&mut [0u8; 4096]);
                let _ = c.write_all(
                    b"HTTP/1.1 500 no\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                );
            }
        });
        Listener { addr, hits }
    }
}

/// A workflow that, if it ever ran (trusted), calls `listener`, writes
/// `canary` and outputs the marker.
fn evil(canary: &Path, listener: &Listener) -> String {
    format!(
        "name: evil\ndescription: {MARK}\nsteps:\n  - id: call\n    on_error: continue\n    pipeline: openclaw.invoke --url http://{} --tool echo --action json\n  - id: x\n    run: touch {}; echo {MARK}\n",
        listener.addr,
        canary.display()
    )
}

impl World {
    fn new() -> World {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().canonicalize().unwrap();
        let listener = Listener::start();
        std::fs::write(d.join("trusted.toml"), "trust = \"trusted\"\n").unwrap();
        for t in ["acme", "beta"] {
            let cat = d.join(format!("{t}-cat"));
            std::fs::create_dir_all(&cat).unwrap();
            std::fs::write(
                cat.join("pick.lobster"),
                "name: pick\nargs:\n  sub:\n    default: inner.lobster\nsteps:\n  - id: s\n    workflow: ${sub}\n",
            )
            .unwrap();
            std::fs::write(
                cat.join("inner.lobster"),
                "steps:\n  - id: i\n    pipeline: json\n",
            )
            .unwrap();
            // Not a catalog entry of its own: a sub-workflow only this
            // tenant's catalog may name.
            std::fs::create_dir_all(cat.join("private")).unwrap();
            std::fs::write(
                cat.join("private/secret.lobster"),
                evil(&d.join(format!("pwned-{t}-cat")), &listener),
            )
            .unwrap();
            // Each tenant's root exists before start, with a file of its own.
            let root = d.join(format!("state/work/{t}"));
            std::fs::create_dir_all(&root).unwrap();
            std::fs::write(
                root.join("own.lobster"),
                evil(&d.join(format!("pwned-{t}-root")), &listener),
            )
            .unwrap();
        }
        std::fs::create_dir_all(d.join("outside")).unwrap();
        std::fs::write(
            d.join("outside/evil.lobster"),
            evil(&d.join("pwned-outside"), &listener),
        )
        .unwrap();
        // A link each tenant could have made in its own root, into the
        // other tenant's catalog.
        std::os::unix::fs::symlink(d.join("beta-cat"), d.join("state/work/acme/link")).unwrap();
        std::os::unix::fs::symlink(d.join("acme-cat"), d.join("state/work/beta/link")).unwrap();
        let config = format!(
            "state = \"state\"\n\
[[tenant]]\nname = \"acme\"\ntoken_sha256 = \"{}\"\npolicy = \"trusted.toml\"\nself_approve = true\nworkflows = [\"acme-cat\"]\n\
[[tenant]]\nname = \"beta\"\ntoken_sha256 = \"{}\"\nself_approve = true\nworkflows = [\"beta-cat\"]\n",
            sha(ACME),
            sha(BETA)
        );
        std::fs::write(d.join("serve.toml"), config).unwrap();
        let server = Server::spawn(
            Command::new(BIN)
                .current_dir(&d)
                .args(["serve", "--config"])
                .arg(d.join("serve.toml"))
                .args(["--listen", "127.0.0.1:0"])
                .env_remove("LOBSTER_POLICY"),
        );
        World {
            dir,
            server,
            listener,
        }
    }

    /// Whether anything connected to the listener.
    fn called(&self) -> bool {
        self.listener.hits.load(std::sync::atomic::Ordering::SeqCst) > 0
    }

    fn path(&self) -> PathBuf {
        self.dir.path().canonicalize().unwrap()
    }

    /// Canary files that appeared (none may).
    fn canaries(&self) -> Vec<String> {
        std::fs::read_dir(self.path())
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("pwned"))
            .collect()
    }
}

#[derive(Clone, Copy, Debug)]
enum Door {
    /// `workflowText` naming the path as a literal sub-workflow.
    Inline,
    /// `workflowText` naming it through a templated arg.
    InlineTemplated,
    /// The catalog's `pick` with the path as its `sub` arg, on /v1/runs.
    Catalog,
    /// The same tool through /mcp.
    Mcp,
}

/// Run `target` through `door` as `token`; the error message (the run
/// must fail).
fn attempt(w: &World, door: Door, token: &str, target: &str) -> String {
    let inline = format!("name: probe\nsteps:\n  - id: s\n    workflow: {target}\n");
    let templated = format!(
        "name: probe\nargs:\n  sub:\n    default: {target}\nsteps:\n  - id: s\n    workflow: ${{sub}}\n"
    );
    let v: Value = match door {
        Door::Inline => w.server.run(token, json!({"workflowText": inline})).json(),
        Door::InlineTemplated => w
            .server
            .run(token, json!({"workflowText": templated}))
            .json(),
        Door::Catalog => w
            .server
            .run(token, json!({"workflow": "pick", "args": {"sub": target}}))
            .json(),
        Door::Mcp => {
            let r = mcp_call(&w.server, token, "pick", json!({"sub": target}));
            assert_eq!(r["isError"], true, "{door:?} {target}: {r}");
            match &r["structuredContent"] {
                Value::Object(_) => r["structuredContent"].clone(),
                _ => json!({"ok": false, "error": {"message": r["content"][0]["text"]}}),
            }
        }
    };
    assert_eq!(v["ok"], false, "{door:?} {target}: ran: {v}");
    v["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

#[test]
fn every_path_a_tenant_names_stays_in_its_roots() {
    let w = World::new();
    let d = w.path();
    let server_path = d.to_string_lossy().into_owned();
    let mut failures = Vec::new();
    let mut ran = 0;
    for (token, me, other) in [(ACME, "acme", "beta"), (BETA, "beta", "acme")] {
        // From the tenant's root (inline doors) and from its catalog.
        let from_root = |p: &str| format!("../../../{p}");
        let from_cat = |p: &str| format!("../{p}");
        let other_cat = format!("{other}-cat/private/secret.lobster");
        let other_root = format!("state/work/{other}/own.lobster");
        for door in [
            Door::Inline,
            Door::InlineTemplated,
            Door::Catalog,
            Door::Mcp,
        ] {
            let rel = |p: &str| match door {
                Door::Inline | Door::InlineTemplated => from_root(p),
                Door::Catalog | Door::Mcp => from_cat(p),
            };
            let mut targets = vec![
                // Another tenant's catalog: absolute, then `../`.
                d.join(&other_cat).display().to_string(),
                rel(&other_cat),
                // Another tenant's root.
                rel(&other_root),
                d.join(&other_root).display().to_string(),
                // Outside every root.
                rel("outside/evil.lobster"),
                "/etc/passwd".to_string(),
            ];
            if matches!(door, Door::Inline | Door::InlineTemplated) {
                // A symlink in its own root into the other's catalog.
                targets.push("link/private/secret.lobster".into());
                // Its own catalog's private file is not a file of its root
                // (the catalog's own workflows may name it, nothing else).
                targets.push(from_root(&format!("{me}-cat/private/secret.lobster")));
            }
            let missing = attempt(&w, door, token, "nope/missing.lobster");
            ran += 1;
            if !missing.contains(REFUSED) {
                failures.push(format!("{me} {door:?} missing: {missing}"));
            }
            for target in &targets {
                ran += 1;
                let msg = attempt(&w, door, token, target);
                let same = msg.replace(target.as_str(), "nope/missing.lobster") == missing;
                if !msg.contains(REFUSED) || !same {
                    failures.push(format!(
                        "{me} {door:?} {target}: not the missing file's answer:\n  {msg}\n  {missing}"
                    ));
                }
                if msg.contains(&server_path) && !target.contains(&server_path) {
                    failures.push(format!(
                        "{me} {door:?} {target}: names a server path: {msg}"
                    ));
                }
                if msg.contains(MARK) {
                    failures.push(format!("{me} {door:?} {target}: read the file: {msg}"));
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {ran}:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(ran >= 60, "{ran}");
    assert!(w.canaries().is_empty(), "{:?}", w.canaries());
    assert!(!w.called(), "a target workflow called the listener");
    // What is theirs still runs: a file of acme's root from an inline
    // workflow (and its canary is acme's own), the catalog's own files.
    let r = w
        .server
        .run(
            ACME,
            json!({"workflowText": "name: own\nsteps:\n  - id: s\n    workflow: own.lobster\n"}),
        )
        .json();
    assert_eq!(r["status"], "ok", "{r}");
    assert_eq!(w.canaries(), vec!["pwned-acme-root".to_string()]);
    // (the positive control shows the listener check can fail)
    assert!(w.called(), "acme's own workflow did not reach the listener");
    let r = w.server.run(BETA, json!({"workflow": "pick"})).json();
    assert_eq!(r["status"], "ok", "{r}");
    let r = mcp_call(&w.server, ACME, "pick", json!({}));
    assert_ne!(r["isError"], true, "{r}");
}

#[test]
fn cwd_components_and_listings_stay_in_the_tenants_root() {
    let w = World::new();
    let d = w.path();
    let server_path = d.to_string_lossy().into_owned();
    // A cwd (trusted acme runs host commands) out of its root, by `..`,
    // by the link, absolute: refused, nothing written.
    for cwd in ["../beta", "link", "../../../outside", "/tmp"] {
        let wf = format!(
            "name: c\nsteps:\n  - id: s\n    cwd: {cwd}\n    run: touch pwned-cwd; echo hi\n"
        );
        let v = w.server.run(ACME, json!({"workflowText": wf})).json();
        assert_eq!(v["ok"], false, "{cwd}: {v}");
        let msg = v["error"]["message"].as_str().unwrap();
        assert!(
            msg.contains("must stay inside the run's working directory"),
            "{cwd}: {msg}"
        );
        assert!(!msg.contains(&server_path), "{cwd}: {msg}");
    }
    // A relative cwd inside the root works, and host commands start in
    // the tenant's root, not the server's directory.
    std::fs::create_dir_all(d.join("state/work/acme/sub")).unwrap();
    let v = w
        .server
        .run(
            ACME,
            json!({"workflowText": "name: c\nsteps:\n  - id: s\n    cwd: sub\n    run: touch made-here; echo ok\n  - id: t\n    run: touch at-root; echo ok\n"}),
        )
        .json();
    assert_eq!(v["status"], "ok", "{v}");
    assert!(d.join("state/work/acme/sub/made-here").is_file());
    assert!(d.join("state/work/acme/at-root").is_file());
    assert!(!d.join("at-root").exists());
    assert!(!w.called());
    // A `uses:` component from the other tenant's catalog or outside:
    // refused like a missing one.
    std::fs::write(d.join("outside/x.wasm"), b"\0asm").unwrap();
    let missing = {
        let wf = "name: u\nsteps:\n  - id: s\n    uses: nope.wasm\n";
        let v = w.server.run(BETA, json!({"workflowText": wf})).json();
        v["error"]["message"].as_str().unwrap().to_string()
    };
    assert!(missing.contains(REFUSED), "{missing}");
    for target in ["../../../outside/x.wasm", "link/pick.lobster"] {
        let wf = format!("name: u\nsteps:\n  - id: s\n    uses: {target}\n");
        let v = w.server.run(BETA, json!({"workflowText": wf})).json();
        let msg = v["error"]["message"].as_str().unwrap();
        assert_eq!(msg.replace(target, "nope.wasm"), missing, "{target}");
        assert!(!msg.contains(&server_path), "{msg}");
    }
    // lobster_workflows names catalog files, never where they are.
    let r = mcp_call(&w.server, ACME, "lobster_workflows", json!({}));
    let text = r.to_string();
    assert!(text.contains("pick.lobster"), "{text}");
    assert!(!text.contains(&server_path), "{text}");
    // The inline document itself lives in the tenant's root.
    assert!(std::fs::read_dir(d.join("state/work/acme"))
        .unwrap()
        .flatten()
        .any(|e| e.file_name().to_string_lossy().starts_with(".inline-")));
    assert!(w.canaries().is_empty(), "{:?}", w.canaries());
}

#[test]
fn workdirs_that_overlap_are_refused_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for (a, b, says) in [
        (
            "\"shared\"",
            "\"shared/inner\"",
            "overlaps tenant a's workdir",
        ),
        ("\"x\"", "\".\"", "holds the state directory"),
        ("\"x\"", "\"state/tenants/b\"", "inside the tenants' stores"),
    ] {
        let config = format!(
            "state = \"state\"\n[[tenant]]\nname = \"a\"\ntoken_sha256 = \"{}\"\nself_approve = true\nworkdir = {a}\n[[tenant]]\nname = \"b\"\ntoken_sha256 = \"{}\"\nself_approve = true\nworkdir = {b}\n",
            sha("a"),
            sha("b")
        );
        std::fs::write(d.join("serve.toml"), config).unwrap();
        let out = Command::new(BIN)
            .args(["serve", "--config"])
            .arg(d.join("serve.toml"))
            .args(["--listen", "127.0.0.1:0"])
            .env_remove("LOBSTER_POLICY")
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{a} {b}");
        assert!(
            err.contains(says) && err.contains("tenant b: workdir"),
            "{a} {b}: {err}"
        );
    }
}
