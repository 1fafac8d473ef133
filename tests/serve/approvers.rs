//! Humans decide through the approval link, agents cannot: approver
//! sessions and their lifetime, expired links, and the approval page in a
//! real browser.

use super::{browser_tools, setup, skip_browser_test, start, ACME, ALICE, BETA, BOB, GATED, SELF};
use serde_json::{json, Value};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

#[test]
fn humans_decide_through_the_link_and_agents_cannot_self_approve() {
    let dir = tempfile::tempdir().unwrap();
    let s = start(&setup(dir.path(), "", ""));
    let id = s.run(ACME, json!({"pipeline": GATED})).json()["runId"]
        .as_str()
        .unwrap()
        .to_string();
    // The tenant's own token cannot approve (self_approve = false); the
    // refusal hands the agent a link to forward …
    let r = s.call(
        "POST",
        &format!("/v1/runs/{id}/resume"),
        ACME,
        Some(json!({"approve": true})),
    );
    assert_eq!(r.status, 403, "{}", r.body);
    let msg = r.json()["error"]["message"].as_str().unwrap().to_string();
    assert!(msg.contains(&format!("{}/a/", s.base)), "{msg}");
    let token = s.get_run(ACME, &id).json()["envelope"]["requiresApproval"]["resumeToken"]
        .as_str()
        .unwrap()
        .to_string();
    let r = s.call(
        "POST",
        "/v1/resume",
        ACME,
        Some(json!({"token": token, "approve": true})),
    );
    assert_eq!(r.status, 403, "{}", r.body);
    // … and cannot name an approver either.
    let r = s.call(
        "POST",
        &format!("/v1/runs/{id}/resume"),
        ACME,
        Some(json!({"approve": true, "approver": "alice"})),
    );
    assert_eq!(r.status, 400, "{}", r.body);
    assert!(
        r.body.contains("approver is not accepted here"),
        "{}",
        r.body
    );
    assert_eq!(s.get_run(ACME, &id).json()["status"], "needs_approval");
    // The link alone shows a sign-in form, and posting a decision with it
    // alone decides nothing (the link stays usable).
    let a = s.approvals(ACME);
    assert_eq!(a[0]["prompt"], "Send <both>?");
    assert_eq!(a[0]["items"], json!([1, 2]));
    let link = s.link_for(ACME, &id);
    let page = s.raw("GET", &link, &[], b"");
    assert_eq!(page.status, 200);
    assert!(
        page.body.contains("<h1>Sign in to decide</h1>"),
        "{}",
        page.body
    );
    assert!(page
        .body
        .contains(&format!("<form method=\"post\" action=\"{link}/sign-in\">")));
    assert!(!page.body.contains("value=\"approve\""), "{}", page.body);
    let r = s.form(&link, "decision=approve");
    assert_eq!(r.status, 401, "{}", r.body);
    assert!(r.body.contains("Sign in first"), "{}", r.body);
    // A bearer token on the page counts for nothing either.
    let auth = format!("Bearer {ACME}");
    let r = s.raw(
        "POST",
        &link,
        &[
            ("Content-Type", "application/x-www-form-urlencoded"),
            ("Authorization", auth.as_str()),
        ],
        b"decision=approve",
    );
    assert_eq!(r.status, 401, "{}", r.body);
    assert_eq!(s.get_run(ACME, &id).json()["status"], "needs_approval");
    // Signing in with the tenant's token, a wrong secret, another tenant's
    // approver: refused.
    let r = s.sign_in(&link, ("alice", ACME)).unwrap_err();
    assert_eq!(r.status, 403, "{}", r.body);
    assert!(r.body.contains("agent token"), "{}", r.body);
    let r = s.sign_in(&link, ("alice", "guess")).unwrap_err();
    assert_eq!(r.status, 401, "{}", r.body);
    assert_eq!(s.sign_in(&link, BOB).unwrap_err().status, 401);
    // The approver signs in: a short-lived, HttpOnly, SameSite=Strict cookie.
    let r = s.form(
        &format!("{link}/sign-in"),
        &format!("name={}&secret={}", ALICE.0, ALICE.1),
    );
    assert_eq!(r.status, 303, "{}", r.body);
    assert_eq!(r.header("location"), Some(link.as_str()));
    let set = r.header("set-cookie").unwrap();
    for attr in ["HttpOnly", "SameSite=Strict", "Path=/a/", "Max-Age=900"] {
        assert!(set.contains(attr), "{set}");
    }
    let cookie = s.sign_in(&link, ALICE).unwrap();
    let c = format!("lobster_approver={cookie}");
    let page = s.raw("GET", &link, &[("Cookie", c.as_str())], b"");
    assert!(page.body.contains("Send &lt;both&gt;?"), "{}", page.body);
    assert!(page
        .body
        .contains("Signed in as <b id=\"approver\">alice</b>"));
    assert!(!page.body.contains("<script"));
    assert!(page
        .body
        .contains(&format!("<form method=\"post\" action=\"{link}\">")));
    assert!(page
        .body
        .contains("<button type=\"submit\" name=\"decision\" value=\"approve\">Approve</button>"));
    // A forged or altered cookie is nobody.
    let r = s.form_as(&link, "decision=approve", &format!("{cookie}0"));
    assert_eq!(r.status, 401, "{}", r.body);
    let r = s.form_as(&link, "decision=approve", &cookie);
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(r.body.contains("<h1>Approved</h1>"), "{}", r.body);
    let rec = s.get_run(ACME, &id).json();
    assert_eq!(rec["status"], "ok");
    assert_eq!(rec["envelope"]["output"], json!([1, 2]));
    assert_eq!(rec["decidedBy"], "approver alice", "{rec}");
    // The run's journal records the decision under the approver's name.
    let journal = s.call("GET", &format!("/v1/runs/{id}/journal"), ACME, None);
    assert_eq!(journal.status, 200, "{}", journal.body);
    let decisions: Vec<Value> = journal
        .body
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["event"].clone())
        .filter(|e| e["kind"] == "decision")
        .collect();
    assert_eq!(decisions.len(), 1, "{}", journal.body);
    assert_eq!(decisions[0]["decision"], "approve", "{}", journal.body);
    assert_eq!(decisions[0]["approver"], "alice", "{}", journal.body);
    assert_eq!(
        decisions[0]["decided_by"], "approver alice",
        "{}",
        journal.body
    );
    assert_eq!(decisions[0]["door"], "serve-page", "{}", journal.body);
    // Reused: 410.
    let r = s.form_as(&link, "decision=approve", &cookie);
    assert_eq!(r.status, 410, "{}", r.body);
    assert_eq!(s.raw("GET", &link, &[], b"").status, 410);
    // alice's session is acme's: on beta's link it is nobody; bob (a
    // password, argon2) decides beta's gate. Deny through the form.
    let id2 = s
        .run(BETA, json!({"pipeline": "approve --prompt 'p'"}))
        .json();
    let id2 = id2["runId"]
        .as_str()
        .unwrap_or_else(|| panic!("{id2}"))
        .to_string();
    let link2 = s.link_for(BETA, &id2);
    assert_eq!(s.form_as(&link2, "decision=deny", &cookie).status, 401);
    let r = s.decide_as(&link2, BOB, "deny");
    assert!(r.body.contains("<h1>Denied</h1>"), "{}", r.body);
    let rec = s.get_run(BETA, &id2).json();
    assert_ne!(rec["status"], "needs_approval");
    assert_ne!(rec["status"], "ok");
    assert_eq!(rec["decidedBy"], "approver bob", "{rec}");
    // A tampered link: 404.
    let mut bad = link2.clone();
    bad.pop();
    bad.push(if link2.ends_with('0') { '1' } else { '0' });
    assert_eq!(s.raw("GET", &bad, &[], b"").status, 404);
    assert_eq!(s.form(&bad, "decision=approve").status, 404);
    // The agent may still deny its own run.
    let id3 = s.run(ACME, json!({"pipeline": GATED})).json()["runId"]
        .as_str()
        .unwrap()
        .to_string();
    let r = s.call(
        "POST",
        &format!("/v1/runs/{id3}/resume"),
        ACME,
        Some(json!({"approve": false})),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        s.get_run(ACME, &id3).json()["decidedBy"],
        "tenant acme's agent"
    );
}

/// An approver's session ends with its lifetime (the link's,
/// `approval_link_ttl`): an expired cookie posted on a fresh link decides
/// nothing, and the approver signs in again.
#[test]
fn an_expired_approver_session_decides_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let s = start(&setup(dir.path(), "approval_link_ttl = \"3s\"", ""));
    let id = s.run(ACME, json!({"pipeline": GATED})).json()["runId"]
        .as_str()
        .unwrap()
        .to_string();
    let cookie = s
        .sign_in(&s.link_for(ACME, &id), ALICE)
        .unwrap_or_else(|r| panic!("{}", r.body));
    std::thread::sleep(Duration::from_millis(4500));
    let link = s.link_for(ACME, &id);
    let r = s.form_as(&link, "decision=approve", &cookie);
    assert_eq!(r.status, 401, "{}", r.body);
    assert!(r.body.contains("Sign in first"), "{}", r.body);
    assert_eq!(s.get_run(ACME, &id).json()["status"], "needs_approval");
    let r = s.decide_as(&link, ALICE, "approve");
    assert!(r.body.contains("<h1>Approved</h1>"), "{}", r.body);
    assert_eq!(s.get_run(ACME, &id).json()["decidedBy"], "approver alice");
}

/// The approval page in a real browser: headless Debian Chromium (driven by
/// `tests/serve/approve-in-browser.mjs`) loads the link, clicks Approve, and
/// the run completes. Where Chromium or Node is missing the test says so
/// loudly and passes, except under `CI=true`, where `.ci/run` installs them.
#[test]
fn a_human_approves_in_a_real_browser() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let skip = |why: &str| skip_browser_test("a_human_approves_in_a_real_browser", why);
    let Some(node_path) = browser_tools(skip) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let s = start(&setup(dir.path(), "", ""));
    let id = s.run(ACME, json!({"pipeline": GATED})).json()["runId"]
        .as_str()
        .unwrap()
        .to_string();
    let url = format!("{}{}", s.base, s.link_for(ACME, &id));
    let browser = |approver: Option<(&str, &str)>| {
        let mut c = Command::new("node");
        c.arg(root.join("tests/serve/approve-in-browser.mjs"))
            .args([url.as_str(), "approve"])
            .env("NODE_PATH", &node_path)
            .env_remove("LOBSTER_APPROVER_NAME")
            .env_remove("LOBSTER_APPROVER_SECRET");
        if let Some((name, secret)) = approver {
            c.env("LOBSTER_APPROVER_NAME", name)
                .env("LOBSTER_APPROVER_SECRET", secret);
        }
        c.output().expect("node runs")
    };
    // The link alone: the page asks for a sign-in, nothing is decided.
    let out = browser(None);
    if out.status.code() == Some(3) {
        return skip(&format!(
            "chromium not found: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("asks an approver to sign in"),
        "{out:?}"
    );
    // The tenant's own token typed into the form: refused.
    let out = browser(Some(("alice", ACME)));
    assert!(!out.status.success(), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("signing in answered 403"),
        "{out:?}"
    );
    assert_eq!(s.get_run(ACME, &id).json()["status"], "needs_approval");
    // The approver signs in, then clicks Approve.
    let out = browser(Some(ALICE));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if out.status.code() == Some(3) {
        return skip(&format!("chromium not found: {stderr}"));
    }
    assert!(
        out.status.success(),
        "browser harness failed: {stdout}\n{stderr}"
    );
    assert_eq!(stdout.trim(), "Approved", "{stderr}");
    let rec = s.get_run(ACME, &id).json();
    assert_eq!(rec["status"], "ok", "{rec}");
    assert_eq!(rec["envelope"]["output"], json!([1, 2]));
    assert_eq!(rec["decidedBy"], "approver alice", "{rec}");
    // The link is spent: the browser cannot approve twice.
    let path = url.strip_prefix(&s.base).unwrap();
    assert_eq!(s.raw("GET", path, &[], b"").status, 410);
}

/// Where the link alone decides (self_approve, no approvers), the page
/// says how the run ended after the gate, a failure with its message.
#[test]
fn the_decided_page_names_a_failure_after_the_gate() {
    let dir = tempfile::tempdir().unwrap();
    let s = start(&setup(dir.path(), "", ""));
    let pipeline = "exec --json --shell 'echo [1]' | approve --prompt go? | exec --shell 'echo no >&2; exit 3'";
    let id = s.run(SELF, json!({"pipeline": pipeline})).json()["runId"]
        .as_str()
        .unwrap()
        .to_string();
    let link = s.link_for(SELF, &id);
    let r = s.form(&link, "decision=approve");
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(r.body.contains("<h1>Approved</h1>"), "{}", r.body);
    assert!(
        r.body
            .contains("The run is now <b id=\"status\">failed: exec failed (3)"),
        "{}",
        r.body
    );
    assert_eq!(s.get_run(SELF, &id).json()["status"], "failed");
}

#[test]
fn expired_links_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let s = start(&setup(dir.path(), "approval_link_ttl = \"1s\"", ""));
    let id = s.run(ACME, json!({"pipeline": GATED})).json()["runId"]
        .as_str()
        .unwrap()
        .to_string();
    let link = s.link_for(ACME, &id);
    std::thread::sleep(Duration::from_millis(2100));
    let r = s.form(&link, "decision=approve");
    assert_eq!(r.status, 410, "{}", r.body);
    assert!(r.body.contains("expired"));
    assert_eq!(s.get_run(ACME, &id).json()["status"], "needs_approval");
}
