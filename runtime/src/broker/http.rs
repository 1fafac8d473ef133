//! A minimal blocking HTTP/1.1 client for the brokered calls (gateway and
//! model endpoints): one `POST` per connection, bounded by the run's
//! [`Cancel`] (deadline and signals) and by a response-size cap.
//!
//! Why hand-written: the broker only ever POSTs JSON to an operator-chosen
//! endpoint, and the run's cancellation must interrupt a request that is
//! waiting for bytes. A socket read timeout of [`POLL`] lets every blocking
//! read re-check the cancellation flag, which no off-the-shelf blocking client
//! exposes without an async runtime. `https://` is spoken through rustls
//! ([`super::tls`]) over the same socket, so the deadline, cancellation and
//! size caps bound the handshake and every TLS read exactly as plain ones.

use super::tls;
use crate::kernel::Cancel;
use rustls::ClientConnection;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::path::Path;
use std::time::Duration;

/// How often a blocked read or connect wakes to check the cancellation flag.
const POLL: Duration = Duration::from_millis(25);
/// Longest status line or header line accepted.
const MAX_LINE: usize = 16 * 1024;
/// Most header lines accepted.
const MAX_HEADERS: usize = 200;

/// A parsed `http(s)://host[:port]/path` URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Url {
    /// `https:` (TLS).
    pub tls: bool,
    /// Host as written, without brackets (`::1` for `[::1]`), lower case.
    pub host: String,
    /// Port (default 80, or 443 for `https:`).
    pub port: u16,
    /// Path and query, starting with `/`.
    pub path: String,
}

/// Why a URL cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UrlError {
    /// Not `http:`/`https:` at all.
    #[error("unsupported URL scheme")]
    Scheme,
    /// Host or port missing or malformed.
    #[error("invalid URL: {0}")]
    Invalid(String),
}

impl Url {
    /// Parse an absolute URL.
    pub fn parse(text: &str) -> Result<Url, UrlError> {
        let text = text.trim();
        let (scheme, rest) = text
            .split_once("://")
            .ok_or_else(|| UrlError::Invalid(text.to_string()))?;
        let tls = match scheme.to_ascii_lowercase().as_str() {
            "http" => false,
            "https" => true,
            _ => return Err(UrlError::Scheme),
        };
        let (authority, path) = match rest.find(['/', '?', '#']) {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/"),
        };
        // Credentials in the URL are not supported (the token goes in a header).
        let authority = authority.rsplit('@').next().unwrap_or(authority);
        let (host, port) = if let Some(after) = authority.strip_prefix('[') {
            let (h, tail) = after
                .split_once(']')
                .ok_or_else(|| UrlError::Invalid(text.to_string()))?;
            (h.to_string(), tail.strip_prefix(':'))
        } else {
            match authority.rsplit_once(':') {
                Some((h, p)) => (h.to_string(), Some(p)),
                None => (authority.to_string(), None),
            }
        };
        if host.is_empty() {
            return Err(UrlError::Invalid(text.to_string()));
        }
        let port = match port {
            None | Some("") => {
                if tls {
                    443
                } else {
                    80
                }
            }
            Some(p) => p
                .parse::<u16>()
                .map_err(|_| UrlError::Invalid(text.to_string()))?,
        };
        let path = path.split('#').next().unwrap_or("/");
        let path = if path.starts_with('/') {
            path.to_string()
        } else {
            format!("/{path}")
        };
        Ok(Url {
            tls,
            host: host.to_ascii_lowercase(),
            port,
            path,
        })
    }

    /// The same origin with `path` (absolute) instead of this URL's path, as
    /// `new URL(path, base)` resolves an absolute path.
    pub fn with_path(&self, path: &str) -> Url {
        Url {
            path: path.to_string(),
            ..self.clone()
        }
    }

    /// The URL's origin (scheme, host, port): what a credential is bound to;
    /// displayed as `scheme://host:port` (for messages and request digests).
    pub fn origin(&self) -> crate::kernel::credential::Origin {
        use crate::kernel::credential::{Origin, Scheme};
        let scheme = if self.tls {
            Scheme::Https
        } else {
            Scheme::Http
        };
        Origin::new(scheme, &self.host, self.port)
    }

    /// Whether the host is loopback by name: `localhost`, `127.0.0.1`, `::1`
    /// (the reference's rule for sending a token from the environment).
    pub fn is_loopback(&self) -> bool {
        matches!(self.host.as_str(), "localhost" | "127.0.0.1" | "::1")
    }

    fn host_header(&self) -> String {
        let host = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        if self.port == self.default_port() {
            host
        } else {
            format!("{host}:{}", self.port)
        }
    }

    fn default_port(&self) -> u16 {
        if self.tls {
            443
        } else {
            80
        }
    }
}

/// A response: status and body (headers are consumed).
#[derive(Debug, Clone)]
pub struct Response {
    /// HTTP status code.
    pub status: u16,
    /// Reason phrase (`Not Found`).
    pub reason: String,
    /// `Content-Type`, lower case, if sent.
    pub content_type: Option<String>,
    /// The body, de-chunked.
    pub body: Vec<u8>,
}

impl Response {
    /// `200..=299`.
    pub fn ok(&self) -> bool {
        (200..300).contains(&self.status)
    }

    /// The body as text (lossy UTF-8).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// Why a request failed.
#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    /// The run was cancelled (deadline or signal) while the request was open.
    #[error("cancelled")]
    Cancelled,
    /// The body (declared or read) is larger than the cap.
    #[error("HTTP response body exceeded {0} bytes")]
    TooLarge(usize),
    /// Connecting, writing or reading failed.
    #[error("{0}")]
    Io(String),
    /// The TLS handshake or a TLS record failed (the text names the URL and
    /// the fix); nothing past the handshake was sent.
    #[error("{0}")]
    Tls(String),
    /// The server's answer is not HTTP/1.x.
    #[error("malformed HTTP response: {0}")]
    Malformed(String),
}

/// One `POST` with a JSON body.
pub struct Post<'a> {
    /// Where to.
    pub url: &'a Url,
    /// `Authorization: Bearer …` when set.
    pub bearer: Option<&'a str>,
    /// The JSON body.
    pub body: &'a [u8],
    /// Extra `Accept` header (`text/event-stream` for streamed answers).
    pub accept: Option<&'a str>,
    /// The operator's extra CA bundle for `https:` (policy `[gateway] ca_file`).
    pub ca_file: Option<&'a Path>,
}

impl Post<'_> {
    /// Send the request and read the whole response, at most `max_body`
    /// bytes of body. Every blocking step re-checks `cancel` at least every
    /// [`POLL`].
    pub fn send(&self, cancel: &Cancel, max_body: Option<usize>) -> Result<Response, HttpError> {
        self.send_with(&[], cancel, max_body)
    }

    /// [`Post::send`] with `extra` headers (names and values the caller
    /// made: no CR or LF).
    pub fn send_with(
        &self,
        extra: &[(&str, &str)],
        cancel: &Cancel,
        max_body: Option<usize>,
    ) -> Result<Response, HttpError> {
        let stream = connect(self.url, cancel)?;
        let mut head = format!(
            "POST {} HTTP/1.1\r\nHost: {}\r\nUser-Agent: lobster/{}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n",
            self.url.path,
            self.url.host_header(),
            crate::VERSION,
            self.body.len()
        );
        head.push_str(&format!(
            "Accept: {}\r\n",
            self.accept.unwrap_or("application/json")
        ));
        if let Some(token) = self.bearer {
            head.push_str(&format!("Authorization: Bearer {token}\r\n"));
        }
        for (k, v) in extra {
            if !k.contains(['\r', '\n']) && !v.contains(['\r', '\n']) {
                head.push_str(&format!("{k}: {v}\r\n"));
            }
        }
        head.push_str("\r\n");
        stream
            .set_write_timeout(Some(Duration::from_secs(30)))
            .map_err(io)?;
        // Whole messages are written at once; do not let Nagle hold the
        // last segment (or a TLS handshake flight) for a delayed ACK.
        stream.set_nodelay(true).map_err(io)?;
        stream.set_read_timeout(Some(POLL)).map_err(io)?;
        let mut conn = if self.url.tls {
            Conn::Tls {
                tls: Box::new(handshake(self.url, &stream, cancel, self.ca_file)?),
                sock: stream,
            }
        } else {
            Conn::Plain(stream)
        };
        let mut message = head.into_bytes();
        message.extend_from_slice(self.body);
        conn.send(&message, cancel)?;
        let mut reader = BufReader::new(CancelRead {
            conn,
            cancel: cancel.clone(),
        });
        read_response(&mut reader, max_body)
    }
}

/// An open connection: plain, or TLS over the socket.
enum Conn {
    Plain(TcpStream),
    Tls {
        sock: TcpStream,
        tls: Box<ClientConnection>,
    },
}

impl Conn {
    /// Write all of `data` (blocking, bounded by the socket's write timeout).
    fn send(&mut self, data: &[u8], cancel: &Cancel) -> Result<(), HttpError> {
        match self {
            Conn::Plain(sock) => {
                sock.write_all(data).map_err(io)?;
                sock.flush().map_err(io)
            }
            Conn::Tls { sock, tls } => {
                let mut rest = data;
                while !rest.is_empty() {
                    if cancel.is_cancelled() {
                        return Err(HttpError::Cancelled);
                    }
                    let n = tls.writer().write(rest).map_err(io)?;
                    if n == 0 && !tls.wants_write() {
                        return Err(HttpError::Io("TLS connection refused more data".into()));
                    }
                    rest = &rest[n..];
                    while tls.wants_write() {
                        tls.write_tls(sock).map_err(io)?;
                    }
                }
                Ok(())
            }
        }
    }
}

/// Run the TLS handshake on `sock` (whose reads time out every [`POLL`]),
/// re-checking `cancel` between reads. Certificate and host name are always
/// verified; a failure sends the alert and nothing else.
fn handshake(
    url: &Url,
    sock: &TcpStream,
    cancel: &Cancel,
    ca_file: Option<&Path>,
) -> Result<ClientConnection, HttpError> {
    let origin = url.origin().to_string();
    let config = tls::client_config(ca_file).map_err(|e| HttpError::Tls(e.to_string()))?;
    let name = tls::server_name(&url.host).ok_or_else(|| {
        HttpError::Tls(format!(
            "{origin}: {:?} is not a valid TLS server name",
            url.host
        ))
    })?;
    let mut conn = ClientConnection::new(config, name)
        .map_err(|e| HttpError::Tls(tls::explain(&origin, &e)))?;
    let mut sock = sock;
    while conn.is_handshaking() {
        if cancel.is_cancelled() {
            return Err(HttpError::Cancelled);
        }
        while conn.wants_write() {
            conn.write_tls(&mut sock).map_err(io)?;
        }
        if !conn.is_handshaking() {
            break;
        }
        match conn.read_tls(&mut sock) {
            Ok(0) => {
                return Err(HttpError::Tls(format!(
                    "TLS with {origin} failed: the server closed the connection during the handshake (is it plain http on this port? then use an http:// URL)"
                )))
            }
            Ok(_) => {
                if let Err(e) = conn.process_new_packets() {
                    // Tell the server why (the alert), then give up.
                    let _ = conn.write_tls(&mut sock);
                    return Err(HttpError::Tls(tls::explain(&origin, &e)));
                }
            }
            Err(e) if is_timeout(&e) => {}
            Err(e) => return Err(io(e)),
        }
    }
    while conn.wants_write() {
        conn.write_tls(&mut sock).map_err(io)?;
    }
    Ok(conn)
}

fn is_timeout(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
    )
}

fn io(e: std::io::Error) -> HttpError {
    HttpError::Io(e.to_string())
}

fn connect(url: &Url, cancel: &Cancel) -> Result<TcpStream, HttpError> {
    if cancel.is_cancelled() {
        return Err(HttpError::Cancelled);
    }
    let addrs: Vec<_> = (url.host.as_str(), url.port)
        .to_socket_addrs()
        .map_err(|e| HttpError::Io(format!("cannot resolve {}: {e}", url.host)))?
        .collect();
    let mut last = None;
    for addr in addrs {
        // Connect in short slices so a cancelled run does not wait for a
        // black-holed address; give up on this address after ~10 s.
        for _ in 0..400 {
            if cancel.is_cancelled() {
                return Err(HttpError::Cancelled);
            }
            match TcpStream::connect_timeout(&addr, POLL) {
                Ok(s) => return Ok(s),
                Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {
                    last = Some(e);
                }
                Err(e) => {
                    last = Some(e);
                    break;
                }
            }
        }
    }
    Err(HttpError::Io(match last {
        Some(e) => format!("cannot connect to {}:{}: {e}", url.host, url.port),
        None => format!("cannot resolve {}", url.host),
    }))
}

/// A connection reader that turns read timeouts into cancellation checks.
struct CancelRead {
    conn: Conn,
    cancel: Cancel,
}

impl CancelRead {
    fn cancelled(&self) -> std::io::Result<()> {
        if self.cancel.is_cancelled() {
            // Not ErrorKind::Interrupted: std's read_until and read_exact
            // retry on it, spinning forever on a cancelled read.
            return Err(std::io::Error::other(CANCELLED));
        }
        Ok(())
    }
}

impl Read for CancelRead {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        loop {
            self.cancelled()?;
            match &mut self.conn {
                Conn::Plain(stream) => match stream.read(buf) {
                    Err(e) if is_timeout(&e) => {}
                    other => return other,
                },
                Conn::Tls { sock, tls } => {
                    // Plaintext already decrypted, or a clean close_notify (0).
                    match tls.reader().read(buf) {
                        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                        other => return other,
                    }
                    match tls.read_tls(sock) {
                        Err(e) if is_timeout(&e) => continue,
                        Err(e) => return Err(e),
                        Ok(_) => {}
                    }
                    tls.process_new_packets()
                        .map_err(|e| std::io::Error::other(format!("TLS: {e}")))?;
                    while tls.wants_write() {
                        tls.write_tls(sock)?;
                    }
                }
            }
        }
    }
}

const CANCELLED: &str = "lobster: request cancelled";

fn map_read(e: std::io::Error) -> HttpError {
    if e.kind() == std::io::ErrorKind::Other && e.to_string() == CANCELLED {
        HttpError::Cancelled
    } else {
        io(e)
    }
}

fn read_line(r: &mut impl BufRead) -> Result<String, HttpError> {
    let mut line = Vec::new();
    let n = r
        .take(MAX_LINE as u64)
        .read_until(b'\n', &mut line)
        .map_err(map_read)?;
    if n == 0 {
        return Err(HttpError::Malformed("connection closed early".into()));
    }
    if !line.ends_with(b"\n") {
        return Err(HttpError::Malformed("header line too long".into()));
    }
    while line.last().is_some_and(|b| *b == b'\n' || *b == b'\r') {
        line.pop();
    }
    Ok(String::from_utf8_lossy(&line).into_owned())
}

fn read_response(r: &mut impl BufRead, max_body: Option<usize>) -> Result<Response, HttpError> {
    let status_line = read_line(r)?;
    let mut parts = status_line.splitn(3, ' ');
    let version = parts.next().unwrap_or("");
    if !version.starts_with("HTTP/1.") {
        return Err(HttpError::Malformed(format!("status line {status_line:?}")));
    }
    let status: u16 = parts
        .next()
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| HttpError::Malformed(format!("status line {status_line:?}")))?;
    let reason = parts.next().unwrap_or("").to_string();
    let mut length = None;
    let mut chunked = false;
    let mut content_type = None;
    for _ in 0..MAX_HEADERS {
        let line = read_line(r)?;
        if line.is_empty() {
            return read_body(r, status, reason, content_type, length, chunked, max_body);
        }
        let Some((name, value)) = line.split_once(':') else {
            return Err(HttpError::Malformed(format!("header {line:?}")));
        };
        let value = value.trim();
        match name.trim().to_ascii_lowercase().as_str() {
            "content-length" => {
                length = Some(
                    value
                        .parse::<usize>()
                        .map_err(|_| HttpError::Malformed(format!("content-length {value:?}")))?,
                )
            }
            "transfer-encoding" => chunked = value.to_ascii_lowercase().contains("chunked"),
            "content-type" => content_type = Some(value.to_ascii_lowercase()),
            _ => {}
        }
    }
    Err(HttpError::Malformed("too many headers".into()))
}

fn read_body(
    r: &mut impl BufRead,
    status: u16,
    reason: String,
    content_type: Option<String>,
    length: Option<usize>,
    chunked: bool,
    max_body: Option<usize>,
) -> Result<Response, HttpError> {
    let cap = max_body.unwrap_or(usize::MAX);
    let mut body = Vec::new();
    if chunked {
        loop {
            let size_line = read_line(r)?;
            let size_text = size_line.split(';').next().unwrap_or("").trim();
            let size = usize::from_str_radix(size_text, 16)
                .map_err(|_| HttpError::Malformed(format!("chunk size {size_text:?}")))?;
            if size == 0 {
                break;
            }
            if body.len().saturating_add(size) > cap {
                return Err(HttpError::TooLarge(cap));
            }
            let start = body.len();
            body.resize(start + size, 0);
            r.read_exact(&mut body[start..]).map_err(map_read)?;
            read_line(r)?;
        }
    } else if let Some(n) = length {
        if n > cap {
            return Err(HttpError::TooLarge(cap));
        }
        body.resize(n, 0);
        r.read_exact(&mut body).map_err(map_read)?;
    } else {
        let mut limited = r.take((cap as u64).saturating_add(1));
        limited.read_to_end(&mut body).map_err(map_read)?;
        if body.len() > cap {
            return Err(HttpError::TooLarge(cap));
        }
    }
    Ok(Response {
        status,
        reason,
        content_type,
        body,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    #[test]
    fn urls_parse_like_the_reference_needs() {
        let u = Url::parse("http://127.0.0.1:18789").unwrap();
        assert_eq!(
            (u.host.as_str(), u.port, u.path.as_str()),
            ("127.0.0.1", 18789, "/")
        );
        assert!(u.is_loopback());
        let u = Url::parse("http://[::1]:9/x?y").unwrap();
        assert_eq!(
            (u.host.as_str(), u.port, u.path.as_str()),
            ("::1", 9, "/x?y")
        );
        assert!(u.is_loopback());
        assert_eq!(u.host_header(), "[::1]:9");
        let u = Url::parse("HTTP://LocalHost").unwrap();
        assert!(u.is_loopback() && u.port == 80);
        assert!(!Url::parse("http://example.com").unwrap().is_loopback());
        assert!(!Url::parse("http://127.0.0.2").unwrap().is_loopback());
        let u = Url::parse("https://API.example.com/v1").unwrap();
        assert!(u.tls && u.port == 443 && !u.is_loopback());
        assert_eq!(
            (u.host_header(), u.origin().to_string()),
            (
                "api.example.com".into(),
                "https://api.example.com:443".into()
            )
        );
        assert_eq!(Url::parse("https://h:80").unwrap().host_header(), "h:80");
        assert!(!Url::parse("http://h").unwrap().tls);
        assert_eq!(Url::parse("ftp://x").unwrap_err(), UrlError::Scheme);
        assert!(matches!(Url::parse("nope"), Err(UrlError::Invalid(_))));
        assert!(matches!(
            Url::parse("http://h:99999"),
            Err(UrlError::Invalid(_))
        ));
    }

    #[test]
    fn bodies_by_length_chunks_and_close_with_caps() {
        let raw =
            "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Type: Application/JSON\r\n\r\nhello";
        let r = read_response(&mut Cursor::new(raw), None).unwrap();
        assert_eq!((r.status, r.text().as_str()), (200, "hello"));
        assert_eq!(r.content_type.as_deref(), Some("application/json"));
        let raw = "HTTP/1.1 404 Not Found\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2;x\r\nde\r\n0\r\n\r\n";
        let r = read_response(&mut Cursor::new(raw), None).unwrap();
        assert_eq!(
            (r.status, r.reason.as_str(), r.text().as_str()),
            (404, "Not Found", "abcde")
        );
        let raw = "HTTP/1.0 200 OK\r\n\r\nuntil close";
        assert_eq!(
            read_response(&mut Cursor::new(raw), None).unwrap().text(),
            "until close"
        );
        for raw in [
            "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
            "HTTP/1.1 200 OK\r\n\r\nhello",
        ] {
            let e = read_response(&mut Cursor::new(raw), Some(4)).unwrap_err();
            assert_eq!(e.to_string(), "HTTP response body exceeded 4 bytes");
            assert!(read_response(&mut Cursor::new(raw), Some(5)).is_ok());
        }
        let e = read_response(&mut Cursor::new("SSH-2.0\r\n\r\n"), None).unwrap_err();
        assert!(e.to_string().starts_with("malformed HTTP response"), "{e}");
    }
}
