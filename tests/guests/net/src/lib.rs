//! `net`: a step that tries the network with `std::net`, which makes the
//! component import `wasi:sockets/*`. The host links sockets with every use
//! refused, so `lobster check` and the untrusted policy accept the import,
//! and each attempt fails at run time. The step reports each refusal as an
//! item and fails ("connected: …") if any attempt gets through.
//! Positionals: the TCP address to try (default 93.184.216.34:80).
use lobster_guest::{json, Args, Error, Step, StepInfo, Value};
use std::net::{TcpListener, TcpStream, ToSocketAddrs, UdpSocket};

struct Net;

fn attempt<T>(what: &str, r: std::io::Result<T>) -> Result<Value, Error> {
    match r {
        Ok(_) => Err(Error::failed(format!(
            "connected: {what} succeeded, the sandbox leaked the network"
        ))),
        Err(e) => Ok(json!({ "attempt": what, "refused": e.to_string() })),
    }
}

impl Step for Net {
    fn describe() -> StepInfo {
        StepInfo::new("net", "0.1.0", "Try to phone home over TCP, UDP and DNS")
    }

    fn run(args: Args, _items: Vec<Value>) -> Result<Vec<Value>, Error> {
        let addr = args
            .positional()
            .first()
            .cloned()
            .unwrap_or_else(|| "93.184.216.34:80".to_string());
        Ok(vec![
            attempt("tcp connect", TcpStream::connect(&addr))?,
            attempt("tcp listen", TcpListener::bind("127.0.0.1:0"))?,
            attempt(
                "udp send",
                UdpSocket::bind("127.0.0.1:0").and_then(|s| s.send_to(b"hello", &addr)),
            )?,
            attempt("lookup", ("localhost", 80).to_socket_addrs())?,
        ])
    }
}

lobster_guest::export_step!(Net);
