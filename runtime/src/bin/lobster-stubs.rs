//! `lobster-stubs`: loopback stand-ins for the two paid/remote services the
//! broker talks to, used by the test suite and by `examples/demo.sh`.
//!
//! ```text
//! lobster-stubs gateway [--port N] [--token T] [--log FILE] [--tls --ca-out FILE [--tls-name NAME]]
//! lobster-stubs model   [--port N] [--key K]   [--log FILE] [--tls --ca-out FILE [--tls-name NAME]]
//! ```
//!
//! Each prints its base URL (`http://127.0.0.1:PORT`, or `https://…` with
//! `--tls`) on the first line of stdout, then serves until killed. `--log
//! FILE` appends one JSON line per request (`{"path", "auth", "body"}`), so
//! a test can count what was sent.
//!
//! `--tls` serves HTTPS with a certificate made at start: a fresh CA (its
//! PEM written to `--ca-out FILE`) signs a server certificate for
//! `localhost`, `127.0.0.1` and `::1` (or only for `--tls-name NAME`, to
//! test host-name checks). Requests whose handshake fails are never logged.
//!
//! **gateway** follows OpenClaw's documented `POST /tools/invoke` contract
//! (integration notes §1): bearer auth (401 `unauthorized`), bad JSON (400
//! `invalid_request_error`), unknown tool (404 `not_found`), bad args (400
//! `tool_error`), GET (405), and tools: `message` (needs `to` and
//! `message`), `sessions_list`, `llm-task` (args `{prompt, input, schema}`,
//! result `{content, details: {json, provider, model}}`), plus test tools
//! `echo` (the request body back), `slow` (sleeps `args.ms`), `big`
//! (`args.bytes` of data), `notjson`, `okfalse`, `raw` (`args.value` without
//! an envelope), `fail` (500) and `badargs` (400).
//!
//! **model** is an OpenAI-compatible `POST /v1/chat/completions` (plain or
//! `stream: true` server-sent events, `usage` counted) and a generic LLM
//! adapter `POST /invoke` (`{ok, result: {output: {data}}}`). The answer is
//! JSON made to fit the requested schema from the input (without a
//! `response_format` schema, as OpenClaw's `llm-task` asks: `{intent,
//! draft}`); model names select
//! misbehaviour: `stub-malformed` (not JSON), `stub-violate-once` (a
//! schema-violating answer unless the request carries the validation
//! feedback of a retry, then a valid one), `stub-fail` (500), `stub-slow` (answers after 3 s).

use serde_json::{json, Map, Value};
use std::cell::RefCell;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// One accepted connection: plain TCP or TLS over it. Read and written
/// through `&Conn` (like `&TcpStream`), so handlers share it freely.
struct Conn(RefCell<Stream>);

enum Stream {
    Plain(TcpStream),
    Tls(Box<rustls::StreamOwned<rustls::ServerConnection, TcpStream>>),
}

impl Read for &Conn {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match &mut *self.0.borrow_mut() {
            Stream::Plain(s) => s.read(buf),
            Stream::Tls(s) => s.read(buf),
        }
    }
}

impl Write for &Conn {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match &mut *self.0.borrow_mut() {
            Stream::Plain(s) => s.write(buf),
            Stream::Tls(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match &mut *self.0.borrow_mut() {
            Stream::Plain(s) => s.flush(),
            Stream::Tls(s) => s.flush(),
        }
    }
}

impl Conn {
    /// End a TLS session cleanly (close_notify), so clients reading to the
    /// end see a proper close.
    fn finish(&self) {
        if let Stream::Tls(s) = &mut *self.0.borrow_mut() {
            s.conn.send_close_notify();
            let _ = s.flush();
        }
    }
}

/// A server TLS configuration with a fresh CA (PEM written to `ca_out`)
/// and a leaf certificate for `names`.
fn tls_config(ca_out: &str, names: Vec<String>) -> Arc<rustls::ServerConfig> {
    use rcgen::{
        BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair,
        KeyUsagePurpose,
    };
    let ca_key = KeyPair::generate().expect("CA key");
    let mut ca = CertificateParams::new(Vec::<String>::new()).expect("CA params");
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    ca.distinguished_name
        .push(DnType::CommonName, "lobster-stubs test CA");
    let issuer = CertifiedIssuer::self_signed(ca, ca_key).expect("CA certificate");
    let tmp = format!("{ca_out}.tmp");
    std::fs::write(&tmp, issuer.pem())
        .and_then(|_| std::fs::rename(&tmp, ca_out))
        .unwrap_or_else(|e| panic!("cannot write --ca-out {ca_out}: {e}"));
    let leaf_key = KeyPair::generate().expect("server key");
    let mut leaf = CertificateParams::new(names).expect("server certificate names");
    leaf.distinguished_name
        .push(DnType::CommonName, "lobster-stubs");
    let cert = leaf
        .signed_by(&leaf_key, &issuer)
        .expect("server certificate");
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(leaf_key.serialize_der().into());
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("protocol versions")
        .with_no_client_auth()
        .with_single_cert(vec![cert.der().clone(), issuer.der().clone()], key)
        .expect("server certificate and key");
    Arc::new(config)
}

struct Server {
    kind: String,
    secret: Option<String>,
    log: Option<Mutex<std::fs::File>>,
    counter: AtomicU64,
}

fn main() {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let kind = argv.first().cloned().unwrap_or_default();
    if kind != "gateway" && kind != "model" {
        eprintln!(
            "usage: lobster-stubs gateway|model [--port N] [--token T | --key K] [--log FILE] [--tls --ca-out FILE [--tls-name NAME]]"
        );
        std::process::exit(2);
    }
    let flag = |name: &str| {
        argv.iter()
            .position(|a| a == name)
            .and_then(|i| argv.get(i + 1).cloned())
    };
    let port: u16 = flag("--port").and_then(|p| p.parse().ok()).unwrap_or(0);
    let log = flag("--log").map(|p| {
        Mutex::new(
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&p)
                .unwrap_or_else(|e| panic!("cannot open log {p}: {e}")),
        )
    });
    let tls = argv.iter().any(|a| a == "--tls").then(|| {
        let ca_out = flag("--ca-out").unwrap_or_else(|| {
            eprintln!("lobster-stubs: --tls needs --ca-out FILE (where the test CA's PEM goes)");
            std::process::exit(2);
        });
        let names = match flag("--tls-name") {
            Some(n) => vec![n],
            None => vec!["localhost".into(), "127.0.0.1".into(), "::1".into()],
        };
        tls_config(&ca_out, names)
    });
    let listener = TcpListener::bind(("127.0.0.1", port)).expect("bind 127.0.0.1");
    let addr = listener.local_addr().expect("local addr");
    let scheme = if tls.is_some() { "https" } else { "http" };
    println!("{scheme}://127.0.0.1:{}", addr.port());
    std::io::stdout().flush().ok();
    let server = Arc::new(Server {
        secret: flag(if kind == "gateway" {
            "--token"
        } else {
            "--key"
        }),
        kind,
        log,
        counter: AtomicU64::new(0),
    });
    for sock in listener.incoming().flatten() {
        let server = server.clone();
        let tls = tls.clone();
        std::thread::spawn(move || {
            let stream = match tls {
                Some(config) => match rustls::ServerConnection::new(config) {
                    Ok(c) => Stream::Tls(Box::new(rustls::StreamOwned::new(c, sock))),
                    Err(_) => return,
                },
                None => Stream::Plain(sock),
            };
            let conn = Conn(RefCell::new(stream));
            if server.handle(&conn).is_ok() {
                conn.finish();
            }
        });
    }
}

struct Request {
    method: String,
    path: String,
    auth: Option<String>,
    body: Vec<u8>,
}

fn read_request(conn: &Conn) -> std::io::Result<Request> {
    let mut r = BufReader::new(conn);
    let mut line = String::new();
    r.read_line(&mut line)?;
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or("").to_string();
    let path = parts.next().unwrap_or("").to_string();
    let mut length = 0usize;
    let mut auth = None;
    loop {
        let mut h = String::new();
        if r.read_line(&mut h)? == 0 || h.trim().is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            match k.trim().to_ascii_lowercase().as_str() {
                "content-length" => length = v.trim().parse().unwrap_or(0),
                "authorization" => auth = Some(v.trim().to_string()),
                _ => {}
            }
        }
    }
    let mut body = vec![0; length];
    r.read_exact(&mut body)?;
    Ok(Request {
        method,
        path,
        auth,
        body,
    })
}

fn respond(mut conn: &Conn, status: u16, body: &str) -> std::io::Result<()> {
    let reason = match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        404 => "Not Found",
        405 => "Method Not Allowed",
        _ => "Internal Server Error",
    };
    write!(
        conn,
        "HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )?;
    conn.flush()
}

fn json_respond(conn: &Conn, status: u16, v: &Value) -> std::io::Result<()> {
    respond(conn, status, &v.to_string())
}

impl Server {
    fn handle(&self, conn: &Conn) -> std::io::Result<()> {
        let req = read_request(conn)?;
        let parsed: Option<Value> = serde_json::from_slice(&req.body).ok();
        if let Some(log) = &self.log {
            let body = parsed
                .clone()
                .unwrap_or_else(|| Value::String(String::from_utf8_lossy(&req.body).into()));
            let line = json!({"path": req.path, "auth": req.auth, "body": body});
            // One write per line: `writeln!` of a JSON value writes it in
            // pieces, and a test reading the log while a request is being
            // logged saw half a line.
            let line = format!("{line}\n");
            let mut f = log.lock().unwrap();
            f.write_all(line.as_bytes())?;
            f.flush()?;
        }
        if let Some(secret) = &self.secret {
            if req.auth.as_deref() != Some(&format!("Bearer {secret}")) {
                let body = if self.kind == "gateway" {
                    json!({"error": {"message": "Unauthorized", "type": "unauthorized"}})
                } else {
                    json!({"error": {"message": "Incorrect API key provided", "type": "invalid_request_error", "code": "invalid_api_key"}})
                };
                return json_respond(conn, 401, &body);
            }
        }
        match (self.kind.as_str(), req.path.as_str()) {
            ("gateway", "/tools/invoke") if req.method != "POST" => json_respond(
                conn,
                405,
                &json!({"error": {"message": "Method Not Allowed", "type": "method_not_allowed"}}),
            ),
            ("gateway", "/tools/invoke") => match parsed {
                None => json_respond(
                    conn,
                    400,
                    &json!({"error": {"message": "Invalid JSON body", "type": "invalid_request_error"}}),
                ),
                Some(body) => self.tool(conn, body),
            },
            ("model", "/v1/chat/completions") => match parsed {
                None => json_respond(
                    conn,
                    400,
                    &json!({"error": {"message": "We could not parse the JSON body of your request.", "type": "invalid_request_error"}}),
                ),
                Some(body) => self.chat(conn, body),
            },
            ("model", "/invoke") => match parsed {
                None => json_respond(
                    conn,
                    400,
                    &json!({"ok": false, "error": {"message": "invalid JSON"}}),
                ),
                Some(body) => self.adapter(conn, body),
            },
            _ => respond(conn, 404, "Not Found"),
        }
    }

    fn tool(&self, conn: &Conn, body: Value) -> std::io::Result<()> {
        let tool = body.get("tool").and_then(Value::as_str).unwrap_or("");
        let mut args = body.get("args").cloned().unwrap_or(json!({}));
        if let (Some(m), Some(a)) = (args.as_object_mut(), body.get("action")) {
            m.insert("action".into(), a.clone());
        }
        let ok = |result: Value| json!({"ok": true, "result": result});
        let tool_error = |status: u16, message: &str| {
            json_respond(
                conn,
                status,
                &json!({"ok": false, "error": {"type": "tool_error", "message": message}}),
            )
        };
        match tool {
            "message" => {
                let to = args.get("to").and_then(Value::as_str);
                let (Some(to), Some(message)) = (to, args.get("message")) else {
                    return tool_error(400, "message send requires to and message");
                };
                let n = self.counter.fetch_add(1, Ordering::SeqCst) + 1;
                json_respond(
                    conn,
                    200,
                    &ok(json!({
                        "content": [{"type": "text", "text": format!("sent to {to}")}],
                        "details": {"ok": true, "messageId": format!("stub-{n}"), "to": to, "message": message}
                    })),
                )
            }
            "sessions_list" => json_respond(
                conn,
                200,
                &ok(
                    json!({"content": [{"type": "text", "text": "[]"}], "details": {"sessions": []}}),
                ),
            ),
            "llm-task" => {
                let (Some(prompt), Some(schema)) = (args.get("prompt"), args.get("schema")) else {
                    return tool_error(400, "llm-task requires prompt and schema");
                };
                let input = args.get("input").cloned().unwrap_or(Value::Null);
                let answer = fake_for(schema, &input, "");
                let _ = prompt;
                json_respond(
                    conn,
                    200,
                    &ok(json!({
                        "content": [{"type": "text", "text": answer.to_string()}],
                        "details": {"json": answer, "provider": "stub", "model": "stub-model"}
                    })),
                )
            }
            "echo" => json_respond(conn, 200, &ok(body.clone())),
            "slow" => {
                let ms = args.get("ms").and_then(Value::as_u64).unwrap_or(2000);
                std::thread::sleep(Duration::from_millis(ms));
                json_respond(conn, 200, &ok(body.clone()))
            }
            "big" => {
                let n = args.get("bytes").and_then(Value::as_u64).unwrap_or(1000) as usize;
                json_respond(conn, 200, &ok(json!({"data": "x".repeat(n)})))
            }
            "notjson" => respond(conn, 200, "this is not json"),
            "okfalse" => json_respond(
                conn,
                200,
                &json!({"ok": false, "error": {"message": "stub tool refused"}}),
            ),
            "raw" => json_respond(conn, 200, args.get("value").unwrap_or(&Value::Null)),
            "fail" => tool_error(500, "tool execution failed"),
            "badargs" => tool_error(400, "invalid arguments"),
            other => json_respond(
                conn,
                404,
                &json!({"ok": false, "error": {"type": "not_found", "message": format!("Tool not available: {other}")}}),
            ),
        }
    }

    fn chat(&self, conn: &Conn, body: Value) -> std::io::Result<()> {
        let model = body
            .get("model")
            .and_then(Value::as_str)
            .unwrap_or("stub-model")
            .to_string();
        let user = body
            .get("messages")
            .and_then(Value::as_array)
            .and_then(|m| {
                m.iter()
                    .rev()
                    .find(|m| m.get("role") == Some(&json!("user")))
            })
            .and_then(|m| m.get("content"))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        // OpenClaw's llm-task sends no schema (it validates the answer
        // itself) and puts the input after `INPUT_JSON:`; answer its seed
        // shape `{intent, draft}` then.
        let schema = body
            .pointer("/response_format/json_schema/schema")
            .cloned()
            .unwrap_or(json!({"type": "object", "properties": {
                "intent": {"type": "string"}, "draft": {"type": "string"}}}));
        let input = user
            .split_once("\nInput:\n")
            .or_else(|| user.split_once("\nINPUT_JSON:\n"))
            .and_then(|(_, i)| serde_json::from_str(i.trim()).ok())
            .unwrap_or(Value::Null);
        let content = match model.as_str() {
            "stub-fail" => {
                return json_respond(
                    conn,
                    500,
                    &json!({"error": {"message": "The server had an error while processing your request.", "type": "server_error"}}),
                )
            }
            "stub-malformed" => "{\"not\": json".to_string(),
            // A first attempt carries no validation feedback; a retry does.
            "stub-violate-once" if !user.contains("did not match the schema") => {
                "{\"unexpected\": true}".to_string()
            }
            _ => {
                if model == "stub-slow" {
                    std::thread::sleep(Duration::from_secs(3));
                }
                fake_for(&schema, &input, "").to_string()
            }
        };
        let usage = json!({
            "prompt_tokens": user.len() / 4 + 1,
            "completion_tokens": content.len() / 4 + 1,
            "total_tokens": user.len() / 4 + content.len() / 4 + 2
        });
        if body.get("stream") == Some(&json!(true)) {
            let mut conn = conn;
            write!(conn, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nConnection: close\r\n\r\n")?;
            let chars: Vec<char> = content.chars().collect();
            for (i, part) in chars.chunks(chars.len().div_ceil(3).max(1)).enumerate() {
                let mut delta = json!({"content": part.iter().collect::<String>()});
                if i == 0 {
                    delta["role"] = json!("assistant");
                }
                let chunk = json!({"id": "chatcmpl-stub", "object": "chat.completion.chunk", "model": model,
                    "choices": [{"index": 0, "delta": delta, "finish_reason": null}]});
                write!(conn, "data: {chunk}\n\n")?;
                conn.flush()?;
                std::thread::sleep(Duration::from_millis(5));
            }
            let last = json!({"id": "chatcmpl-stub", "object": "chat.completion.chunk", "model": model,
                "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}], "usage": usage});
            write!(conn, "data: {last}\n\ndata: [DONE]\n\n")?;
            return conn.flush();
        }
        json_respond(
            conn,
            200,
            &json!({
                "id": "chatcmpl-stub", "object": "chat.completion", "model": model,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
                "usage": usage
            }),
        )
    }

    fn adapter(&self, conn: &Conn, body: Value) -> std::io::Result<()> {
        let model = body
            .get("model")
            .and_then(Value::as_str)
            .unwrap_or("stub-model")
            .to_string();
        let schema = body
            .get("outputSchema")
            .cloned()
            .unwrap_or(json!({"type": "object"}));
        let input = body
            .get("artifacts")
            .and_then(Value::as_array)
            .and_then(|a| a.first())
            .cloned()
            .unwrap_or(Value::Null);
        let first_try = body.get("retryContext").is_none();
        let data = match model.as_str() {
            "stub-fail" => {
                return json_respond(
                    conn,
                    200,
                    &json!({"ok": false, "error": {"message": "adapter failed"}}),
                )
            }
            "stub-violate-once" if first_try => json!({"unexpected": true}),
            _ => fake_for(&schema, &input, ""),
        };
        let n = self.counter.fetch_add(1, Ordering::SeqCst) + 1;
        json_respond(
            conn,
            200,
            &json!({"ok": true, "result": {
                "runId": format!("stub-run-{n}"), "model": model, "status": "completed",
                "output": {"format": "json", "data": data, "text": data.to_string()},
                "usage": {"inputTokens": 10, "outputTokens": 5, "totalTokens": 15}
            }}),
        )
    }
}

/// A deterministic value that fits `schema`, drawn from `input`: a string
/// property takes the input's field of the same name, else names the input's
/// subject; an enum picks by a hash of the input.
fn fake_for(schema: &Value, input: &Value, name: &str) -> Value {
    if let Some(c) = schema.get("const") {
        return c.clone();
    }
    if let Some(options) = schema
        .get("enum")
        .and_then(Value::as_array)
        .filter(|o| !o.is_empty())
    {
        let text = input.to_string();
        let h = text
            .bytes()
            .fold(2166136261u32, |h, b| (h ^ b as u32).wrapping_mul(16777619));
        return options[h as usize % options.len()].clone();
    }
    let ty = schema.get("type").and_then(Value::as_str).unwrap_or(
        if schema.get("properties").is_some() {
            "object"
        } else {
            "string"
        },
    );
    match ty {
        "object" => {
            let mut m = Map::new();
            if let Some(props) = schema.get("properties").and_then(Value::as_object) {
                for (k, s) in props {
                    m.insert(k.clone(), fake_for(s, input, k));
                }
            }
            Value::Object(m)
        }
        "array" => json!([fake_for(
            schema.get("items").unwrap_or(&json!({})),
            input,
            name
        )]),
        "integer" | "number" => json!(1),
        "boolean" => json!(true),
        "null" => Value::Null,
        _ => {
            if let Some(s) = input.get(name).and_then(Value::as_str) {
                return json!(s);
            }
            let subject = input
                .get("subject")
                .and_then(Value::as_str)
                .map(str::to_string)
                .or_else(|| input.as_str().map(str::to_string))
                .unwrap_or_default();
            match name {
                "" => json!(subject),
                "draft" | "reply" => json!(format!(
                    "Thanks for your note about \"{subject}\". We'll follow up shortly."
                )),
                other => json!(format!("{other} for {subject}")),
            }
        }
    }
}
