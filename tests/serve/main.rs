//! `lobster serve` end to end: the real binary on 127.0.0.1:0, driven over
//! real TCP connections with a small HTTP/1.1 client (below).

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

mod approvals;
mod approvers;
mod canary;
mod example;
mod gates;
mod lifecycle;
mod limits;
mod mcp;
mod nodes;
mod notifier;
#[path = "../own_pg.rs"]
mod own_pg;
#[path = "../psql.rs"]
mod psql;
mod roots;
mod run_pages;
#[path = "../shapes.rs"]
mod shapes;
mod tenants;
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
