//! `lobster-load`, the load generator of `runtime/benches/serve.sh`, against
//! real loopback servers: the `lobster-stubs` gateway (which closes every
//! connection), a keep-alive server written here (counts connections,
//! answers chunked and sized bodies), a refused port, and `--exec`.

use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

fn load(args: &[&str]) -> (Output, Value) {
    let out = Command::new(env!("CARGO_BIN_EXE_lobster-load"))
        .args(args)
        .output()
        .expect("run lobster-load");
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let report = serde_json::from_str(stdout.trim()).unwrap_or(Value::Null);
    (out, report)
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).to_string()
}

/// The `lobster-stubs` gateway with token `T`, logging requests to `log`.
struct Stub(std::process::Child, String);

impl Stub {
    fn start(log: &std::path::Path) -> Stub {
        let mut child = Command::new(env!("CARGO_BIN_EXE_lobster-stubs"))
            .args(["gateway", "--token", "T", "--log"])
            .arg(log)
            .stdout(Stdio::piped())
            .spawn()
            .expect("start lobster-stubs");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        Stub(child, line.trim().to_string())
    }
}

impl Drop for Stub {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn load_counts_every_request_against_the_stub_gateway() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("requests.jsonl");
    let stub = Stub::start(&log);
    let url = format!("{}/tools/invoke", stub.1);
    let (out, report) = load(&[
        "--url",
        &url,
        "--header",
        "Authorization: Bearer T",
        "--body-json",
        r#"{"tool":"echo","args":{"n":1}}"#,
        "-c",
        "4",
        "-n",
        "60",
        "--expect-status",
        "200",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(report["requests"], 60, "{report}");
    assert_eq!(report["errors"], 0, "{report}");
    assert_eq!(report["statuses"]["200"], 60, "{report}");
    assert_eq!(report["clients"], 4);
    for key in ["seconds", "rps", "p50_ms", "p90_ms", "p99_ms", "max_ms"] {
        assert!(report[key].as_f64().unwrap() > 0.0, "{key} in {report}");
    }
    assert!(report["p50_ms"].as_f64() <= report["p99_ms"].as_f64());
    assert!(report["p99_ms"].as_f64() <= report["max_ms"].as_f64());
    // The server saw each request once, body and token included.
    let lines: Vec<Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 60);
    assert!(lines.iter().all(|l| l["auth"] == "Bearer T"
        && l["body"]["tool"] == "echo"
        && l["body"]["args"]["n"] == 1));
}

#[test]
fn load_counts_unexpected_statuses_as_errors_and_fails_when_all_fail() {
    let dir = tempfile::tempdir().unwrap();
    let stub = Stub::start(&dir.path().join("log"));
    let url = format!("{}/tools/invoke", stub.1);
    // No token: the gateway answers 401 to each.
    let (out, report) = load(&[
        "--url",
        &url,
        "--body-json",
        r#"{"tool":"echo"}"#,
        "-c",
        "2",
        "-n",
        "10",
        "--expect-status",
        "200",
    ]);
    assert_eq!(out.status.code(), Some(1), "{report}");
    assert_eq!(report["errors"], 10);
    assert_eq!(report["statuses"]["401"], 10);
    assert!(
        stderr(&out).contains("all 10 requests failed"),
        "{}",
        stderr(&out)
    );
    // Expecting 401 turns the same answers into successes.
    let (out, report) = load(&[
        "--url",
        &url,
        "--body-json",
        r#"{"tool":"echo"}"#,
        "-c",
        "2",
        "-n",
        "10",
        "--expect-status",
        "401",
    ]);
    assert!(out.status.success(), "{report}");
    assert_eq!(report["errors"], 0);
}

#[test]
fn load_reports_a_refused_connection_clearly() {
    let port = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let url = format!("http://127.0.0.1:{port}/v1/runs");
    let (out, report) = load(&["--url", &url, "-c", "3", "-n", "9"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(report["requests"], 9, "{report}");
    assert_eq!(report["errors"], 9);
    assert_eq!(report["statuses"]["failed"], 9);
    let err = stderr(&out);
    assert!(
        err.contains(&format!("connect to 127.0.0.1:{port}")) && err.contains("refused"),
        "{err}"
    );
    assert!(err.contains("all 9 requests failed"), "{err}");
}

/// A keep-alive HTTP/1.1 server: answers every request on a connection
/// until the client closes it, alternating chunked and sized bodies, and
/// counts the connections it accepted.
fn keep_alive_server() -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1/runs?wait=100", listener.local_addr().unwrap());
    let accepted = Arc::new(AtomicUsize::new(0));
    let count = accepted.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            count.fetch_add(1, Ordering::SeqCst);
            std::thread::spawn(move || serve_connection(conn));
        }
    });
    (url, accepted)
}

fn serve_connection(conn: TcpStream) {
    let mut reader = BufReader::new(conn.try_clone().unwrap());
    let mut writer = conn;
    for n in 0.. {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        assert!(
            line.starts_with("POST /v1/runs?wait=100 HTTP/1.1"),
            "{line}"
        );
        let mut length = 0;
        loop {
            let mut h = String::new();
            reader.read_line(&mut h).unwrap();
            if h.trim().is_empty() {
                break;
            }
            if let Some(v) = h.to_ascii_lowercase().strip_prefix("content-length:") {
                length = v.trim().parse().unwrap();
            }
        }
        let mut body = vec![0; length];
        reader.read_exact(&mut body).unwrap();
        let answer = if n % 2 == 0 {
            format!(
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{}",
                body.len(),
                String::from_utf8_lossy(&body)
            )
        } else {
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\n{\"a\r\n2\r\n\":\r\n2\r\n1}\r\n0\r\n\r\n"
                .to_string()
        };
        if writer.write_all(answer.as_bytes()).is_err() {
            return;
        }
    }
}

#[test]
fn load_keeps_one_connection_per_client_alive() {
    let (url, accepted) = keep_alive_server();
    let (out, report) = load(&[
        "--url",
        &url,
        "--body-json",
        r#"{"pipeline":"exec --json --shell 'echo [1]'"}"#,
        "-c",
        "3",
        "-n",
        "90",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(report["requests"], 90, "{report}");
    assert_eq!(report["errors"], 0, "{report}");
    // 90 requests over at most one connection per client: kept alive. (A
    // client that found no request left never connects: on a loaded
    // machine one client may do all 90.)
    let connections = accepted.load(Ordering::SeqCst);
    assert!(
        (1..=3).contains(&connections),
        "{connections} connections for 3 clients"
    );
    // A duration instead of a count.
    let (out, report) = load(&["--url", &url, "--body-json", "{}", "-c", "2", "-d", "1"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(report["seconds"].as_f64().unwrap() >= 1.0, "{report}");
    assert!(report["requests"].as_u64().unwrap() > 10, "{report}");
    // An offered rate: the schedule, not the server, sets the pace (50 a
    // second for 2 s is 100 requests, not the thousands a closed loop sends).
    let (out, report) = load(&[
        "--url",
        &url,
        "--body-json",
        "{}",
        "-c",
        "4",
        "-d",
        "2",
        "--rate",
        "50",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(report["rate"], 50.0, "{report}");
    assert_eq!(report["requests"], 100, "{report}");
    let rps = report["rps"].as_f64().unwrap();
    assert!((45.0..=55.0).contains(&rps), "{report}");
}

#[test]
fn load_exec_spawns_the_command_per_request_with_the_body_on_stdin() {
    let (out, report) = load(&[
        "--exec",
        "sh -c 'grep -q \"needle\" && exit 0 || exit 7'",
        "--body-json",
        r#"{"in":"needle"}"#,
        "-c",
        "2",
        "-n",
        "6",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(report["mode"], "exec");
    assert_eq!(report["statuses"]["exit 0"], 6, "{report}");
    let (out, report) = load(&[
        "--exec",
        "sh -c 'grep -q \"needle\" && exit 0 || exit 7'",
        "--body-json",
        r#"{"in":"hay"}"#,
        "-c",
        "2",
        "-n",
        "4",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(report["statuses"]["exit 7"], 4, "{report}");
    assert_eq!(report["errors"], 4);
    let (out, _) = load(&["--exec", "/nonexistent/cmd", "-c", "1", "-n", "2"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("spawn /nonexistent/cmd"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn load_refuses_bad_arguments_with_the_fix() {
    for (args, says) in [
        (vec!["--url", "http://127.0.0.1:1/"], "exactly one of -n"),
        (vec!["--url", "https://x/", "-n", "1"], "only http://"),
        (vec!["-n", "1"], "exactly one of --url and --exec"),
        (
            vec!["--url", "http://a:1/", "-n", "1", "--body-json", "{"],
            "--body-json is not JSON",
        ),
        (
            vec!["--url", "http://a:1/", "-n", "x"],
            "-n takes a whole number",
        ),
        (vec!["--exec", "sh -c 'x", "-n", "1"], "unclosed '"),
        (
            vec!["--url", "http://a:1/", "-n", "1", "-c", "0"],
            "-c must be at least 1",
        ),
        (
            vec!["--url", "http://a:1/", "-n", "1", "--body", "/nonexistent"],
            "--body /nonexistent",
        ),
        (
            vec!["--url", "http://a:1/", "-n", "1", "--rate", "0"],
            "--rate must be at least 1",
        ),
    ] {
        let (out, _) = load(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(stderr(&out).contains(says), "{args:?}: {}", stderr(&out));
    }
}
