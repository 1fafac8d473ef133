//! The operator's notifier: signed approval links posted to `notify_url`,
//! retried a bounded number of times, checked by a loopback receiver.

use super::{setup, Server, ACME, ALICE, BETA, BIN, GATED, SELF};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::process::Command;
use std::time::{Duration, Instant};

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
