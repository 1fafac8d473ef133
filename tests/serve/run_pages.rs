//! The run pages (`/r/{link}`) and the approval page that links them, for
//! a tenant's approvers: who may read them (the tenant's token or one of
//! its signed-in approvers — never the link alone, another tenant's token
//! or another tenant's approver), how a catalog workflow is named there
//! (its name, never a path on the server), and what a human sees in a real
//! browser (headless Chromium through `run-page-in-browser.mjs`).

use super::{setup, start, Server, ACME, ALICE, BETA, BOB, SELF};
use serde_json::{json, Value};
use std::path::Path;
use std::process::Command;

/// A catalog workflow whose gate stops at step `check` with two object items.
const SEND_MAIL: &str = "name: send-mail\nsteps:\n  - id: draft\n    pipeline: commands.list | head --n 1\n  - id: check\n    stdin:\n      - {to: ann@example.com, subject: \"Hi <b>\"}\n      - {to: bob@example.com, subject: Re}\n    approval: Send these two?\n  - id: send\n    when: $check.approved\n    pipeline: exec --shell 'echo sent'\n";

/// A server whose tenant acme has the catalog workflow `send-mail`, and one
/// of its runs paused at the gate: (server, run id, approval link path).
fn send_mail_paused(dir: &Path) -> (Server, String, String) {
    std::fs::create_dir(dir.join("catalog")).unwrap();
    std::fs::write(dir.join("catalog/send-mail.lobster"), SEND_MAIL).unwrap();
    let s = start(&setup(dir, "", "workflows = [\"catalog\"]"));
    let r = s.run(ACME, json!({"workflow": "send-mail"}));
    let id = r.json()["runId"]
        .as_str()
        .unwrap_or_else(|| panic!("{}", r.body))
        .to_string();
    // Under load the POST may answer 202 `running` before the gate opens.
    let rec = s.settled(ACME, &id);
    assert_eq!(rec["status"], "needs_approval", "{rec}");
    let link = s.link_for(ACME, &id);
    (s, id, link)
}

/// The run pages are the tenant's approvers' (or its token's), never the
/// link alone's nor another tenant's: a view link shows nothing without
/// acme's token or a session of acme's approver — beta's token, bob's
/// (beta's approver) session, the link alone and acme's token typed into
/// the sign-in form all get the sign-in form and no run data. The approval
/// page, the run page, the run list and `GET /v1/runs` name the catalog
/// workflow by its name and never print a path on the server.
#[test]
fn run_pages_are_for_the_tenants_approvers_only() {
    let dir = tempfile::tempdir().unwrap();
    let (s, id, link) = send_mail_paused(dir.path());
    let server_paths = [
        dir.path().to_string_lossy().into_owned(),
        dir.path()
            .canonicalize()
            .unwrap()
            .to_string_lossy()
            .into_owned(),
    ];
    let no_server_path = |what: &str, body: &str| {
        for p in &server_paths {
            assert!(!body.contains(p.as_str()), "{what} names {p}: {body}");
        }
    };
    let alice = s.sign_in(&link, ALICE).unwrap();
    let alice_c = format!("lobster_approver={alice}");
    let page = s.raw("GET", &link, &[("Cookie", alice_c.as_str())], b"");
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(
        page.body.contains(
            "Workflow <b id=\"workflow\">send-mail</b>, waiting at step <b id=\"step\">check</b>."
        ),
        "{}",
        page.body
    );
    no_server_path("the approval page", &page.body);
    let run_path = page
        .body
        .split("id=\"run-page\" href=\"")
        .nth(1)
        .and_then(|r| r.split('"').next())
        .unwrap_or_else(|| panic!("no run page link: {}", page.body))
        .replace("&amp;", "&")
        .strip_prefix(&s.base)
        .unwrap()
        .to_string();
    // The link alone: the sign-in form, nothing of the run.
    let alone = s.raw("GET", &run_path, &[], b"");
    assert_eq!(alone.status, 401, "{}", alone.body);
    assert!(
        alone
            .body
            .contains(&format!("action=\"{run_path}/sign-in\"")),
        "{}",
        alone.body
    );
    assert!(!alone.body.contains("timeline") && !alone.body.contains(&id));
    // Another tenant's token, another tenant's approver: nobody here.
    let beta = format!("Bearer {BETA}");
    let r = s.raw("GET", &run_path, &[("Authorization", beta.as_str())], b"");
    assert_eq!(r.status, 401, "{}", r.body);
    assert!(!r.body.contains("timeline"));
    let beta_run = s
        .run(BETA, json!({"pipeline": "approve --prompt 'p'"}))
        .json();
    let beta_link = s.link_for(BETA, beta_run["runId"].as_str().unwrap());
    let bob = s.sign_in(&beta_link, BOB).unwrap();
    let bob_c = format!("lobster_approver={bob}");
    let r = s.raw("GET", &run_path, &[("Cookie", bob_c.as_str())], b"");
    assert_eq!(r.status, 401, "{}", r.body);
    assert!(!r.body.contains("timeline"));
    // bob cannot sign in on acme's run page; the agent's token is refused there.
    let signin = format!("{run_path}/sign-in");
    let r = s.form(
        &signin,
        &format!("name={}&secret={}", BOB.0, BOB.1.replace(' ', "+")),
    );
    assert_eq!(r.status, 401, "{}", r.body);
    assert!(r.header("set-cookie").is_none());
    let r = s.form(&signin, &format!("name=alice&secret={ACME}"));
    assert_eq!(r.status, 403, "{}", r.body);
    // acme's approver, signed in on the run page itself, and acme's token read it.
    let r = s.form(&signin, &format!("name={}&secret={}", ALICE.0, ALICE.1));
    assert_eq!(r.status, 303, "{}", r.body);
    assert_eq!(r.header("location"), Some(run_path.as_str()));
    let set: Vec<&str> = r
        .headers
        .iter()
        .filter(|(k, _)| k.eq_ignore_ascii_case("set-cookie"))
        .map(|(_, v)| v.as_str())
        .collect();
    assert!(
        set.iter()
            .any(|c| c.contains("Path=/r/") && c.contains("HttpOnly")),
        "{set:?}"
    );
    let acme = format!("Bearer {ACME}");
    for auth in [
        ("Cookie", alice_c.as_str()),
        ("Authorization", acme.as_str()),
    ] {
        let r = s.raw("GET", &run_path, &[auth], b"");
        assert_eq!(r.status, 200, "{}", r.body);
        assert!(
            r.body.contains(&format!("Run <code>{id}</code>")),
            "{}",
            r.body
        );
        assert!(
            r.body.contains("<b id=\"workflow\">send-mail</b>"),
            "{}",
            r.body
        );
        assert!(r.body.contains("not decided yet"), "{}", r.body);
        no_server_path("the run page", &r.body);
    }
    // Decided by alice: the run page names her.
    assert_eq!(s.form_as(&link, "decision=approve", &alice).status, 200);
    let r = s.raw("GET", &run_path, &[("Cookie", alice_c.as_str())], b"");
    assert!(
        r.body.contains("<b class=\"approver\">alice</b>"),
        "{}",
        r.body
    );
    assert!(r.body.contains("<b id=\"status\">ok</b>"), "{}", r.body);
    // The list: acme's page shows acme's runs to acme, not to beta; beta's
    // own list does not show acme's run.
    let list = s.call("GET", "/v1/runs", ACME, None);
    no_server_path("GET /v1/runs", &list.body);
    let list = list.json();
    assert_eq!(list["runs"][0]["name"], "send-mail", "{list}");
    let list_path = list["pageUrl"]
        .as_str()
        .unwrap()
        .strip_prefix(&s.base)
        .unwrap()
        .to_string();
    let page = s.raw("GET", &list_path, &[("Authorization", acme.as_str())], b"");
    assert_eq!(page.status, 200);
    assert!(page.body.contains(&id), "{}", page.body);
    no_server_path("the run list", &page.body);
    let r = s.raw("GET", &list_path, &[("Authorization", beta.as_str())], b"");
    assert_eq!(r.status, 401);
    assert!(!r.body.contains(&id));
    let beta_list = s.call("GET", "/v1/runs", BETA, None).json();
    let beta_path = beta_list["pageUrl"]
        .as_str()
        .unwrap()
        .strip_prefix(&s.base)
        .unwrap()
        .to_string();
    let r = s.raw("GET", &beta_path, &[("Authorization", beta.as_str())], b"");
    assert_eq!(r.status, 200);
    assert!(!r.body.contains(&id));
    // A tenant without approvers: its token reads, the link alone gets 403.
    let selfy = s.call("GET", "/v1/runs", SELF, None).json();
    let selfy_path = selfy["pageUrl"]
        .as_str()
        .unwrap()
        .strip_prefix(&s.base)
        .unwrap()
        .to_string();
    assert_eq!(s.raw("GET", &selfy_path, &[], b"").status, 403);
    let auth = format!("Bearer {SELF}");
    assert_eq!(
        s.raw("GET", &selfy_path, &[("Authorization", auth.as_str())], b"")
            .status,
        200
    );
    // A view link edited to another tenant's name does not verify.
    let mut bad = run_path.clone();
    bad.pop();
    bad.push(if run_path.ends_with('0') { '1' } else { '0' });
    assert_eq!(
        s.raw("GET", &bad, &[("Cookie", alice_c.as_str())], b"")
            .status,
        404
    );
}

/// What an approver reads, in a real browser: signed in on the approval
/// page, it names the catalog workflow and the gate's step, shows object
/// items as a table (the raw JSON behind a closed disclosure), lists the
/// steps after the gate with their capabilities and links the run page,
/// whose timeline and gates the same session reads. Screenshots of both
/// pages are kept under `target/test-artefacts/serve-run-page/`.
#[test]
fn an_approver_reads_the_approval_and_run_pages_in_a_real_browser() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let skip = |why: &str| {
        super::skip_browser_test(
            "an_approver_reads_the_approval_and_run_pages_in_a_real_browser",
            why,
        )
    };
    let Some(node_path) = super::browser_tools(skip) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (s, id, link) = send_mail_paused(dir.path());
    let url = format!("{}{link}", s.base);
    let shots = root.join("target/test-artefacts/serve-run-page");
    let out = Command::new("node")
        .arg(root.join("tests/serve/run-page-in-browser.mjs"))
        .arg(&url)
        .arg(&shots)
        .env("NODE_PATH", &node_path)
        .env("LOBSTER_APPROVER_NAME", ALICE.0)
        .env("LOBSTER_APPROVER_SECRET", ALICE.1)
        .output()
        .expect("node runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if out.status.code() == Some(3) {
        return skip(&format!("chromium not found: {stderr}"));
    }
    assert!(
        out.status.success(),
        "browser harness failed: {stdout}\n{stderr}"
    );
    let seen: Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(seen["signedIn"], true, "{seen}");
    assert_eq!(seen["workflow"], "send-mail", "{seen}");
    assert_eq!(seen["gateStep"], "check", "{seen}");
    let mut columns: Vec<&str> = seen["itemColumns"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    columns.sort();
    assert_eq!(columns, ["subject", "to"], "{seen}");
    assert_eq!(seen["itemRows"], 2, "{seen}");
    assert_eq!(seen["rawHidden"], true, "{seen}");
    assert_eq!(seen["stepsAfter"], json!(["step send"]), "{seen}");
    assert_eq!(seen["runHeading"], format!("Run {id}"), "{seen}");
    assert!(
        seen["chain"]
            .as_str()
            .unwrap()
            .contains("the chain verifies"),
        "{seen}"
    );
    let timeline: Vec<&str> = seen["timeline"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(timeline.first(), Some(&"run_started"), "{seen}");
    assert!(
        timeline.contains(&"step") && timeline.contains(&"gate_opened"),
        "{seen}"
    );
    assert!(
        seen["gates"][0]
            .as_str()
            .unwrap()
            .contains("not decided yet"),
        "{seen}"
    );
    for shot in ["approval.png", "run.png"] {
        assert!(std::fs::metadata(shots.join(shot)).unwrap().len() > 1000);
    }
    // Reading decided nothing.
    assert_eq!(s.get_run(ACME, &id).json()["status"], "needs_approval");
}
