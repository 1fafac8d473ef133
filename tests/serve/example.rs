//! The shipped gateway, `examples/serve/`, started as the README starts it
//! (its own serve.toml, policies, workflows and the example steps): the
//! untrusted community tenant's gated `publish` decided by a human through
//! the approval page, the trusted ops tenant approving its own gate, and
//! the request log on stderr (one line per request, no secrets).

use super::{Resp, Server, BIN};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const COMMUNITY: &str = "community-demo-token";
const OPS: &str = "ops-demo-token";

fn example_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/serve")
}

/// The example gateway on a free port, its state in `state`, its stderr in
/// `log`. `None` (skipped loudly, failing under CI) without the example steps.
fn start_example(state: &Path, log: &Path) -> Option<Server> {
    let greet = example_dir().join("../steps/target/wasm32-wasip2/release/greet.wasm");
    if !greet.is_file() {
        if std::env::var_os("CI").is_some() || std::env::var_os("LOBSTER_REQUIRE_GUESTS").is_some()
        {
            panic!("{} is missing; run tests/build-guests.sh", greet.display());
        }
        eprintln!("SKIPPED: the example steps are not built (tests/build-guests.sh)");
        return None;
    }
    let stderr = std::fs::File::create(log).unwrap();
    let mut cmd = Command::new(BIN);
    cmd.args(["serve", "--config"])
        .arg(example_dir().join("serve.toml"))
        .args(["--listen", "127.0.0.1:0"])
        .env("COMMUNITY_TOKEN", COMMUNITY)
        .env("OPS_TOKEN", OPS)
        .env("LOBSTER_STATE_DIR", state)
        .env_remove("LOBSTER_POLICY")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(stderr);
    Some(Server::spawn_with(&mut cmd))
}

fn ok(r: &Resp) -> Value {
    assert_eq!(r.status, 200, "{}", r.body);
    r.json()
}

#[test]
fn the_example_gateway_runs_gates_and_logs_as_the_readme_says() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("stderr.log");
    let Some(s) = start_example(&dir.path().join("state"), &log) else {
        return;
    };

    // A first request: the catalog's `hello`, through the example step.
    let v = ok(&s.run(
        COMMUNITY,
        json!({"workflow": "hello", "args": {"who": "Ada"}}),
    ));
    assert_eq!(v["status"], "ok");
    assert_eq!(v["output"], json!([{"greeting": "hello Ada!"}]));

    // The README's `publish`: the community's agent cannot approve it.
    let v = ok(&s.run(
        COMMUNITY,
        json!({"workflow": "publish", "args": {"post": 42}}),
    ));
    assert_eq!(v["status"], "needs_approval", "{v}");
    let run_id = v["runId"].as_str().unwrap().to_string();
    assert_eq!(
        v["requiresApproval"]["preview"],
        "hello readers of post 42! Post 42 is out."
    );
    let r = s.call(
        "POST",
        &format!("/v1/runs/{run_id}/resume"),
        COMMUNITY,
        Some(json!({"approve": true})),
    );
    assert_eq!(r.status, 403, "{}", r.body);

    // The approvals list and the page name the workflow and the gate's step.
    let listed = s
        .approvals(COMMUNITY)
        .into_iter()
        .find(|a| a["runId"] == run_id.as_str())
        .unwrap();
    assert_eq!(listed["workflow"], "publish");
    assert_eq!(listed["step"], "review");
    let link = s.link_for(COMMUNITY, &run_id);
    // The link alone decides nothing: the community's approver, ann,
    // signs in with her own token (the README's sign-in line).
    let alone = s.form(&link, "decision=approve");
    assert_eq!(alone.status, 401, "{}", alone.body);
    let cookie = s
        .sign_in(&link, ("ann", "ann-approver-token"))
        .unwrap_or_else(|r| panic!("sign-in refused: {} {}", r.status, r.body));
    let session = format!("lobster_approver={cookie}");
    let page = s.raw("GET", &link, &[("Cookie", session.as_str())], b"");
    assert_eq!(page.status, 200);
    assert!(
        page.body.contains(
            "<p>Workflow <b id=\"workflow\">publish</b>, waiting at step <b id=\"step\">review</b>.</p>"
        ),
        "{}",
        page.body
    );
    assert!(page.body.contains("Publish the announcement of post 42?"));
    assert!(page
        .body
        .contains("<pre id=\"preview\">hello readers of post 42! Post 42 is out.</pre>"));
    // A human approves: the run goes on and publishes.
    let done = s.form_as(&link, "decision=approve", &cookie);
    assert_eq!(done.status, 200);
    assert!(done.body.contains("<h1>Approved</h1>"), "{}", done.body);
    assert!(
        done.body.contains("<b id=\"status\">ok</b>"),
        "{}",
        done.body
    );
    let v = ok(&s.run(
        COMMUNITY,
        json!({"pipeline": "state.get published-post-42"}),
    ));
    assert_eq!(
        v["output"],
        json!(["hello readers of post 42! Post 42 is out."])
    );

    // A mistyped flag is refused through this door too, before anything runs.
    let v = ok(&s.run(COMMUNITY, json!({"pipeline": "state.get x | head --nn 1"})));
    assert_eq!(
        v["error"],
        json!({"type": "parse_error", "message": "Unknown flag --nn for head (did you mean --n?)"})
    );

    // The community's policy refuses host processes; ops (trusted) may run
    // them and approve its own gate.
    let v = ok(&s.run(COMMUNITY, json!({"pipeline": "exec echo hi"})));
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("runs host processes, which the untrusted policy forbids"),
        "{v}"
    );
    let v = ok(&s.run(
        OPS,
        json!({"pipeline": "exec --json --shell 'echo [1,2]' | approve --prompt ok?"}),
    ));
    let ops_run = v["runId"].as_str().unwrap().to_string();
    let page_step = s
        .approvals(OPS)
        .into_iter()
        .find(|a| a["runId"] == ops_run.as_str())
        .unwrap();
    assert_eq!(page_step["workflow"], Value::Null);
    assert_eq!(page_step["step"], "stage 2: approve --prompt ok?");
    // The whole entry, in its order: what the gate asks, and the link.
    let keys: Vec<&str> = page_step
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        [
            "runId",
            "approvalId",
            "workflow",
            "step",
            "prompt",
            "items",
            "preview",
            "capabilities",
            "createdAt",
            "approveUrl"
        ],
        "{page_step}"
    );
    assert_eq!(page_step["prompt"], "ok?");
    assert_eq!(page_step["items"], json!([1, 2]));
    assert_eq!(page_step["preview"], "[\n  1,\n  2\n]", "{page_step}");
    assert!(page_step["approvalId"].is_string() && page_step["createdAt"].is_string());
    assert!(page_step["approveUrl"].as_str().unwrap().contains("/a/"));
    let r = s.call(
        "POST",
        &format!("/v1/runs/{ops_run}/resume"),
        OPS,
        Some(json!({"approve": true})),
    );
    assert_eq!(ok(&r)["output"], json!([1, 2]));

    // One log line per request: method, path, status, ms, tenant, run; no
    // token, no link, no body.
    drop(s);
    let text = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("lobster serve: "))
        .collect();
    let created = lines
        .iter()
        .find(|l| {
            l.starts_with("lobster serve: POST /v1/runs 200 ")
                && l.ends_with(&format!("tenant=community run={run_id}"))
        })
        .unwrap_or_else(|| panic!("{text}"));
    let ms: f64 = created
        .split(' ')
        .nth(5)
        .unwrap()
        .trim_end_matches("ms")
        .parse()
        .unwrap();
    assert!(ms >= 0.0);
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("lobster serve: POST /a/<link> 200 ")
                && l.ends_with(&format!("tenant=community run={run_id}"))),
        "{text}"
    );
    // The approver's sign-in is logged against the link's tenant and run too.
    assert!(
        lines.iter().any(
            |l| l.starts_with("lobster serve: POST /a/<link>/sign-in 303 ")
                && l.ends_with(&format!("tenant=community run={run_id}"))
        ),
        "{text}"
    );
    assert!(
        lines.iter().any(|l| l.starts_with(&format!(
            "lobster serve: POST /v1/runs/{run_id}/resume 403 "
        )) && l.ends_with(&format!("tenant=community run={run_id}"))),
        "{text}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("lobster serve: GET /v1/approvals 200 ")
                && l.ends_with("tenant=ops run=-")),
        "{text}"
    );
    let requests = 15;
    assert_eq!(lines.len(), requests, "{text}");
    for secret in [
        COMMUNITY,
        OPS,
        link.trim_start_matches("/a/"),
        "post 42",
        "Ada",
        "ann-approver-token",
        &cookie,
    ] {
        assert!(!text.contains(secret), "{secret:?} in the log:\n{text}");
    }
}

#[test]
fn the_example_files_are_what_the_readme_names() {
    // The README starts the example gateway with one line.
    let readme = std::fs::read_to_string(example_dir().join("../../README.md")).unwrap();
    assert!(
        readme.contains("lobster serve --config examples/serve/serve.toml"),
        "the README's serve section starts examples/serve"
    );
    for file in [
        "serve.toml",
        "community-policy.toml",
        "ops-policy.toml",
        "workflows/publish.lobster",
        "workflows/hello.lobster",
    ] {
        assert!(example_dir().join(file).is_file(), "{file}");
    }
}
