//! `lobster serve` end to end: the real binary on 127.0.0.1:0, driven over
//! real TCP connections with a small HTTP/1.1 client (below).

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

mod approvals;
mod canary;
mod example;
mod gates;
mod nodes;
#[path = "../own_pg.rs"]
mod own_pg;
#[path = "../psql.rs"]
mod psql;
mod roots;
mod run_pages;
#[path = "../shapes.rs"]
mod shapes;
mod upgrade;
mod wire;

const BIN: &str = env!("CARGO_BIN_EXE_lobster");
const ACME: &str = "acme-token";
const BETA: &str = "beta-token";
const SELF: &str = "self-token";
/// acme's approver, who signs in with a token of their own.
const ALICE: (&str, &str) = ("alice", "alice-approver-token");
/// beta's approver, who signs in with a password (argon2 hash in the config).
const BOB: (&str, &str) = ("bob", "correct horse battery");

/// `lobster serve hash-password` of bob's password (made once per process).
fn bob_hash() -> &'static str {
    static HASH: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    HASH.get_or_init(|| {
        let mut child = Command::new(BIN)
            .args(["serve", "hash-password"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(format!("{}\n", BOB.1).as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success());
        let phc = String::from_utf8(out.stdout).unwrap().trim().to_string();
        assert!(phc.starts_with("$argon2id$"), "{phc}");
        phc
    })
}

/// A running server over a state directory that outlives it (for restarts).
struct Server {
    child: Child,
    base: String,
    addr: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn sha(token: &str) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(token.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A config dir with three tenants: `acme` (trusted policy, self_approve
/// false, approver alice with a token), `beta` (no policy: untrusted,
/// approver bob with a password), `selfy` (trusted, self_approve true, no
/// approvers). `extra` goes at the top; `acme_extra` into acme's table.
fn setup(dir: &Path, extra: &str, acme_extra: &str) -> PathBuf {
    std::fs::write(dir.join("trusted.toml"), "trust = \"trusted\"\n").unwrap();
    let config = format!(
        "listen = \"127.0.0.1:9\"\nstate = \"state\"\n{extra}\n\
[[tenant]]\nname = \"acme\"\ntoken_sha256 = \"{}\"\npolicy = \"trusted.toml\"\n{acme_extra}\n\
[[tenant.approver]]\nname = \"{}\"\ntoken_sha256 = \"{}\"\n\
[[tenant]]\nname = \"beta\"\ntoken_env = \"BETA_TOKEN\"\n\
[[tenant.approver]]\nname = \"{}\"\npassword_hash = \"{}\"\n\
[[tenant]]\nname = \"selfy\"\ntoken_sha256 = \"{}\"\npolicy = \"trusted.toml\"\nself_approve = true\n",
        sha(ACME),
        ALICE.0,
        sha(ALICE.1),
        BOB.0,
        bob_hash(),
        sha(SELF)
    );
    let path = dir.join("serve.toml");
    std::fs::write(&path, config).unwrap();
    path
}

fn start(config: &Path) -> Server {
    Server::spawn(
        Command::new(BIN)
            .args(["serve", "--config"])
            .arg(config)
            .args(["--listen", "127.0.0.1:0"])
            .env("BETA_TOKEN", BETA)
            .env_remove("LOBSTER_POLICY"),
    )
}

impl Server {
    /// Spawn `cmd` (a `lobster serve …` command) and wait for its ready line.
    fn spawn(cmd: &mut Command) -> Server {
        Server::spawn_with(
            cmd.stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::inherit()),
        )
    }

    /// [`Server::spawn`] with `cmd`'s own stdin and stderr (stdout piped).
    fn spawn_with(cmd: &mut Command) -> Server {
        let mut child = cmd.stdout(Stdio::piped()).spawn().unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let base = line
            .trim()
            .strip_prefix("lobster serve listening on ")
            .unwrap_or_else(|| panic!("ready line: {line:?}"))
            .to_string();
        let addr = base.strip_prefix("http://").unwrap().to_string();
        Server { child, base, addr }
    }
}

#[derive(Debug)]
struct Resp {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Resp {
    fn json(&self) -> Value {
        serde_json::from_str(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {} {}", self.status, self.body))
    }
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

impl Server {
    fn raw(&self, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Resp {
        let mut s = TcpStream::connect(&self.addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
        let mut head = format!(
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\nContent-Length: {}\r\n",
            self.addr,
            body.len()
        );
        for (k, v) in headers {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        head.push_str("\r\n");
        s.write_all(head.as_bytes()).unwrap();
        let _ = s.write_all(body);
        let mut buf = Vec::new();
        let _ = s.read_to_end(&mut buf);
        let text = String::from_utf8_lossy(&buf).into_owned();
        let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
        let mut lines = head.lines();
        let status: u16 = lines
            .next()
            .and_then(|l| l.split(' ').nth(1))
            .and_then(|c| c.parse().ok())
            .unwrap_or_else(|| panic!("no status line: {text:?}"));
        let headers: Vec<(String, String)> = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
            .collect();
        let chunked = headers
            .iter()
            .any(|(k, v)| k.eq_ignore_ascii_case("transfer-encoding") && v.contains("chunked"));
        let body = if chunked {
            dechunk(body)
        } else {
            body.to_string()
        };
        Resp {
            status,
            headers,
            body,
        }
    }

    fn call(&self, method: &str, path: &str, token: &str, body: Option<Value>) -> Resp {
        let auth = format!("Bearer {token}");
        let text = body.map(|b| b.to_string()).unwrap_or_default();
        self.raw(
            method,
            path,
            &[
                ("Authorization", auth.as_str()),
                ("Content-Type", "application/json"),
            ],
            text.as_bytes(),
        )
    }

    fn run(&self, token: &str, body: Value) -> Resp {
        self.call("POST", "/v1/runs", token, Some(body))
    }

    fn get_run(&self, token: &str, id: &str) -> Resp {
        self.call("GET", &format!("/v1/runs/{id}"), token, None)
    }

    /// Poll until the run is no longer `running`.
    fn settled(&self, token: &str, id: &str) -> Value {
        let until = Instant::now() + Duration::from_secs(30);
        loop {
            let r = self.get_run(token, id).json();
            if r["status"] != "running" || Instant::now() > until {
                return r;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn approvals(&self, token: &str) -> Vec<Value> {
        let r = self.call("GET", "/v1/approvals", token, None);
        assert_eq!(r.status, 200, "{}", r.body);
        r.json().as_array().unwrap().clone()
    }

    /// The path of a run's approveUrl, once the run has reached its gate (a
    /// loaded machine may take longer than a request's wait to get there).
    fn link_for(&self, token: &str, run_id: &str) -> String {
        let until = Instant::now() + Duration::from_secs(30);
        let a = loop {
            if let Some(a) = self
                .approvals(token)
                .into_iter()
                .find(|a| a["runId"] == run_id)
            {
                break a;
            }
            assert!(Instant::now() < until, "no approval for {run_id}");
            std::thread::sleep(Duration::from_millis(50));
        };
        let url = a["approveUrl"].as_str().unwrap();
        url.strip_prefix(&self.base).unwrap().to_string()
    }

    fn form(&self, path: &str, body: &str) -> Resp {
        self.raw(
            "POST",
            path,
            &[("Content-Type", "application/x-www-form-urlencoded")],
            body.as_bytes(),
        )
    }

    /// `form` with an approver's session cookie.
    fn form_as(&self, path: &str, body: &str, cookie: &str) -> Resp {
        let c = format!("lobster_approver={cookie}");
        self.raw(
            "POST",
            path,
            &[
                ("Content-Type", "application/x-www-form-urlencoded"),
                ("Cookie", c.as_str()),
            ],
            body.as_bytes(),
        )
    }

    /// Sign in on the page of `link` as `who` (name, secret): the session
    /// cookie's value, or the refusal.
    fn sign_in(&self, link: &str, who: (&str, &str)) -> Result<String, Resp> {
        let body = format!("name={}&secret={}", who.0, who.1.replace(' ', "+"));
        let r = self.form(&format!("{link}/sign-in"), &body);
        if r.status != 303 {
            return Err(r);
        }
        let set = r.header("set-cookie").unwrap_or_default().to_string();
        let value = set
            .split(';')
            .next()
            .and_then(|kv| kv.strip_prefix("lobster_approver="))
            .unwrap_or_else(|| panic!("no session cookie: {set}"))
            .to_string();
        Ok(value)
    }

    /// Approve (or deny) through the page of `link` as `who`: sign in, decide.
    fn decide_as(&self, link: &str, who: (&str, &str), decision: &str) -> Resp {
        let cookie = self
            .sign_in(link, who)
            .unwrap_or_else(|r| panic!("sign-in refused: {} {}", r.status, r.body));
        self.form_as(link, &format!("decision={decision}"), &cookie)
    }

    fn sigterm(&mut self) -> std::process::ExitStatus {
        unsafe { libc_kill(self.child.id() as i32, 15) };
        let until = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(
                Instant::now() < until,
                "the server did not stop after SIGTERM"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

extern "C" {
    #[link_name = "kill"]
    fn libc_kill(pid: i32, sig: i32) -> i32;
}

fn dechunk(body: &str) -> String {
    let mut out = String::new();
    let mut rest = body;
    while let Some((size, after)) = rest.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 {
            break;
        }
        out.push_str(&after[..n.min(after.len())]);
        rest = after.get(n + 2..).unwrap_or("");
    }
    out
}

const GATED: &str = "exec --json --shell 'echo [1,2]' | approve --prompt 'Send <both>?'";

fn metric(s: &Server, line_start: &str) -> u64 {
    let text = s.raw("GET", "/metrics", &[], b"").body;
    text.lines()
        .find(|l| l.starts_with(line_start))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

#[test]
fn tenants_are_isolated_and_tokens_checked() {
    let dir = tempfile::tempdir().unwrap();
    let s = start(&setup(dir.path(), "", ""));
    assert_eq!(s.raw("GET", "/healthz", &[], b"").body, "ok");
    let r = s.run(ACME, json!({"pipeline": GATED}));
    assert_eq!(r.status, 200, "{}", r.body);
    let v = r.json();
    assert_eq!(v["status"], "needs_approval");
    assert_eq!(v["protocolVersion"], 1);
    let id = v["runId"].as_str().unwrap().to_string();
    assert_eq!(id.len(), 32);
    // Another tenant's run does not exist for beta.
    let r = s.get_run(BETA, &id);
    assert_eq!(r.status, 404, "{}", r.body);
    assert!(s.approvals(BETA).is_empty());
    assert_eq!(s.approvals(ACME).len(), 1);
    let r = s.call(
        "POST",
        &format!("/v1/runs/{id}/resume"),
        BETA,
        Some(json!({"approve": false})),
    );
    assert_eq!(r.status, 404);
    // Bad, missing tokens.
    let r = s.get_run("nope", &id);
    assert_eq!(r.status, 401);
    assert_eq!(r.json()["error"]["type"], "unauthorized");
    let r = s.raw("GET", &format!("/v1/runs/{id}"), &[], b"");
    assert_eq!(r.status, 401);
    // Separate state: each tenant has its own store directory.
    let root = dir.path().join("state/tenants");
    assert!(std::fs::read_dir(root.join("acme")).unwrap().any(|e| e
        .unwrap()
        .file_name()
        .to_string_lossy()
        .starts_with("pipeline_resume_")));
    assert!(
        !root.join("beta").exists() || std::fs::read_dir(root.join("beta")).unwrap().count() == 0
    );
    // beta has no policy file: untrusted, so host processes are refused,
    // and an inline workflow is judged the same way.
    let r = s
        .run(BETA, json!({"pipeline": "exec --shell 'echo hi'"}))
        .json();
    assert_eq!(r["ok"], false);
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("untrusted policy forbids"),
        "{r}"
    );
    let wf = "name: w\nsteps:\n  - id: a\n    run: echo hi\n";
    let r = s.run(BETA, json!({"workflowText": wf})).json();
    let msg = r["error"]["message"].as_str().unwrap();
    assert!(
        msg.contains("workflowText:3:5") && !msg.contains("tenants/"),
        "{msg}"
    );
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("untrusted policy forbids"),
        "{r}"
    );
    assert_eq!(
        s.settled(BETA, r["runId"].as_str().unwrap())["status"],
        "failed"
    );
    // acme's trusted policy runs the same inline workflow.
    let r = s.run(ACME, json!({"workflowText": wf})).json();
    assert_eq!(r["status"], "ok", "{r}");
    // Bad requests name the problem.
    let r = s.run(ACME, json!({"pipeline": "head", "workflow": "x"}));
    assert_eq!(r.status, 400);
    let r = s.run(ACME, json!({"pipeline": "wf.lobster"}));
    assert_eq!(r.status, 400);
    assert!(metric(&s, "lobster_policy_refusals_total{tenant=\"beta\"}") >= 2);
}

#[test]
fn run_poll_resume_cancel_and_exactly_once() {
    let dir = tempfile::tempdir().unwrap();
    let s = start(&setup(dir.path(), "", ""));
    let before = metric(&s, "lobster_runs_total{tenant=\"selfy\",status=\"ok\"}");
    // 202, then poll.
    let r = s.call(
        "POST",
        "/v1/runs?wait=0",
        SELF,
        Some(json!({"pipeline": format!("exec --shell 'sleep 0.5' | {GATED}")})),
    );
    assert_eq!(r.status, 202, "{}", r.body);
    let v = r.json();
    assert_eq!(v["status"], "running");
    let id = v["runId"].as_str().unwrap().to_string();
    let rec = s.settled(SELF, &id);
    assert_eq!(rec["status"], "needs_approval", "{rec}");
    assert!(rec["createdAt"].is_string() && rec["updatedAt"].is_string());
    // self_approve = true: the tenant's token approves.
    let r = s.call(
        "POST",
        &format!("/v1/runs/{id}/resume"),
        SELF,
        Some(json!({"approve": true})),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["status"], "ok");
    assert_eq!(r.json()["output"], json!([1, 2]));
    assert_eq!(s.get_run(SELF, &id).json()["status"], "ok");
    // Decided: 409.
    let r = s.call(
        "POST",
        &format!("/v1/runs/{id}/resume"),
        SELF,
        Some(json!({"approve": true})),
    );
    assert_eq!(r.status, 409, "{}", r.body);
    // Cancel.
    let id2 = s.run(SELF, json!({"pipeline": GATED})).json()["runId"]
        .as_str()
        .unwrap()
        .to_string();
    let r = s.call(
        "POST",
        &format!("/v1/runs/{id2}/resume"),
        SELF,
        Some(json!({"cancel": true})),
    );
    assert_eq!(r.json()["status"], "cancelled", "{}", r.body);
    assert_eq!(s.get_run(SELF, &id2).json()["status"], "cancelled");
    // By approvalId through /v1/resume, then its token again: 409.
    let v = s.run(SELF, json!({"pipeline": GATED})).json();
    let approval = v["requiresApproval"]["approvalId"].as_str().unwrap();
    let token = v["requiresApproval"]["resumeToken"].as_str().unwrap();
    let r = s.call(
        "POST",
        "/v1/resume",
        SELF,
        Some(json!({"approvalId": approval, "approve": true})),
    );
    assert_eq!(r.json()["status"], "ok", "{}", r.body);
    let r = s.call(
        "POST",
        "/v1/resume",
        SELF,
        Some(json!({"token": token, "approve": true})),
    );
    assert_eq!(r.status, 409, "{}", r.body);
    // Two resumes at once: exactly one wins.
    let id3 = s.run(SELF, json!({"pipeline": GATED})).json()["runId"]
        .as_str()
        .unwrap()
        .to_string();
    let statuses: Vec<u16> = std::thread::scope(|sc| {
        let hs: Vec<_> = (0..4)
            .map(|_| {
                sc.spawn(|| {
                    s.call(
                        "POST",
                        &format!("/v1/runs/{id3}/resume"),
                        SELF,
                        Some(json!({"approve": true})),
                    )
                    .status
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(
        statuses.iter().filter(|s| **s == 200).count(),
        1,
        "{statuses:?}"
    );
    assert_eq!(
        statuses.iter().filter(|s| **s == 409).count(),
        3,
        "{statuses:?}"
    );
    assert_eq!(
        metric(&s, "lobster_runs_total{tenant=\"selfy\",status=\"ok\"}"),
        before + 3
    );
}

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

/// A browser test that cannot run says so loudly and passes, except under
/// `CI=true`, where `.ci/run` installs Chromium and Node: there it fails.
fn skip_browser_test(test: &str, why: &str) {
    if std::env::var("CI").as_deref() == Ok("true") {
        panic!("browser test cannot run under CI=true: {why}");
    }
    eprintln!("\n*** SKIPPED {test}: {why} ***\n");
}

/// The `NODE_PATH` of playwright-core (`tests/serve/setup-browser.sh`), or
/// `None` after `skip` says why not.
fn browser_tools(skip: impl Fn(&str)) -> Option<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let tools = Command::new("bash")
        .arg(root.join("tests/serve/setup-browser.sh"))
        .stderr(Stdio::inherit())
        .output();
    match tools {
        Ok(out) if out.status.success() => {
            Some(String::from_utf8(out.stdout).unwrap().trim().to_string())
        }
        Ok(out) => {
            skip(&format!("setup-browser.sh failed ({})", out.status));
            None
        }
        Err(e) => {
            skip(&format!("cannot run setup-browser.sh: {e}"));
            None
        }
    }
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

#[test]
fn limits_answer_429_and_413() {
    let dir = tempfile::tempdir().unwrap();
    let s = start(&setup(
        dir.path(),
        "max_body_bytes = 2048\nrequest_timeout_ms = 400",
        "max_concurrent_runs = 1\nrequests_per_minute = 8",
    ));
    // The per-request deadline caps how long a request waits for its run.
    let t = Instant::now();
    let r = s.call(
        "POST",
        "/v1/runs?wait=5000",
        SELF,
        Some(json!({"pipeline": "exec --shell 'sleep 1.5'"})),
    );
    assert_eq!(r.status, 202, "{}", r.body);
    assert!(
        t.elapsed() < Duration::from_millis(1400),
        "{:?}",
        t.elapsed()
    );
    let r = s.call(
        "POST",
        "/v1/runs?wait=0",
        ACME,
        Some(json!({"pipeline": "exec --shell 'sleep 2'"})),
    );
    assert_eq!(r.status, 202);
    let r = s.run(ACME, json!({"pipeline": "exec --shell 'echo x'"}));
    assert_eq!(r.status, 429, "{}", r.body);
    assert_eq!(r.json()["error"]["type"], "too_many_runs");
    assert!(r.header("retry-after").is_some());
    // MCP tool calls share the run slots (listing takes none).
    let r = mcp_call(
        &s,
        ACME,
        "lobster_run",
        json!({"pipeline": "exec --shell 'echo x'"}),
    );
    assert_eq!(r["isError"], true, "{r}");
    assert!(r.to_string().contains("max_concurrent_runs"), "{r}");
    // Body limit.
    let big = json!({"pipeline": "x".repeat(4000)}).to_string();
    let r = s.raw(
        "POST",
        "/v1/runs",
        &[("Authorization", &format!("Bearer {SELF}"))],
        big.as_bytes(),
    );
    assert_eq!(r.status, 413, "{}", r.body);
    // A sign-in form past it: the refusal page (serve::sign_in::SignInForm),
    // on the approval pages and the run pages alike.
    let form = format!("name=ann&secret={}", "x".repeat(4000));
    for path in ["/a/x/sign-in", "/r/x/sign-in"] {
        let kind = [("Content-Type", "application/x-www-form-urlencoded")];
        let r = s.raw("POST", path, &kind, form.as_bytes());
        assert_eq!(r.status, 413, "{path}: {}", r.body);
        assert!(r.body.contains("Request refused"), "{path}: {}", r.body);
    }
    // Requests per minute (8, two used): the budget runs out.
    let mut limited = None;
    for _ in 0..8 {
        let r = s.call("GET", "/v1/approvals", ACME, None);
        if r.status == 429 {
            limited = Some(r);
            break;
        }
    }
    let r = limited.expect("a 429 within the minute's budget");
    assert_eq!(r.json()["error"]["type"], "rate_limited");
    let secs: u64 = r.header("retry-after").unwrap().parse().unwrap();
    assert!((1..=60).contains(&secs));
    assert!(
        metric(
            &s,
            "lobster_rate_limited_total{tenant=\"acme\",reason=\"rate_limited\"}"
        ) >= 1
    );
    assert_eq!(
        metric(
            &s,
            "lobster_rate_limited_total{tenant=\"acme\",reason=\"too_many_runs\"}"
        ),
        2
    );
}

#[test]
fn sigterm_drains_then_restart_resumes() {
    let dir = tempfile::tempdir().unwrap();
    let config = setup(dir.path(), "shutdown_grace_ms = 300", "");
    let mut s = start(&config);
    let paused = s.run(ACME, json!({"pipeline": GATED})).json()["runId"]
        .as_str()
        .unwrap()
        .to_string();
    let long = s
        .call(
            "POST",
            "/v1/runs?wait=0",
            ACME,
            Some(json!({"pipeline": "exec --shell 'sleep 20'", "timeoutMs": 60000})),
        )
        .json()["runId"]
        .as_str()
        .unwrap()
        .to_string();
    let short = s
        .call(
            "POST",
            "/v1/runs?wait=0",
            ACME,
            Some(json!({"pipeline": "exec --json --shell 'sleep 0.1; echo [7]'"})),
        )
        .json()["runId"]
        .as_str()
        .unwrap()
        .to_string();
    // Answered within its wait: its one record is a line of the run log.
    let answered = s.run(ACME, json!({"pipeline": "exec --json --shell 'echo [5]'"}));
    assert_eq!(answered.status, 200);
    let answered = answered.json()["runId"].as_str().unwrap().to_string();
    std::thread::sleep(Duration::from_millis(100));
    let started = Instant::now();
    let status = s.sigterm();
    assert!(status.success(), "{status:?}");
    assert!(started.elapsed() < Duration::from_secs(10));
    drop(s);
    // After a restart: the long run was cancelled by the shutdown, the
    // short one finished, the paused one resumes through a human's link.
    let s = start(&config);
    let rec = s.get_run(ACME, &long).json();
    assert_eq!(rec["status"], "cancelled", "{rec}");
    assert!(rec["reason"].as_str().unwrap().contains("shutdown"));
    assert_eq!(s.get_run(ACME, &short).json()["status"], "ok");
    let rec = s.get_run(ACME, &answered).json();
    assert_eq!(rec["status"], "ok", "{rec}");
    assert_eq!(rec["envelope"]["output"], json!([5]));
    let acme = dir.path().join("state/tenants/acme");
    assert!(!acme.join(format!("serve_run_{answered}.json")).exists());
    assert!(std::fs::read_dir(acme.join("runs")).unwrap().count() >= 1);
    let link = s.link_for(ACME, &paused);
    let r = s.decide_as(&link, ALICE, "approve");
    assert!(r.body.contains("<h1>Approved</h1>"), "{}", r.body);
    assert_eq!(
        s.get_run(ACME, &paused).json()["envelope"]["output"],
        json!([1, 2])
    );
}

#[test]
fn a_killed_server_reports_its_runs_interrupted() {
    let dir = tempfile::tempdir().unwrap();
    let config = setup(dir.path(), "", "");
    let mut s = start(&config);
    let id = s
        .call(
            "POST",
            "/v1/runs?wait=0",
            ACME,
            Some(json!({"pipeline": "exec --shell 'sleep 20'"})),
        )
        .json()["runId"]
        .as_str()
        .unwrap()
        .to_string();
    let answered = s.run(ACME, json!({"pipeline": "exec --json --shell 'echo [6]'"}));
    assert_eq!(answered.status, 200);
    let answered = answered.json()["runId"].as_str().unwrap().to_string();
    // Kill only once both are on disk, whatever the machine's load: the
    // long run's record says running, and the run log's writer has
    // appended the answered run's line (a SIGKILL loses nothing written;
    // only a power cut could lose the batch not yet synced).
    let deadline = Instant::now() + Duration::from_secs(60);
    let logged = |root: &Path| {
        let mut dirs = vec![root.to_path_buf()];
        while let Some(d) = dirs.pop() {
            for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
                let p = e.path();
                let name = e.file_name().to_string_lossy().to_string();
                if p.is_dir() {
                    dirs.push(p);
                } else if name.starts_with("runs-") && name.ends_with(".log") {
                    let text = std::fs::read_to_string(&p).unwrap_or_default();
                    if text
                        .lines()
                        .any(|l| l.starts_with(&format!("{answered}\t")))
                    {
                        return true;
                    }
                }
            }
        }
        false
    };
    while s.get_run(ACME, &id).json()["status"] != "running" || !logged(dir.path()) {
        assert!(
            Instant::now() < deadline,
            "the running record or the answered run's log line never reached the disk"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    s.child.kill().unwrap();
    s.child.wait().unwrap();
    drop(s);
    let s = start(&config);
    assert_eq!(s.get_run(ACME, &id).json()["status"], "interrupted");
    let rec = s.get_run(ACME, &answered).json();
    assert_eq!(rec["envelope"]["output"], json!([6]), "{rec}");
    // An id of the right shape that was never handed out is a 404, even
    // one made "now" (the log reads only the segments of its window).
    let unknown = format!("{}{}", &answered[..8], "0".repeat(24));
    assert_eq!(s.get_run(ACME, &unknown).status, 404);
}

#[test]
fn mcp_over_http() {
    let dir = tempfile::tempdir().unwrap();
    let s = start(&setup(dir.path(), "", ""));
    let mcp = |token: &str, body: Value| mcp_raw(&s, token, &body);
    let r = mcp(
        "wrong",
        json!({"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}),
    );
    assert_eq!(r.status, 401);
    let r = mcp(
        ACME,
        json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["result"]["serverInfo"]["name"], "lobster");
    let r = mcp(
        ACME,
        json!({"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}),
    );
    let names: Vec<String> = r.json()["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect();
    assert!(names.contains(&"lobster_run".to_string()), "{names:?}");
    let r = mcp(
        BETA,
        json!({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"lobster_run","arguments":{"pipeline":"exec --shell 'echo hi'"}}}),
    );
    let v = r.json();
    assert_eq!(v["result"]["isError"], true, "{v}");
    assert!(v.to_string().contains("untrusted policy forbids"), "{v}");
    let r = mcp(
        ACME,
        json!({"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"lobster_run","arguments":{"pipeline":"exec --json --shell 'echo [3]'"}}}),
    );
    assert_eq!(
        r.json()["result"]["structuredContent"]["output"],
        json!([3]),
        "{}",
        r.body
    );
}

/// A JSON-RPC request to `/mcp` as `token`.
fn mcp_raw(s: &Server, token: &str, body: &Value) -> Resp {
    let auth = format!("Bearer {token}");
    s.raw(
        "POST",
        "/mcp",
        &[
            ("Authorization", auth.as_str()),
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
            ("MCP-Protocol-Version", "2025-06-18"),
        ],
        body.to_string().as_bytes(),
    )
}

/// The result of a `tools/call` of `name` with `args` through `/mcp` as `token`.
fn mcp_call(s: &Server, token: &str, name: &str, args: Value) -> Value {
    let body = json!({"jsonrpc":"2.0","id":7,"method":"tools/call",
        "params":{"name": name, "arguments": args}});
    let r = mcp_raw(s, token, &body);
    assert_eq!(r.status, 200, "{}", r.body);
    r.json()["result"].clone()
}

#[test]
fn mcp_runs_are_the_gateways_runs() {
    let dir = tempfile::tempdir().unwrap();
    let s = start(&setup(dir.path(), "", ""));
    // acme: self_approve = false, so its MCP server takes approvals from
    // the human; a paused MCP run is listed with a link for them.
    let r = mcp_call(&s, ACME, "lobster_run", json!({"pipeline": GATED}));
    let env = &r["structuredContent"];
    assert_eq!(env["status"], "needs_approval", "{r}");
    let token = env["requiresApproval"]["resumeToken"].as_str().unwrap();
    let approval = env["requiresApproval"]["approvalId"].clone();
    let listed = s.approvals(ACME);
    let entry = listed
        .iter()
        .find(|a| a["approvalId"] == approval)
        .unwrap_or_else(|| panic!("the MCP run is not listed: {listed:?}"));
    let run_id = entry["runId"].as_str().unwrap().to_string();
    assert_eq!(s.get_run(ACME, &run_id).json()["status"], "needs_approval");
    // The agent cannot approve; it is told where the human can.
    let r = mcp_call(
        &s,
        ACME,
        "lobster_resume",
        json!({"token": token, "approve": true}),
    );
    assert_eq!(r["isError"], true, "{r}");
    let text = r.to_string();
    assert!(text.contains("send the human this approval link"), "{text}");
    assert!(text.contains(&format!("{}/a/", s.base)), "{text}");
    // The human approves through the link; the run completes.
    let link = s.link_for(ACME, &run_id);
    let page = s.decide_as(&link, ALICE, "approve");
    assert!(page.body.contains("<h1>Approved</h1>"), "{}", page.body);
    let rec = s.get_run(ACME, &run_id).json();
    assert_eq!(rec["envelope"]["output"], json!([1, 2]), "{rec}");
    assert!(s
        .approvals(ACME)
        .iter()
        .all(|a| a["runId"] != run_id.as_str()));
    let r = mcp_call(
        &s,
        ACME,
        "lobster_resume",
        json!({"token": token, "approve": false}),
    );
    assert_eq!(r["isError"], true, "{r}");
    // selfy: self_approve = true; the agent decides through MCP, exactly once.
    let r = mcp_call(&s, SELF, "lobster_run", json!({"pipeline": GATED}));
    let token = r["structuredContent"]["requiresApproval"]["resumeToken"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(s.approvals(SELF).len(), 1);
    let r = mcp_call(
        &s,
        SELF,
        "lobster_resume",
        json!({"token": token, "approve": true}),
    );
    assert_eq!(r["structuredContent"]["output"], json!([1, 2]), "{r}");
    assert!(s.approvals(SELF).is_empty());
    let again = s.call(
        "POST",
        "/v1/resume",
        SELF,
        Some(json!({"token": token, "approve": true})),
    );
    assert_eq!(again.status, 409, "{}", again.body);
    assert!(metric(&s, "lobster_runs_total{tenant=\"selfy\",status=\"ok\"}") >= 1);
}

#[test]
fn tenants_cannot_name_the_servers_files() {
    // Tenants share the server's working directory; a workflow file there
    // (another tenant's catalog, say) is not theirs to run, by either door.
    let dir = tempfile::tempdir().unwrap();
    let config = setup(dir.path(), "", "");
    std::fs::write(
        dir.path().join("secret.lobster"),
        "name: secret\nsteps:\n  - id: a\n    pipeline: exec --json --shell 'echo [42]'\n",
    )
    .unwrap();
    let s = Server::spawn(
        Command::new(BIN)
            .current_dir(dir.path())
            .args(["serve", "--config"])
            .arg(&config)
            .args(["--listen", "127.0.0.1:0"])
            .env("BETA_TOKEN", BETA)
            .env_remove("LOBSTER_POLICY"),
    );
    for (args, says) in [
        (
            json!({"workflow": "secret.lobster"}),
            "not in this tenant's catalog",
        ),
        (
            json!({"pipeline": "secret.lobster"}),
            "pipeline names a workflow file",
        ),
        (
            json!({"pipeline": "json", "cwd": "."}),
            "cwd is not accepted",
        ),
    ] {
        let v = mcp_call(&s, ACME, "lobster_run", args.clone());
        assert_eq!(v["isError"], true, "{args}: {v}");
        assert!(v.to_string().contains(says), "{args}: {v}");
        assert!(!v.to_string().contains("42"), "{args}: {v}");
    }
    // The same through the runs API.
    let r = s.run(ACME, json!({"pipeline": "secret.lobster"}));
    assert_eq!(r.status, 400, "{}", r.body);
    let r = s.run(ACME, json!({"pipeline": "json", "cwd": "."}));
    assert_eq!(r.status, 400, "{}", r.body);
    assert!(r.body.contains("unknown field cwd"), "{}", r.body);
}

#[test]
fn help_and_bad_configs() {
    let out = Command::new(BIN)
        .args(["serve", "--help"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("Example config:") && text.contains("[[tenant]]"),
        "{text}"
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("serve.toml");
    std::fs::write(&path, "listne = \"127.0.0.1:0\"\n").unwrap();
    let out = Command::new(BIN)
        .args(["serve", "--config"])
        .arg(&path)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("listne") && err.contains("serve.toml"),
        "{err}"
    );
    assert!(out.stdout.is_empty());
    // A token variable that is not set stops the server before it listens.
    std::fs::write(
        &path,
        "[[tenant]]\nname = \"a\"\ntoken_env = \"LOBSTER_TEST_UNSET_TOKEN\"\n",
    )
    .unwrap();
    let out = Command::new(BIN)
        .args(["serve", "--config"])
        .arg(&path)
        .env_remove("LOBSTER_TEST_UNSET_TOKEN")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("LOBSTER_TEST_UNSET_TOKEN is not set"));
}

/// A tenant's runs share its store with the gateway's own records; a run that
/// tries to forge a pending gate (which humans would see in the approvals
/// list) or a run record through `state.set` is refused.
#[test]
fn runs_cannot_forge_the_gateways_records() {
    let dir = tempfile::tempdir().unwrap();
    let s = start(&setup(dir.path(), "", ""));
    for key in ["serve_pending_0123", "serve_run_0123", "pipeline_resume_x"] {
        let r = s.run(
            ACME,
            json!({"pipeline": format!("exec --json --shell 'echo 1' | state.set {key}")}),
        );
        let env = r.json();
        assert_eq!(env["ok"], false, "{key}: {env}");
        assert!(
            env["error"]["message"]
                .as_str()
                .unwrap()
                .contains("is reserved"),
            "{key}: {env}"
        );
    }
    assert!(s.approvals(ACME).is_empty());
    // Ordinary keys still work.
    let r = s.run(
        ACME,
        json!({"pipeline": "exec --json --shell 'echo 1' | state.set servers"}),
    );
    assert_eq!(r.json()["ok"], true, "{}", r.body);
}

/// The built test guests' directory, if `wasm` is there; else the test
/// `test` is skipped loudly (and fails under `CI=true`).
fn test_guests(test: &str, wasm: &str) -> Option<std::path::PathBuf> {
    let guests =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/guests/target/wasm32-wasip2/release");
    if guests.join(wasm).exists() {
        return Some(guests);
    }
    assert_ne!(
        std::env::var("CI").as_deref(),
        Ok("true"),
        "test guests missing: run tests/build-guests.sh"
    );
    eprintln!("\n*** SKIPPED {test}: run tests/build-guests.sh ***\n");
    None
}

/// `/metrics` reports what the sandbox measured: step durations, fuel used,
/// and limit breaches by kind, per tenant.
#[test]
fn metrics_report_steps_fuel_and_breaches() {
    let Some(guests) = test_guests("metrics_report_steps_fuel_and_breaches", "hostile.wasm") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let config = setup(
        dir.path(),
        "",
        &format!("steps = [{:?}]", guests.to_str().unwrap()),
    );
    std::fs::write(
        dir.path().join("trusted.toml"),
        "trust = \"trusted\"\n[max]\nfuel = 50000000\n",
    )
    .unwrap();
    let s = start(&config);
    let r = s.run(ACME, json!({"pipeline": "noop"}));
    assert_eq!(r.json()["ok"], true, "{}", r.body);
    assert_eq!(
        metric(&s, "lobster_step_duration_seconds_count{tenant=\"acme\"}"),
        1
    );
    let fuel = metric(&s, "lobster_fuel_used_total{tenant=\"acme\"}");
    assert!(fuel > 0, "fuel {fuel}");
    let r = s.run(ACME, json!({"pipeline": "hostile loop"}));
    assert!(
        r.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("ran out of fuel"),
        "{}",
        r.body
    );
    assert_eq!(
        metric(
            &s,
            "lobster_sandbox_limit_breaches_total{tenant=\"acme\",kind=\"fuel\"}"
        ),
        1
    );
    assert!(metric(&s, "lobster_fuel_used_total{tenant=\"acme\"}") >= fuel + 50_000_000);
    assert_eq!(
        metric(&s, "lobster_step_duration_seconds_count{tenant=\"acme\"}"),
        2
    );
}

/// One server process keeps loaded components in memory (the file memo):
/// a step file replaced between two runs is loaded afresh, and one a pin
/// in the run directory's `lobster.lock` does not match is refused.
#[test]
fn a_replaced_step_file_is_seen_by_the_next_run() {
    let Some(guests) = test_guests("a_replaced_step_file_is_seen_by_the_next_run", "probe.wasm")
    else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let steps = dir.path().join("mysteps");
    std::fs::create_dir_all(&steps).unwrap();
    let file = steps.join("mine.wasm");
    std::fs::copy(guests.join("noop.wasm"), &file).unwrap();
    let config = setup(dir.path(), "", "steps = [\"mysteps\"]");
    let s = start(&config);
    let output = |s: &Server| {
        let r = s.run(ACME, json!({"pipeline": "mine args"}));
        assert_eq!(r.json()["ok"], true, "{}", r.body);
        r.json()["output"].clone()
    };
    // noop returns its (empty) input; the second run comes after the
    // file's times are settled (it is memoised then).
    assert_eq!(output(&s), json!([]));
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(output(&s), json!([]));
    assert_eq!(output(&s), json!([]));
    // Replaced by another component: the next run runs it (probe answers
    // `args` with what it was given).
    let tmp = steps.join("swap.tmp");
    std::fs::copy(guests.join("probe.wasm"), &tmp).unwrap();
    std::fs::rename(&tmp, &file).unwrap();
    let out = output(&s);
    assert_eq!(out.as_array().map(Vec::len), Some(1), "{out}");
    assert_eq!(out[0]["positional"], json!(["args"]), "{out}");
    // And back, rewritten in place.
    std::fs::write(&file, std::fs::read(guests.join("noop.wasm")).unwrap()).unwrap();
    assert_eq!(output(&s), json!([]));
}

/// Read what the server sends until it closes the connection (or `limit`
/// passes): the bytes, and whether it closed.
fn read_until_closed(s: &mut TcpStream, limit: Duration) -> (String, bool) {
    s.set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    let until = Instant::now() + limit;
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    while Instant::now() < until {
        match s.read(&mut buf) {
            Ok(0) => return (String::from_utf8_lossy(&got).into_owned(), true),
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {
                return (String::from_utf8_lossy(&got).into_owned(), true)
            }
            Err(_) => {}
        }
    }
    (String::from_utf8_lossy(&got).into_owned(), false)
}

/// Real sockets that never finish their headers (silent, half a request
/// line, a byte every 150 ms) are closed after `header_timeout_ms`; a
/// client address past `max_connections_per_ip` gets 503 while it holds its
/// connections, and is served again once one closes; the approval page
/// forbids framing.
#[test]
fn slow_headers_are_cut_off_and_connections_per_address_capped() {
    let dir = tempfile::tempdir().unwrap();
    let s = start(&setup(
        dir.path(),
        "header_timeout_ms = 600\nmax_connections_per_ip = 3",
        "",
    ));
    let t = Instant::now();
    let mut silent = TcpStream::connect(&s.addr).unwrap();
    let mut half = TcpStream::connect(&s.addr).unwrap();
    half.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
        .unwrap();
    // The cap counts them: a fourth connection (two above plus the trickle
    // below) is refused while they are open.
    let mut trickle = TcpStream::connect(&s.addr).unwrap();
    let mut over = TcpStream::connect(&s.addr).unwrap();
    over.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let (text, closed) = read_until_closed(&mut over, Duration::from_secs(5));
    assert!(closed, "{text}");
    assert!(text.starts_with("HTTP/1.1 503"), "{text}");
    assert!(text.contains("too_many_connections"), "{text}");
    let trickler = std::thread::spawn(move || {
        let line =
            b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n";
        let start = Instant::now();
        for b in line.iter() {
            if trickle.write_all(&[*b]).is_err() {
                return start.elapsed();
            }
            std::thread::sleep(Duration::from_millis(150));
        }
        start.elapsed()
    });
    for (name, sock) in [("silent", &mut silent), ("half", &mut half)] {
        let (text, closed) = read_until_closed(sock, Duration::from_secs(8));
        assert!(closed, "{name}: still open after 8 s: {text:?}");
        assert!(!text.contains("200 OK"), "{name}: {text}");
    }
    assert!(t.elapsed() < Duration::from_secs(6), "{:?}", t.elapsed());
    let trickled = trickler.join().unwrap();
    assert!(
        trickled < Duration::from_secs(8),
        "a byte every 150 ms kept the connection for {trickled:?}"
    );
    // The slots are free again: served.
    let r = s.raw("GET", "/healthz", &[], b"");
    assert_eq!((r.status, r.body.as_str()), (200, "ok"));
    // A complete request is not cut off by the header timeout.
    let r = s.run(SELF, json!({"pipeline": "exec --shell 'sleep 1'"}));
    assert_eq!(r.status, 200, "{}", r.body);
    // The page may not be framed.
    let id = s.run(ACME, json!({"pipeline": GATED})).json()["runId"]
        .as_str()
        .unwrap()
        .to_string();
    let page = s.raw("GET", &s.link_for(ACME, &id), &[], b"");
    let csp = page.header("content-security-policy").unwrap_or_default();
    assert!(csp.contains("frame-ancestors 'none'"), "{csp}");
    assert!(csp.contains("default-src 'none'"), "{csp}");
    assert_eq!(page.header("x-frame-options"), Some("DENY"));
}

#[test]
fn runs_and_their_journals_are_listed_per_tenant() {
    let dir = tempfile::tempdir().unwrap();
    let config = setup(dir.path(), "", "");
    let s = start(&config);
    let r = s.run(
        ACME,
        json!({"pipeline": "exec --json --shell 'echo [1,2]' | head --n 1"}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let id = r.json()["runId"].as_str().unwrap().to_string();
    let list = s.call("GET", "/v1/runs?limit=10", ACME, None);
    assert_eq!(list.status, 200, "{}", list.body);
    let runs = list.json()["runs"].as_array().cloned().unwrap();
    // The run's id is its journal's id.
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(runs[0]["runId"], id.as_str());
    assert_eq!(runs[0]["status"], "ok");
    assert_eq!(runs[0]["door"], "serve");
    // The shape every door lists a run in (app::runs::RunRow), serve's
    // without the command line's durationMs.
    assert_eq!(
        shapes::keys(&list.json()),
        ["runs", "nextCursor", "pageUrl"]
    );
    assert_eq!(shapes::keys(&runs[0]), shapes::run_row_keys(&[]));
    let journal = s.call("GET", &format!("/v1/runs/{id}/journal"), ACME, None);
    assert_eq!(journal.status, 200, "{}", journal.body);
    let kinds: Vec<String> = journal
        .body
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["event"]["kind"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(kinds, ["run_started", "step", "step", "run_ended"]);
    // Checked offline by the CLI.
    let file = dir.path().join("run.jsonl");
    std::fs::write(&file, &journal.body).unwrap();
    let out = std::process::Command::new(BIN)
        .args(["verify", file.to_str().unwrap(), "--run", &id])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    // Another tenant sees neither the run nor its journal.
    let other = s.call("GET", "/v1/runs", BETA, None);
    assert_eq!(other.json()["runs"], json!([]), "{}", other.body);
    assert_eq!(
        s.call("GET", &format!("/v1/runs/{id}/journal"), BETA, None)
            .status,
        404
    );
    assert_eq!(s.call("GET", "/v1/runs?limit=0", ACME, None).status, 400);
}

/// A tenant reads its runs' journals, so they name no path on the server:
/// the run's directory, its workflow file (a `workflowText` run's file is
/// kept in the tenant's workdir) and an error that printed the directory
/// are recorded relative to the tenant's root — as written, so the journal
/// the tenant gets still verifies, and the operator's export is that same
/// chain.
#[test]
fn a_tenant_s_journal_names_no_path_on_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let config = setup(dir.path(), "", "");
    let s = start(&config);
    let wf =
        "name: where\nsteps:\n  - id: where\n    run: echo \"failed in $(pwd)/x\" >&2; exit 3\n";
    let r = s.run(ACME, json!({"workflowText": wf}));
    let id = r.json()["runId"].as_str().unwrap().to_string();
    assert_eq!(s.settled(ACME, &id)["status"], "failed", "{}", r.body);
    let journal = s.call("GET", &format!("/v1/runs/{id}/journal"), ACME, None);
    assert_eq!(journal.status, 200, "{}", journal.body);
    let server = [
        dir.path().to_string_lossy().into_owned(),
        dir.path()
            .canonicalize()
            .unwrap()
            .to_string_lossy()
            .into_owned(),
    ];
    for p in &server {
        assert!(
            !journal.body.contains(p.as_str()),
            "{p} in {}",
            journal.body
        );
    }
    let events: Vec<Value> = journal
        .body
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["event"].clone())
        .collect();
    let started = &events[0];
    assert_eq!(started["kind"], "run_started");
    assert_eq!(started["cwd"], ".", "{started}");
    let file = started["request"]["file"].as_str().unwrap();
    assert!(!file.starts_with('/') && !file.is_empty(), "{file}");
    let error = events.iter().find(|e| e["kind"] == "error").unwrap();
    assert!(
        error["message"].as_str().unwrap().contains("failed in ./x"),
        "{error}"
    );
    // The tenant's copy verifies offline.
    let path = dir.path().join("run.jsonl");
    std::fs::write(&path, &journal.body).unwrap();
    let out = std::process::Command::new(BIN)
        .args(["verify", path.to_str().unwrap(), "--run", &id])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    // The run list names it by its workdir-relative file, not a server path.
    let list = s.call("GET", "/v1/runs?limit=10", ACME, None).body;
    for p in &server {
        assert!(!list.contains(p.as_str()), "{list}");
    }
}

/// A tenant whose policy requires signed steps gets no unsigned step, even
/// one this server process already loaded for another tenant's run (the
/// admission is asked on every load, memoised or not).
#[test]
fn a_tenant_requiring_signatures_refuses_an_unsigned_step_another_tenant_loaded() {
    let Some(guests) = test_guests(
        "a_tenant_requiring_signatures_refuses_an_unsigned_step_another_tenant_loaded",
        "noop.wasm",
    ) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let steps = dir.path().join("mysteps");
    std::fs::create_dir_all(&steps).unwrap();
    std::fs::copy(guests.join("noop.wasm"), steps.join("noop.wasm")).unwrap();
    let key = lobster::signing::SecretKey::generate("ci").unwrap();
    std::fs::write(
        dir.path().join("signed.toml"),
        format!(
            "trust = \"trusted\"\n[signers]\nkeys = [\"{}\"]\nrequire_signed = true\n",
            key.public().line()
        ),
    )
    .unwrap();
    let config = setup(
        dir.path(),
        "",
        "steps = [\"mysteps\"]\npolicy = \"signed.toml\"",
    );
    let text = std::fs::read_to_string(&config)
        .unwrap()
        .replacen("policy = \"trusted.toml\"\nsteps", "steps", 1)
        .replace(
            "[[tenant]]\nname = \"selfy\"",
            "[[tenant]]\nname = \"selfy\"\nsteps = [\"mysteps\"]",
        );
    std::fs::write(&config, text).unwrap();
    let s = start(&config);
    let r = s.run(SELF, json!({"pipeline": "noop"}));
    assert_eq!(r.json()["ok"], true, "{}", r.body);
    std::thread::sleep(Duration::from_millis(200));
    let r = s.run(SELF, json!({"pipeline": "noop"}));
    assert_eq!(r.json()["ok"], true, "{}", r.body);
    let r = s.run(ACME, json!({"pipeline": "noop"}));
    let msg = r.json()["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        msg.contains("policy refuses step noop") && msg.contains("is not signed"),
        "{}",
        r.body
    );
    // Signed with the tenant's key, it runs.
    let sig = lobster::signing::sign(
        &key,
        &std::fs::read(steps.join("noop.wasm")).unwrap(),
        "noop.wasm",
    )
    .unwrap();
    lobster::signing::sidecar::write(&steps.join("noop.wasm"), &sig).unwrap();
    let r = s.run(ACME, json!({"pipeline": "noop"}));
    assert_eq!(r.json()["ok"], true, "{}", r.body);
}

/// A `tools/call` through `/mcp` as a 2026-07-28 client that can ask its
/// user ("input required" with elicitation), with `extra` params
/// (`requestState`, `inputResponses` of a retried call): the JSON-RPC result.
fn mcp_modern(s: &Server, token: &str, name: &str, args: Value, extra: Value) -> Value {
    let mut params = json!({
        "name": name,
        "arguments": args,
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}}
        }
    });
    if let (Some(p), Some(e)) = (params.as_object_mut(), extra.as_object()) {
        p.extend(e.clone());
    }
    let body = json!({"jsonrpc":"2.0","id":9,"method":"tools/call","params": params});
    let auth = format!("Bearer {token}");
    let r = s.raw(
        "POST",
        "/mcp",
        &[
            ("Authorization", auth.as_str()),
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
            ("MCP-Protocol-Version", "2026-07-28"),
            ("Mcp-Method", "tools/call"),
            ("Mcp-Name", name),
        ],
        body.to_string().as_bytes(),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    r.json()["result"].clone()
}

/// MCP "input required" answers count as a human's only where the tenant
/// says so: with `elicitation_is_human = false` (the default) an agent that
/// can answer its own elicitation is refused with the link to forward, a
/// retried call carrying an answer is refused too, and naming an approver
/// is refused; with `elicitation_is_human = true` the client asks, and the
/// answer decides (recorded as the elicited human's).
#[test]
fn mcp_elicitation_counts_only_where_the_tenant_says_it_is_a_human() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("trusted.toml"), "trust = \"trusted\"\n").unwrap();
    let config = dir.path().join("serve.toml");
    std::fs::write(
        &config,
        format!(
            "state = \"state\"\n\
[[tenant]]\nname = \"linky\"\ntoken_sha256 = \"{}\"\npolicy = \"trusted.toml\"\n\
[[tenant.approver]]\nname = \"alice\"\ntoken_sha256 = \"{}\"\n\
[[tenant]]\nname = \"asky\"\ntoken_sha256 = \"{}\"\npolicy = \"trusted.toml\"\nelicitation_is_human = true\n\
[[tenant.approver]]\nname = \"alice\"\ntoken_sha256 = \"{}\"\n",
            sha(ACME),
            sha(ALICE.1),
            sha(SELF),
            sha(ALICE.1)
        ),
    )
    .unwrap();
    let s = start(&config);
    // linky: the agent can elicit, but its answers are not a human's.
    let r = mcp_modern(
        &s,
        ACME,
        "lobster_run",
        json!({"pipeline": GATED}),
        json!({}),
    );
    let token = r["structuredContent"]["requiresApproval"]["resumeToken"]
        .as_str()
        .unwrap_or_else(|| panic!("{r}"))
        .to_string();
    let run_id = s.approvals(ACME)[0]["runId"].as_str().unwrap().to_string();
    let r = mcp_modern(
        &s,
        ACME,
        "lobster_resume",
        json!({"token": token, "approve": true}),
        json!({}),
    );
    assert_eq!(r["isError"], true, "{r}");
    assert!(r.get("inputRequests").is_none(), "{r}");
    assert!(r.to_string().contains(&format!("{}/a/", s.base)), "{r}");
    // A retried call with an "answer" (and a made-up state) decides nothing.
    let answer = json!({
        "requestState": "e30.00",
        "inputResponses": {"approval": {"action": "accept", "content": {"approve": true}}}
    });
    let r = mcp_modern(
        &s,
        ACME,
        "lobster_resume",
        json!({"token": token, "approve": true}),
        answer.clone(),
    );
    assert_eq!(r["isError"], true, "{r}");
    let r = mcp_modern(
        &s,
        ACME,
        "lobster_resume",
        json!({"token": token, "approve": false, "approver": "alice"}),
        json!({}),
    );
    assert_eq!(r["isError"], true, "{r}");
    assert!(
        r.to_string().contains("approver is not accepted here"),
        "{r}"
    );
    assert_eq!(s.get_run(ACME, &run_id).json()["status"], "needs_approval");
    // asky: the client asks its human; the answer decides.
    let r = mcp_modern(
        &s,
        SELF,
        "lobster_run",
        json!({"pipeline": GATED}),
        json!({}),
    );
    let token = r["structuredContent"]["requiresApproval"]["resumeToken"]
        .as_str()
        .unwrap_or_else(|| panic!("{r}"))
        .to_string();
    let run_id = s.approvals(SELF)[0]["runId"].as_str().unwrap().to_string();
    let asked = mcp_modern(
        &s,
        SELF,
        "lobster_resume",
        json!({"token": token, "approve": true}),
        json!({}),
    );
    let state = asked["requestState"]
        .as_str()
        .unwrap_or_else(|| panic!("no input required: {asked}"))
        .to_string();
    assert!(asked["inputRequests"]["approval"].is_object(), "{asked}");
    let r = mcp_modern(
        &s,
        SELF,
        "lobster_resume",
        json!({"token": token, "approve": true}),
        json!({
            "requestState": state,
            "inputResponses": {"approval": {"action": "accept", "content": {"approve": true}}}
        }),
    );
    assert_eq!(r["structuredContent"]["output"], json!([1, 2]), "{r}");
    let rec = s.get_run(SELF, &run_id).json();
    assert_eq!(rec["decidedBy"], "a human through the MCP client", "{rec}");
    // The agent cannot name the elicited human either: a call's `approver`
    // leaves the decision nameless.
    let r = mcp_modern(
        &s,
        SELF,
        "lobster_run",
        json!({"pipeline": GATED}),
        json!({}),
    );
    let token = r["structuredContent"]["requiresApproval"]["resumeToken"]
        .as_str()
        .unwrap_or_else(|| panic!("{r}"))
        .to_string();
    let run_id = s.approvals(SELF)[0]["runId"].as_str().unwrap().to_string();
    let args = json!({"token": token, "approve": true, "approver": "alice"});
    let asked = mcp_modern(&s, SELF, "lobster_resume", args.clone(), json!({}));
    let state = asked["requestState"]
        .as_str()
        .unwrap_or_else(|| panic!("no input required: {asked}"))
        .to_string();
    let r = mcp_modern(
        &s,
        SELF,
        "lobster_resume",
        args,
        json!({
            "requestState": state,
            "inputResponses": {"approval": {"action": "accept", "content": {"approve": true}}}
        }),
    );
    assert_eq!(r["structuredContent"]["output"], json!([1, 2]), "{r}");
    let rec = s.get_run(SELF, &run_id).json();
    assert_eq!(rec["decidedBy"], "a human through the MCP client", "{rec}");
    // Its REST door still refuses the agent's own yes.
    let r = s.run(SELF, json!({"pipeline": GATED})).json();
    let id = r["runId"].as_str().unwrap().to_string();
    let r = s.call(
        "POST",
        &format!("/v1/runs/{id}/resume"),
        SELF,
        Some(json!({"approve": true})),
    );
    assert_eq!(r.status, 403, "{}", r.body);
}

/// A loopback webhook receiver: answers each request with the next status
/// of `plan` (0: never answers), then 200; keeps every request's head and body.
struct Hook {
    url: String,
    seen: std::sync::Arc<std::sync::Mutex<Vec<(String, String)>>>,
}

impl Hook {
    fn start(plan: Vec<u16>) -> Hook {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/hook", listener.local_addr().unwrap());
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let log = seen.clone();
        std::thread::spawn(move || {
            for (n, conn) in listener.incoming().enumerate() {
                let Ok(mut conn) = conn else { continue };
                let status = plan.get(n).copied().unwrap_or(200);
                let log = log.clone();
                std::thread::spawn(move || {
                    let mut reader = BufReader::new(conn.try_clone().unwrap());
                    let mut head = String::new();
                    let mut len = 0usize;
                    loop {
                        let mut line = String::new();
                        if reader.read_line(&mut line).unwrap_or(0) == 0 {
                            return;
                        }
                        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                            len = v.trim().parse().unwrap_or(0);
                        }
                        head.push_str(&line);
                        if line == "\r\n" {
                            break;
                        }
                    }
                    let mut body = vec![0u8; len];
                    reader.read_exact(&mut body).unwrap();
                    log.lock()
                        .unwrap()
                        .push((head, String::from_utf8_lossy(&body).into_owned()));
                    if status == 0 {
                        std::thread::sleep(Duration::from_secs(30));
                        return;
                    }
                    let _ = conn.write_all(
                        format!(
                            "HTTP/1.1 {status} X\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                        )
                        .as_bytes(),
                    );
                });
            }
        });
        Hook { url, seen }
    }

    /// The requests received, once `n` arrived (or 20 s passed).
    fn wait_for(&self, n: usize) -> Vec<(String, String)> {
        let until = Instant::now() + Duration::from_secs(20);
        loop {
            let got = self.seen.lock().unwrap().clone();
            if got.len() >= n || Instant::now() > until {
                return got;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// HMAC-SHA256, as a receiver computes it (RFC 2104 over sha2).
fn hmac_hex(key: &[u8], msg: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    let mut k = [0u8; 64];
    k[..key.len()].copy_from_slice(key);
    let inner = Sha256::new()
        .chain_update(k.map(|b| b ^ 0x36))
        .chain_update(msg)
        .finalize();
    Sha256::new()
        .chain_update(k.map(|b| b ^ 0x5c))
        .chain_update(inner)
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

const NOTIFY_KEY: &str = "notify-key-0123456789abcdef";

/// The operator's notifier: a paused gate posts its prompt and a fresh
/// approval link to `notify_url`, signed (HMAC-SHA256 over "t.body" with the
/// key from `notify_key_env`, checked here as a receiver would), retried on
/// a failure and on a receiver that never answers (`notify_timeout_ms`),
/// at most `notify_attempts` times; no tenant or approver credential goes
/// with it, and the link it carries is one a human signs in on.
#[test]
fn the_notifier_delivers_signed_links_with_bounded_retries() {
    let dir = tempfile::tempdir().unwrap();
    // First attempt 500, second never answers, third 200.
    let hook = Hook::start(vec![500, 0, 200]);
    let config = setup(
        dir.path(),
        "notify_key_env = \"LOBSTER_TEST_NOTIFY_KEY\"\nnotify_timeout_ms = 700\nnotify_attempts = 3",
        &format!("notify_url = \"{}\"", hook.url),
    );
    let s = Server::spawn(
        Command::new(BIN)
            .args(["serve", "--config"])
            .arg(&config)
            .args(["--listen", "127.0.0.1:0"])
            .env("BETA_TOKEN", BETA)
            .env("LOBSTER_TEST_NOTIFY_KEY", NOTIFY_KEY)
            .env_remove("LOBSTER_POLICY"),
    );
    let id = s.run(ACME, json!({"pipeline": GATED})).json()["runId"]
        .as_str()
        .unwrap()
        .to_string();
    let got = hook.wait_for(3);
    assert_eq!(got.len(), 3, "{got:?}");
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(
        hook.wait_for(4).len(),
        3,
        "more attempts than notify_attempts"
    );
    let (head, body) = &got[2];
    assert!(head.starts_with("POST /hook HTTP/1.1\r\n"), "{head}");
    let lower = head.to_ascii_lowercase();
    assert!(!lower.contains("authorization"), "{head}");
    for secret in [ACME, ALICE.1, BETA, NOTIFY_KEY] {
        assert!(!head.contains(secret) && !body.contains(secret), "{secret}");
    }
    let sig = lower
        .lines()
        .find_map(|l| l.strip_prefix("x-lobster-signature:"))
        .unwrap()
        .trim()
        .to_string();
    let (t, v1) = sig
        .strip_prefix("t=")
        .and_then(|r| r.split_once(",v1="))
        .unwrap();
    assert_eq!(
        v1,
        hmac_hex(NOTIFY_KEY.as_bytes(), format!("{t}.{body}").as_bytes())
    );
    assert_ne!(
        v1,
        hmac_hex(b"another key", format!("{t}.{body}").as_bytes())
    );
    let v: Value = serde_json::from_str(body).unwrap();
    assert_eq!(v["event"], "approval_requested");
    assert_eq!(
        (v["tenant"].as_str(), v["runId"].as_str()),
        (Some("acme"), Some(id.as_str()))
    );
    assert_eq!(v["prompt"], "Send <both>?");
    // The link works — for a signed-in approver only.
    let link = v["approveUrl"]
        .as_str()
        .unwrap()
        .strip_prefix(&s.base)
        .unwrap()
        .to_string();
    assert_eq!(s.form(&link, "decision=approve").status, 401);
    let r = s.decide_as(&link, ALICE, "approve");
    assert!(r.body.contains("<h1>Approved</h1>"), "{}", r.body);
    // Tenants without a notify_url notify nobody; a notify_url without the
    // key is refused at start.
    s.run(SELF, json!({"pipeline": GATED}));
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(hook.wait_for(4).len(), 3);
    let bad = setup(dir.path(), "", &format!("notify_url = \"{}\"", hook.url));
    let out = Command::new(BIN)
        .args(["serve", "--config"])
        .arg(&bad)
        .env("BETA_TOKEN", BETA)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("notify_key_env"));
    // A tenant whose token may not approve and that has no approver is
    // refused at start, with the fix named.
    let text = std::fs::read_to_string(&bad).unwrap();
    let cut = text.find("[[tenant.approver]]\nname = \"alice\"").unwrap();
    let end = cut + text[cut..].find("[[tenant]]").unwrap();
    std::fs::write(
        &bad,
        format!("{}{}", &text[..cut], &text[end..])
            .replace(&format!("notify_url = \"{}\"", hook.url), ""),
    )
    .unwrap();
    let out = Command::new(BIN)
        .args(["serve", "--config"])
        .arg(&bad)
        .env("BETA_TOKEN", BETA)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("tenant acme: self_approve = false and no [[tenant.approver]]")
            && err.contains("lobster serve hash-password"),
        "{err}"
    );
}
