//! The server's limits and what it measures: 429 and 413, slow headers cut
//! off, connections per address capped, and `/metrics` of step durations,
//! fuel and breaches.

use super::{mcp_call, metric, setup, start, test_guests, ACME, GATED, SELF};
use serde_json::json;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

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
