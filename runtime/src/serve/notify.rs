//! The approval notifier: when a tenant's run pauses at an approval gate,
//! the operator's webhook (`notify_url` in the tenant's table) receives the
//! gate's prompt and a fresh approval link, so a human learns of it without
//! the agent forwarding anything.
//!
//! ```text
//! POST <notify_url>
//! content-type: application/json
//! x-lobster-signature: t=<unix seconds>,v1=<hex HMAC-SHA256(key, "<t>.<body>")>
//!
//! {"event":"approval_requested","tenant":"acme","runId":"…","approvalId":"…",
//!  "prompt":"…","approveUrl":"https://…/a/…","expiresAt":"…Z","sentAt":"…Z"}
//! ```
//!
//! The key is the operator's (`notify_key_env` in serve.toml names the
//! variable that holds it). A receiver recomputes the HMAC over the
//! timestamp, a dot and the raw body, compares in constant time, and
//! refuses a timestamp more than a few minutes old (replays). Each attempt
//! has `notify_timeout_ms`; a failed one (no connection, a non-2xx answer)
//! is retried up to `notify_attempts` times in all, one second apart, then
//! logged (without the key or the link). The URL is the operator's; nothing
//! a run controls changes it, and no tenant credential is sent with it.

use crate::broker::http::{Post, Url};
use crate::kernel::{Cancel, CancelReason};
use sha2::{Digest, Sha256};
use std::time::Duration;

/// Where and how to deliver.
#[derive(Clone)]
pub struct Notifier {
    /// The webhook.
    pub url: Url,
    /// The signing key.
    pub key: Vec<u8>,
    /// Each attempt's deadline.
    pub timeout: Duration,
    /// Attempts in all (at least 1).
    pub attempts: u32,
}

impl std::fmt::Debug for Notifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Notifier({})", self.url.origin())
    }
}

/// HMAC-SHA256 (RFC 2104).
pub fn hmac_sha256(key: &[u8], message: &[u8]) -> [u8; 32] {
    let mut k = [0u8; 64];
    if key.len() > 64 {
        k[..32].copy_from_slice(&Sha256::digest(key));
    } else {
        k[..key.len()].copy_from_slice(key);
    }
    let pad = |b: u8| k.map(|x| x ^ b);
    let inner = Sha256::new()
        .chain_update(pad(0x36))
        .chain_update(message)
        .finalize();
    Sha256::new()
        .chain_update(pad(0x5c))
        .chain_update(inner)
        .finalize()
        .into()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The `x-lobster-signature` value of `body` sent at unix second `t`.
pub fn signature(key: &[u8], t: u64, body: &[u8]) -> String {
    let mut msg = format!("{t}.").into_bytes();
    msg.extend_from_slice(body);
    format!("t={t},v1={}", hex(&hmac_sha256(key, &msg)))
}

/// A [`Cancel`] that fires after `timeout` of wall-clock time. Not
/// [`Cancel::arm_deadline`]: run deadlines pause while any component
/// compiles in the process, and a notification's bound must not.
fn wall_clock_deadline(timeout: Duration) -> Cancel {
    let cancel = Cancel::default();
    let fire = cancel.clone();
    std::thread::spawn(move || {
        std::thread::sleep(timeout);
        fire.trigger(CancelReason::Timeout);
    });
    cancel
}

impl Notifier {
    /// Deliver `body` (blocking; run it off the async threads). `Err` says
    /// why the last attempt failed.
    pub fn deliver(&self, body: &serde_json::Value) -> Result<(), String> {
        let bytes = crate::value::to_js_json(body).into_bytes();
        let mut last = String::new();
        for attempt in 1..=self.attempts.max(1) {
            let sig = signature(&self.key, super::link::now_secs(), &bytes);
            let cancel = wall_clock_deadline(self.timeout);
            let sent = Post {
                url: &self.url,
                bearer: None,
                body: &bytes,
                accept: None,
                ca_file: None,
            }
            .send_with(&[("X-Lobster-Signature", &sig)], &cancel, Some(64 * 1024));
            match sent {
                Ok(res) if res.ok() => return Ok(()),
                Ok(res) => last = format!("answered {}", res.status),
                Err(e) => last = e.to_string(),
            }
            if attempt < self.attempts {
                std::thread::sleep(Duration::from_secs(1));
            }
        }
        Err(last)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hmac_matches_rfc_4231() {
        // Test case 2.
        assert_eq!(
            hex(&hmac_sha256(b"Jefe", b"what do ya want for nothing?")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
        // Test case 6: a key longer than the block.
        assert_eq!(
            hex(&hmac_sha256(
                &[0xaa; 131],
                b"Test Using Larger Than Block-Size Key - Hash Key First"
            )),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"
        );
        assert_eq!(
            signature(b"k", 7, b"{}"),
            format!("t=7,v1={}", hex(&hmac_sha256(b"k", b"7.{}")))
        );
    }
}

#[cfg(test)]
mod delivery {
    use super::*;
    use std::io::{BufRead, BufReader, Write};

    /// Attempts against a receiver that fails, then hangs, then answers.
    #[test]
    fn failures_and_hangs_are_retried_within_bounds() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = Url::parse(&format!("http://{}/h", listener.local_addr().unwrap())).unwrap();
        let seen = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let count = seen.clone();
        std::thread::spawn(move || {
            for (n, conn) in listener.incoming().enumerate() {
                let mut conn = conn.unwrap();
                count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let mut r = BufReader::new(conn.try_clone().unwrap());
                let mut line = String::new();
                while r.read_line(&mut line).unwrap_or(0) > 2 {
                    line.clear();
                }
                std::thread::spawn(move || match n {
                    0 => {
                        let _ = conn.write_all(b"HTTP/1.1 500 X\r\ncontent-length: 0\r\n\r\n");
                    }
                    1 => std::thread::sleep(Duration::from_secs(20)),
                    _ => {
                        let _ = conn.write_all(b"HTTP/1.1 204 X\r\ncontent-length: 0\r\n\r\n");
                    }
                });
            }
        });
        let n = Notifier {
            url,
            key: b"k".to_vec(),
            timeout: Duration::from_millis(300),
            attempts: 2,
        };
        let t = std::time::Instant::now();
        let e = n.deliver(&serde_json::json!({"a": 1})).unwrap_err();
        assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
        assert_eq!(seen.load(std::sync::atomic::Ordering::SeqCst), 2, "{e}");
        let n = Notifier { attempts: 1, ..n };
        n.deliver(&serde_json::json!({"a": 2})).unwrap();
    }
}
