//! `lobster-load`: a small load generator for `lobster serve` benchmarks
//! (`runtime/benches/serve.sh`), and its baseline: the same load as one
//! process spawn per request.
//!
//! ```text
//! lobster-load --url http://HOST:PORT/PATH [--header 'Name: value']... [--method M]
//!              [--body FILE | --body-json TEXT] -c CLIENTS (-n REQUESTS | -d SECONDS)
//!              [--expect-status N] [--rate PER_SECOND]
//! lobster-load --exec 'CMD ARG...' [--body FILE | --body-json TEXT] -c CLIENTS
//!              (-n REQUESTS | -d SECONDS) [--expect-status N]
//! ```
//!
//! HTTP mode keeps CLIENTS HTTP/1.1 keep-alive connections busy (one thread
//! each; a connection the server closes, or that fails on reuse, is opened
//! again). The method is POST when a body is given, else GET. A request is an
//! error when it fails on the wire or answers another status than
//! `--expect-status` (default: any 2xx is fine).
//!
//! Without `--rate` every client sends its next request as soon as the last
//! one is answered (a closed loop: it finds the most the server can do, and
//! latencies then grow with the clients). `--rate R` offers R requests a
//! second in all instead, the clients taking turns on a fixed schedule (an
//! open loop, like wrk2): a request's latency counts from when it was due,
//! so a server that falls behind shows it in every percentile instead of
//! slowing the load down (no coordinated omission).
//!
//! `--exec` mode spawns CMD once per request instead (words split like a
//! shell would, with '…', "…" and \ quoting but no expansion; the body goes
//! to its stdin, its output is read and dropped): what a user pays without a
//! server. Statuses are then `exit N`; an error is a failed spawn or another
//! exit code than `--expect-status` (default 0).
//!
//! The report is one JSON line on stdout: `{mode, clients, requests, errors,
//! seconds, rps, p50_ms, p90_ms, p99_ms, max_ms, statuses}`; latencies
//! include failed requests. The first error of each kind goes to stderr. The
//! exit code is 1 when every request failed, 2 on bad arguments, else 0.

use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const USAGE: &str =
    "usage: lobster-load (--url URL | --exec 'CMD ...') -c CLIENTS (-n REQUESTS | -d SECONDS) \
[--header 'Name: value']... [--method M] [--body FILE | --body-json TEXT] [--expect-status N] \
[--rate PER_SECOND]";

/// What every client does per request.
#[derive(Clone)]
enum Target {
    Http(Http),
    Exec(Vec<String>),
}

#[derive(Clone)]
struct Http {
    /// `host:port` to connect to (also the Host header).
    authority: String,
    /// The request head up to and including the blank line.
    head: Vec<u8>,
}

/// When the clients stop.
#[derive(Clone, Copy)]
enum Amount {
    Requests(u64),
    Until(Instant),
}

struct Options {
    target: Target,
    body: Vec<u8>,
    clients: usize,
    amount: Amount,
    expect: Option<u16>,
    /// Requests per second offered in all (`--rate`); `None`: closed loop.
    rate: Option<f64>,
}

/// The outcome of one request: its status (`"200"`, `"exit 0"`) or the
/// failure, and whether it counts as an error.
struct Outcome {
    status: Result<String, String>,
    ok: bool,
}

#[derive(Default)]
struct Tally {
    latencies_us: Vec<u64>,
    errors: u64,
    statuses: BTreeMap<String, u64>,
    /// The first message of each kind of failure, for stderr.
    first_errors: BTreeMap<String, String>,
}

fn main() {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let options = match parse(&argv) {
        Ok(o) => o,
        Err(e) if e == "help" => {
            println!("{USAGE}");
            return;
        }
        Err(e) => {
            eprintln!("lobster-load: {e}\n{USAGE}");
            std::process::exit(2);
        }
    };
    let (report, all_failed) = run(&options);
    println!("{report}");
    if all_failed {
        std::process::exit(1);
    }
}

fn parse(argv: &[String]) -> Result<Options, String> {
    let mut url = None;
    let mut exec = None;
    let mut headers: Vec<String> = Vec::new();
    let mut method = None;
    let mut body = None;
    let mut clients = 1usize;
    let mut requests = None;
    let mut seconds = None;
    let mut expect = None;
    let mut rate = None;
    let mut i = 0;
    while i < argv.len() {
        let flag = argv[i].as_str();
        let value = || {
            argv.get(i + 1)
                .cloned()
                .ok_or_else(|| format!("{flag} needs a value"))
        };
        match flag {
            "--url" => url = Some(value()?),
            "--exec" => exec = Some(value()?),
            "--header" | "-H" => headers.push(value()?),
            "--method" | "-X" => method = Some(value()?),
            "--body" => {
                let path = value()?;
                body = Some(
                    std::fs::read(&path).map_err(|e| format!("--body {path}: cannot read: {e}"))?,
                );
            }
            "--body-json" => {
                let text = value()?;
                serde_json::from_str::<Value>(&text)
                    .map_err(|e| format!("--body-json is not JSON ({e}): {text}"))?;
                body = Some(text.into_bytes());
            }
            "-c" | "--clients" => {
                clients = number(flag, &value()?)?;
                if clients == 0 {
                    return Err(format!("{flag} must be at least 1"));
                }
            }
            "-n" | "--requests" => requests = Some(number(flag, &value()?)? as u64),
            "-d" | "--duration" => seconds = Some(number(flag, &value()?)? as u64),
            "--expect-status" => expect = Some(number(flag, &value()?)? as u16),
            "--rate" => {
                let r = number(flag, &value()?)?;
                if r == 0 {
                    return Err(format!("{flag} must be at least 1"));
                }
                rate = Some(r as f64);
            }
            "-h" | "--help" => return Err("help".into()),
            other => return Err(format!("unknown argument {other}")),
        }
        i += 2;
    }
    let amount = match (requests, seconds) {
        (Some(n), None) => Amount::Requests(n),
        (None, Some(s)) => Amount::Until(Instant::now() + Duration::from_secs(s)),
        _ => return Err("give exactly one of -n REQUESTS and -d SECONDS".into()),
    };
    let body = body.unwrap_or_default();
    let target = match (url, exec) {
        (Some(url), None) => {
            let method =
                method.unwrap_or_else(|| if body.is_empty() { "GET" } else { "POST" }.into());
            Target::Http(http_target(&url, &method, &headers, body.len())?)
        }
        (None, Some(cmd)) => {
            let words = split_words(&cmd)?;
            if words.is_empty() {
                return Err("--exec needs a command".into());
            }
            Target::Exec(words)
        }
        _ => return Err("give exactly one of --url and --exec".into()),
    };
    Ok(Options {
        target,
        body,
        clients,
        amount,
        expect,
        rate,
    })
}

fn number(flag: &str, text: &str) -> Result<usize, String> {
    text.parse()
        .map_err(|_| format!("{flag} takes a whole number, not {text:?}"))
}

/// Parse `http://host:port/path` and build the fixed request head.
fn http_target(
    url: &str,
    method: &str,
    headers: &[String],
    body_len: usize,
) -> Result<Http, String> {
    let rest = url.strip_prefix("http://").ok_or_else(|| {
        format!("--url {url}: only http:// URLs are supported (no TLS in a loopback benchmark)")
    })?;
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    if authority.is_empty() {
        return Err(format!("--url {url}: no host"));
    }
    let authority = if authority.contains(':') {
        authority.to_string()
    } else {
        format!("{authority}:80")
    };
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: {authority}\r\n");
    let mut has_type = false;
    for h in headers {
        let Some((name, value)) = h.split_once(':') else {
            return Err(format!("--header {h:?}: expected 'Name: value'"));
        };
        if name.trim().eq_ignore_ascii_case("content-type") {
            has_type = true;
        }
        head.push_str(&format!("{}: {}\r\n", name.trim(), value.trim()));
    }
    if body_len > 0 || method != "GET" {
        if !has_type {
            head.push_str("Content-Type: application/json\r\n");
        }
        head.push_str(&format!("Content-Length: {body_len}\r\n"));
    }
    head.push_str("\r\n");
    Ok(Http {
        authority,
        head: head.into_bytes(),
    })
}

/// Split a command line into words: whitespace separates, '…' is literal,
/// "…" allows \" and \\, a bare \ escapes the next character.
fn split_words(line: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => word.push(c),
                        None => return Err(format!("--exec {line:?}: unclosed '")),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(c @ ('"' | '\\' | '$' | '`')) => word.push(c),
                            Some(c) => {
                                word.push('\\');
                                word.push(c);
                            }
                            None => return Err(format!("--exec {line:?}: unclosed \"")),
                        },
                        Some(c) => word.push(c),
                        None => return Err(format!("--exec {line:?}: unclosed \"")),
                    }
                }
            }
            '\\' => {
                in_word = true;
                if let Some(c) = chars.next() {
                    word.push(c);
                }
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    Ok(words)
}

/// Run the load and return the JSON report and whether every request failed.
fn run(options: &Options) -> (Value, bool) {
    let issued = Arc::new(AtomicU64::new(0));
    let tally = Arc::new(Mutex::new(Tally::default()));
    let body: Arc<[u8]> = options.body.clone().into();
    let start = Instant::now();
    let clients = options.clients as u64;
    let threads: Vec<_> = (0..clients)
        .map(|index| {
            let (issued, tally, body) = (issued.clone(), tally.clone(), body.clone());
            let (target, amount, expect) = (options.target.clone(), options.amount, options.expect);
            let rate = options.rate;
            std::thread::spawn(move || {
                let mut local = Tally::default();
                let mut client = Client::new(target, body, expect);
                let mut turn = 0u64;
                loop {
                    // Open loop: this client's next turn on the shared schedule.
                    let due = rate.map(|r| {
                        start + Duration::from_secs_f64((turn * clients + index) as f64 / r)
                    });
                    turn += 1;
                    if let (Some(due), Amount::Until(end)) = (due, amount) {
                        if due >= end {
                            break;
                        }
                    }
                    if let Some(wait) = due.and_then(|d| d.checked_duration_since(Instant::now())) {
                        std::thread::sleep(wait);
                    }
                    match amount {
                        Amount::Requests(n) => {
                            if issued.fetch_add(1, Ordering::Relaxed) >= n {
                                break;
                            }
                        }
                        Amount::Until(end) => {
                            if Instant::now() >= end {
                                break;
                            }
                        }
                    }
                    let t0 = due.unwrap_or_else(Instant::now);
                    let outcome = client.one();
                    local.latencies_us.push(t0.elapsed().as_micros() as u64);
                    match outcome.status {
                        Ok(status) => *local.statuses.entry(status).or_default() += 1,
                        Err(message) => {
                            let kind = message.split(':').next().unwrap_or("").to_string();
                            local.first_errors.entry(kind).or_insert(message);
                            *local.statuses.entry("failed".into()).or_default() += 1;
                            // A refused connection fails at once: do not spin.
                            std::thread::sleep(Duration::from_millis(1));
                        }
                    }
                    if !outcome.ok {
                        local.errors += 1;
                    }
                }
                let mut all = tally.lock().unwrap();
                all.latencies_us.append(&mut local.latencies_us);
                all.errors += local.errors;
                for (k, v) in local.statuses {
                    *all.statuses.entry(k).or_default() += v;
                }
                for (k, v) in local.first_errors {
                    all.first_errors.entry(k).or_insert(v);
                }
            })
        })
        .collect();
    for t in threads {
        let _ = t.join();
    }
    let seconds = start.elapsed().as_secs_f64();
    let mut tally = std::mem::take(&mut *tally.lock().unwrap());
    tally.latencies_us.sort_unstable();
    let requests = tally.latencies_us.len() as u64;
    for message in tally.first_errors.values() {
        eprintln!("lobster-load: {message}");
    }
    let failed = tally.statuses.get("failed").copied().unwrap_or(0);
    let unexpected = tally.errors.saturating_sub(failed);
    if unexpected > 0 {
        eprintln!("lobster-load: {unexpected} answer(s) had an unexpected status (see statuses)");
    }
    let all_failed = requests > 0 && tally.errors == requests;
    if all_failed {
        eprintln!("lobster-load: all {requests} requests failed");
    } else if requests == 0 {
        eprintln!("lobster-load: no request was sent");
    }
    let pct = |p: f64| -> f64 {
        if tally.latencies_us.is_empty() {
            return 0.0;
        }
        let rank = ((p / 100.0) * requests as f64).ceil() as usize;
        let us = tally.latencies_us[rank.clamp(1, tally.latencies_us.len()) - 1];
        round3(us as f64 / 1000.0)
    };
    let statuses: Map<String, Value> = tally
        .statuses
        .iter()
        .map(|(k, v)| (k.clone(), json!(v)))
        .collect();
    let report = json!({
        "mode": match options.target { Target::Http(_) => "http", Target::Exec(_) => "exec" },
        "clients": options.clients,
        "rate": options.rate,
        "requests": requests,
        "errors": tally.errors,
        "seconds": round3(seconds),
        "rps": round3(if seconds > 0.0 { requests as f64 / seconds } else { 0.0 }),
        "p50_ms": pct(50.0),
        "p90_ms": pct(90.0),
        "p99_ms": pct(99.0),
        "max_ms": pct(100.0),
        "statuses": statuses,
    });
    (report, all_failed)
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// One client: a kept-alive connection (HTTP) or nothing (exec).
struct Client {
    target: Target,
    body: Arc<[u8]>,
    expect: Option<u16>,
    conn: Option<BufReader<TcpStream>>,
}

impl Client {
    fn new(target: Target, body: Arc<[u8]>, expect: Option<u16>) -> Self {
        Client {
            target,
            body,
            expect,
            conn: None,
        }
    }

    fn one(&mut self) -> Outcome {
        let status = match self.target.clone() {
            Target::Http(http) => self.http(&http).map(|code| {
                let ok = match self.expect {
                    Some(e) => code == e,
                    None => (200..300).contains(&code),
                };
                (code.to_string(), ok)
            }),
            Target::Exec(words) => self.exec(&words).map(|code| {
                let ok = code == i32::from(self.expect.unwrap_or(0));
                (format!("exit {code}"), ok)
            }),
        };
        match status {
            Ok((s, ok)) => Outcome { status: Ok(s), ok },
            Err(e) => Outcome {
                status: Err(e),
                ok: false,
            },
        }
    }

    /// One HTTP exchange; a kept-alive connection that fails before any
    /// answer byte is retried once on a fresh one (the server may have
    /// closed it while idle).
    fn http(&mut self, http: &Http) -> Result<u16, String> {
        let reused = self.conn.is_some();
        match self.exchange(http) {
            Err((_, false)) if reused => {
                self.conn = None;
                self.exchange(http).map_err(|(e, _)| e)
            }
            other => other.map_err(|(e, _)| e),
        }
    }

    /// Send the request and read the answer. The error's flag says whether
    /// any byte of an answer arrived (then no retry).
    fn exchange(&mut self, http: &Http) -> Result<u16, (String, bool)> {
        if self.conn.is_none() {
            let stream = TcpStream::connect(&http.authority)
                .map_err(|e| (format!("connect to {}: {e}", http.authority), false))?;
            let _ = stream.set_nodelay(true);
            self.conn = Some(BufReader::new(stream));
        }
        let conn = self.conn.as_mut().unwrap();
        let sent = {
            let stream = conn.get_mut();
            let mut request = Vec::with_capacity(http.head.len() + self.body.len());
            request.extend_from_slice(&http.head);
            request.extend_from_slice(&self.body);
            stream.write_all(&request)
        };
        if let Err(e) = sent {
            self.conn = None;
            return Err((format!("send to {}: {e}", http.authority), false));
        }
        match read_response(conn) {
            Ok((code, keep)) => {
                if !keep {
                    self.conn = None;
                }
                Ok(code)
            }
            Err((e, started)) => {
                self.conn = None;
                Err((format!("answer from {}: {e}", http.authority), started))
            }
        }
    }

    /// Spawn the command, feed the body, drain its output, return its exit code.
    fn exec(&mut self, words: &[String]) -> Result<i32, String> {
        let mut child = Command::new(&words[0])
            .args(&words[1..])
            .stdin(if self.body.is_empty() {
                Stdio::null()
            } else {
                Stdio::piped()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("spawn {}: {e}", words[0]))?;
        let writer = child.stdin.take().map(|mut pipe| {
            let body = self.body.clone();
            std::thread::spawn(move || {
                let _ = pipe.write_all(&body);
            })
        });
        let output = child
            .wait_with_output()
            .map_err(|e| format!("wait for {}: {e}", words[0]))?;
        if let Some(w) = writer {
            let _ = w.join();
        }
        output
            .status
            .code()
            .ok_or_else(|| format!("signal: {} was killed by {}", words[0], output.status))
    }
}

/// Read one response: status code and whether the connection stays open.
/// The body is read (Content-Length or chunked) and dropped. The error's
/// flag says whether any byte of the answer had arrived.
fn read_response(conn: &mut BufReader<TcpStream>) -> Result<(u16, bool), (String, bool)> {
    let mut line = String::new();
    match conn.read_line(&mut line) {
        Ok(0) => return Err(("connection closed before an answer".into(), false)),
        Ok(_) => {}
        Err(e) => return Err((e.to_string(), false)),
    }
    let fail = |e: String| (e, true);
    let mut parts = line.split_whitespace();
    let version = parts.next().unwrap_or("");
    let code: u16 = parts
        .next()
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| fail(format!("not an HTTP status line: {:?}", line.trim_end())))?;
    let mut keep = version == "HTTP/1.1";
    let mut length: Option<usize> = None;
    let mut chunked = false;
    loop {
        let mut h = String::new();
        if conn.read_line(&mut h).map_err(|e| fail(e.to_string()))? == 0 {
            return Err(fail("connection closed inside the headers".into()));
        }
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            let v = v.trim();
            match k.trim().to_ascii_lowercase().as_str() {
                "content-length" => length = v.parse().ok(),
                "transfer-encoding" => chunked = v.to_ascii_lowercase().contains("chunked"),
                "connection" => {
                    let v = v.to_ascii_lowercase();
                    if v.contains("close") {
                        keep = false;
                    } else if v.contains("keep-alive") {
                        keep = true;
                    }
                }
                _ => {}
            }
        }
    }
    if chunked {
        loop {
            let mut size = String::new();
            conn.read_line(&mut size).map_err(|e| fail(e.to_string()))?;
            let size = usize::from_str_radix(size.trim().split(';').next().unwrap_or(""), 16)
                .map_err(|_| fail(format!("bad chunk size {:?}", size.trim())))?;
            if size == 0 {
                // Trailers up to the blank line.
                loop {
                    let mut t = String::new();
                    if conn.read_line(&mut t).map_err(|e| fail(e.to_string()))? == 0
                        || t.trim().is_empty()
                    {
                        break;
                    }
                }
                break;
            }
            skip(conn, size + 2).map_err(fail)?;
        }
    } else if let Some(n) = length {
        skip(conn, n).map_err(fail)?;
    } else if !(100..200).contains(&code) && code != 204 && code != 304 {
        // No length: the body runs to the end of the connection.
        let mut sink = Vec::new();
        conn.read_to_end(&mut sink)
            .map_err(|e| fail(e.to_string()))?;
        keep = false;
    }
    Ok((code, keep))
}

fn skip(conn: &mut BufReader<TcpStream>, n: usize) -> Result<(), String> {
    let copied =
        std::io::copy(&mut conn.take(n as u64), &mut std::io::sink()).map_err(|e| e.to_string())?;
    if copied as usize != n {
        return Err(format!(
            "connection closed after {copied} of {n} body bytes"
        ));
    }
    Ok(())
}
